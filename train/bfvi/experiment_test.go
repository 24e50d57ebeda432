package bfvi

import "testing"

func TestKLvsDegree(t *testing.T) {
	b := PaperBernoulli()
	cfg := TrainConfig{Steps: 300, Samples: 20, LR: 0.03, LREnd: 0.003, Rho: 0.9, Eps: 1e-7, Seed: 4}
	rows, err := KLvsDegree(b, b.LogPosterior, []int{1, 5}, 2, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[2].Method != "Gaussian-VI" || rows[1].Degree != 5 {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows {
		if len(r.KL) != 2 || !(r.Mean > 0) || !(r.SE >= 0) {
			t.Errorf("row %+v", r)
		}
	}
	if _, err := KLvsDegree(b, b.LogPosterior, []int{0}, 1, cfg); err == nil {
		t.Error("degree 0 accepted")
	}
	if _, err := KLvsDegree(EightSchools{}, b.LogPosterior, []int{1}, 1, cfg); err == nil {
		t.Error("10-D model accepted")
	}
}
