package bnn

import (
	"fmt"

	"github.com/edgebnn/edgebnn/runtime"
)

// UseGlobalInducing turns every inducing layer of spec into a global-U layer (q_inducing
// global) of a global inducing posterior with a rows × cols inducing matrix G (paper 003
// appendix H, docs/GLOBALU.md): the layers' whitened U are stacked along their rows into
// U_{1:L}, which is augmented with G exactly as a layer's W is augmented with its U, with σ = 1.
// Every inducing layer must have whitened_u, the same inducing_cols and the same q_inducing
// family; the global posterior's q(G) takes that family, and its max_lamda, max_sd_u,
// ensemble_size and training settings (inits) are the first inducing layer's. inits gains an
// entry for runtime.GlobalUName; the layers' init_sd_u moves to it.
func UseGlobalInducing(spec *runtime.Spec, inits map[string]Init, rows, cols int) error {
	var (
		first  *runtime.LayerSpec
		family string
		err    error
	)
	runtime.WalkLayers(spec.Layers, func(l *runtime.LayerSpec) {
		p := l.Posterior
		if err != nil || p == nil || p.Kind != runtime.KindInducing {
			return
		}
		if first == nil {
			first, family = l, p.QInducing
		} else if p.QInducing != family {
			err = fmt.Errorf("bnn: global inducing: layer %q has q_inducing %q but layer %q has %q; q(G) takes one family",
				l.Name, p.QInducing, first.Name, family)
		}
	})
	if err != nil {
		return err
	}
	if first == nil {
		return fmt.Errorf("bnn: global inducing: the network has no inducing layer")
	}
	g := *first.Posterior
	g.InducingRows, g.InducingCols = rows, cols
	name := first.Name
	if err := spec.UseGlobalU(g); err != nil {
		return fmt.Errorf("bnn: %w", err)
	}
	in, ok := inits[name]
	if !ok {
		in = DefaultInit(spec.GlobalU)
	}
	inits[runtime.GlobalUName] = in
	runtime.WalkLayers(spec.Layers, func(l *runtime.LayerSpec) {
		if l.Posterior != nil && l.Posterior.QInducing == runtime.QGlobal {
			if li, ok := inits[l.Name]; ok {
				li.InitSDU = 0
				inits[l.Name] = li
			}
		}
	})
	return nil
}
