package bnnconfig_test

import (
	"fmt"

	"github.com/edgebnn/edgebnn/convert/bnnconfig"
)

func Example() {
	cfg, err := bnnconfig.Parse([]byte(`{
		"inference": {"Linear": {"inference": "inducing", "inducing_rows": 10, "inducing_cols": 32}},
		"q_inducing": "ensemble", "ensemble_size": 5, "max_lamda": 0.1, "sqrt_width_scaling": true
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	layers, err := cfg.Resolve([]bnnconfig.Module{{Name: "6", Class: "Flatten"}, {Name: "7", Class: "Linear"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range layers {
		fmt.Println(l.Name, l.Class, l.Kind)
	}
	s := layers[1].Inducing
	fmt.Println(s.Rows(10), s.Cols(577), s.QInducing, s.EnsembleSize, *s.MaxLamda, s.InitLamda)
	fmt.Printf("%.4f\n", s.EffectivePriorSD(577))
	// Output:
	// 6 Flatten none
	// 7 Linear inducing
	// 10 32 ensemble 5 0.1 0.0001
	// 0.0416
}
