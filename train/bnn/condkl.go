package bnn

import (
	"errors"
	"fmt"
)

// ConditionalKLWeight is one inducing layer's weight β_l of its conditional KL term
// R(λ_l) = KL[q(W_l|U_l) ‖ p(W_l|U_l)] in the objective.
type ConditionalKLWeight struct {
	// Layer is the layer's name.
	Layer string
	// DIn is the layer's d_in: the column count of its weight matrix W (in_features, or
	// C_in·k_h·k_w for a Conv2d layer, plus one for the bias column).
	DIn int
	// Beta is min(1, N/DIn).
	Beta float64
}

// UseFunctionSpaceKL switches the net's objective to paper 003's function-space-weighted bound
// (appendix G, eq. 45): every inducing layer's conditional KL R(λ_l) is multiplied by
// β_l = min(1, n/d_in^l), with n the number of training points and d_in^l the column count of the
// layer's weight matrix (MATH.md §1: the bias is its last column, a conv weight flattens to
// C_in·k_h·k_w columns). Appendix G derives N/d_in as the factor by which the KL of the
// push-forward q(F|X,U) = q(W|U)X differs from R(λ); β_l = 1 whenever n ≥ d_in^l, which is the
// weight-space ELBO (eq. 9, bayesianize's). Every q(U) family has the term: diagonal (FFG-U),
// full (FCG-U), matrix, ensemble (Ensemble-U: R is its whole KL) and the layers of a global
// inducing posterior (q_inducing global). The global posterior's own R (of U_{1:L} given G)
// keeps β = 1: U_{1:L} does not multiply the data, so the push-forward argument does not apply.
// It returns the layers' weights in network order; it is an error when n < 1 or the net has no
// inducing layer (its other posteriors have no R term).
func (n *Net[T]) UseFunctionSpaceKL(nTrain int) ([]ConditionalKLWeight, error) {
	if nTrain < 1 {
		return nil, fmt.Errorf("bnn: function-space KL: %d training points", nTrain)
	}
	var out []ConditionalKLWeight
	for _, l := range leaves(n.layers) {
		il, ok := l.(*inducing[T])
		if !ok {
			continue
		}
		il.beta = min(1, float64(nTrain)/float64(il.dIn))
		out = append(out, ConditionalKLWeight{Layer: il.name(), DIn: il.dIn, Beta: il.beta})
	}
	if len(out) == 0 {
		return nil, errors.New("bnn: function-space KL: the network has no inducing layer " +
			"(only inducing layers' KL has the conditional term R(λ) = KL[q(W|U) ‖ p(W|U)] to weight)")
	}
	return out, nil
}
