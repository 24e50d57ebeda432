package serve

import (
	"strconv"

	"github.com/edgebnn/edgebnn/runtime"
)

// encodePredictions appends {"predictions": […]} for preds of load l to b. Every number is
// finite (PredictBatch reported any that is not).
func encodePredictions(b []byte, l *loaded, preds []runtime.Prediction) []byte {
	b = append(b, `{"predictions":[`...)
	reg := l.model.Task() == runtime.Regression
	for i := range preds {
		pr := &preds[i]
		if i > 0 {
			b = append(b, ',')
		}
		if reg {
			b = appendFloats(append(b, `{"mean":`...), pr.Mean)
			b = appendFloats(append(b, `,"var":`...), pr.Var)
			b = appendFloats(append(b, `,"epistemic_var":`...), pr.EpistemicVar)
		} else {
			b = appendFloats(append(b, `{"probs":`...), pr.Probs)
			b = strconv.AppendInt(append(b, `,"class":`...), int64(pr.Class), 10)
			if pr.Class < len(l.classNames) {
				b = append(append(b, `,"class_name":`...), l.classNames[pr.Class]...)
			}
			b = strconv.AppendFloat(append(b, `,"confidence":`...), float64(pr.Confidence), 'g', -1, 32)
			b = strconv.AppendFloat(append(b, `,"entropy":`...), pr.Entropy, 'g', -1, 64)
			b = strconv.AppendFloat(append(b, `,"expected_entropy":`...), pr.ExpectedEntropy, 'g', -1, 64)
			b = strconv.AppendFloat(append(b, `,"mutual_info":`...), pr.MutualInfo, 'g', -1, 64)
		}
		b = append(b, `,"decision":"`...)
		b = append(b, pr.Decision.String()...)
		b = append(b, `","reason":"`...)
		b = append(b, pr.Decision.Reason.String()...)
		b = strconv.AppendInt(append(b, `","samples":`...), int64(pr.Samples), 10)
		b = append(b, '}')
	}
	return append(b, "]}\n"...)
}

func appendFloats(b []byte, v []float32) []byte {
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, float64(x), 'g', -1, 32)
	}
	return append(b, ']')
}
