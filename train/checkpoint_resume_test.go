package train

import (
	"encoding/json"
	"errors"
	"math"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/testutil"
)

// editState returns a doctor edit of the train blob: edit changes the decoded JSON object.
func editState(t *testing.T, edit func(m map[string]any)) func([]byte) []byte {
	return func(b []byte) []byte {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
}

// rawState returns a doctor edit that sets the train blob's top-level key to the JSON text raw
// (numbers float64 cannot hold exactly, lists too long to build as values).
func rawState(t *testing.T, key, raw string) func([]byte) []byte {
	return func(b []byte) []byte {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		m[key] = json.RawMessage(raw)
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
}

// historyEntry edits entry i of the state's history.
func historyEntry(t *testing.T, i int, edit func(e map[string]any)) func([]byte) []byte {
	return editState(t, func(m map[string]any) {
		h, ok := m["history"].([]any)
		if !ok || len(h) <= i {
			t.Fatalf("the checkpoint's history has no entry %d: %v", i, m["history"])
		}
		edit(h[i].(map[string]any))
	})
}

// firstTensor returns the first tensor of the checkpoint at path with the prefix and suffix.
func firstTensor(t *testing.T, path, prefix, suffix string) string {
	t.Helper()
	f, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, n := range f.Tensors() {
		if strings.HasPrefix(n, prefix) && strings.HasSuffix(n, suffix) {
			return n
		}
	}
	t.Fatalf("%s has no tensor %s…%s: %v", path, prefix, suffix, f.Tensors())
	return ""
}

// setValue returns a doctor edit setting a tensor's value 0 to v.
func setValue(v float32) func([]float32, []int) ([]float32, []int) {
	return func(d []float32, s []int) ([]float32, []int) { d[0] = v; return d, s }
}

// TestResumeRefusesOutOfDomainState: a checkpoint's training state and optimizer state are
// inputs: finite values outside their domain — a history longer than the epochs trained, metrics
// whose range overflows (the plots then never returned), step counters near 2^63 (the counters
// and Adam's bias correction overflowed), a negative second moment, a prior standard deviation
// of 0 or −1 (training computed NaN) — are refused by Resume (and the state's by ReadState)
// with an error naming the checkpoint and the field, before anything trains.
func TestResumeRefusesOutOfDomainState(t *testing.T) {
	c := toyConfig(t, "deterministic", "")
	c.Epochs, c.EvalEvery = 2, 1
	good := trainRun(t, c).Config.Out
	fc := toyConfig(t, "ffg_w", `{"inference": "ffg", "init_sd": 1e-3}`)
	fc.Epochs = 1
	ffg := trainRun(t, fc).Config.Out

	// 1 000 000 entries "{}": 3 MB of JSON, 100 MB as EpochMetrics.
	bomb := "[" + strings.Repeat("{},", 1_000_000) + "{}]"
	const big = 1.7e308
	for _, tc := range []struct {
		name, path string
		want       []string
		state      bool // ReadState refuses it too
	}{
		{"history longer than the epochs", doctor(t, good, TrainBlob, nil, rawState(t, "history", `[{"epoch":1},{"epoch":2},{"epoch":3}]`)),
			[]string{`"history" has more than 2 entries`}, true},
		{"history bomb", doctor(t, good, TrainBlob, nil, rawState(t, "history", bomb)), []string{`"history"`, "entry 0"}, true},
		{"history epochs out of order", doctor(t, good, TrainBlob, nil, rawState(t, "history", `[{"epoch":2},{"epoch":1}]`)),
			[]string{`"history"`, "entry 1 is of epoch 1"}, true},
		{"history loss 1.7e308", doctor(t, good, TrainBlob, nil, historyEntry(t, 0, func(e map[string]any) { e["loss"] = big })),
			[]string{`"history[0].loss" = 1.7e+308`}, true},
		{"history nll -1.7e308", doctor(t, good, TrainBlob, nil, historyEntry(t, 1, func(e map[string]any) { e["nll"] = -big })),
			[]string{`"history[1].nll"`}, true},
		{"history test rmse 1e301", doctor(t, good, TrainBlob, nil, historyEntry(t, 1, func(e map[string]any) {
			e["test"].(map[string]any)["regression"].(map[string]any)["rmse"] = 1e301
		})), []string{`"history[1].test.regression.rmse"`}, true},
		{"history test list", doctor(t, good, TrainBlob, nil, historyEntry(t, 0, func(e map[string]any) {
			bins := make([]any, 1000)
			for i := range bins {
				bins[i] = map[string]any{}
			}
			e["test"] = map[string]any{"reliability": bins}
		})), []string{`"history[0].test.reliability" has 1000 entries`}, true},
		{"history step beyond the state's", doctor(t, good, TrainBlob, nil, historyEntry(t, 0, func(e map[string]any) { e["step"] = 1e15 })),
			[]string{`"history"`, "step 1000000000000000"}, true},
		{"laplace report list", doctor(t, good, TrainBlob, nil, rawState(t, "laplace", `{"grid":[`+strings.Repeat(`{},`, 99)+`{}]}`)),
			[]string{`"laplace.grid" has 100 entries`}, true},
		{"hmc report 1e301", doctor(t, good, TrainBlob, nil, rawState(t, "hmc", `{"step_sizes":[1e301]}`)),
			[]string{`"hmc.step_sizes[0]" = 1e+301`}, true},
		{"step 2^63-1", doctor(t, good, TrainBlob, nil, rawState(t, "step", "9223372036854775807")),
			[]string{`"step" = 9223372036854775807 out of range`}, true},
		{"optim_steps 2^63-1", doctor(t, good, TrainBlob, nil, rawState(t, "optim_steps", "9223372036854775807")),
			[]string{`"optim_steps" = 9223372036854775807 out of range`}, true},
		{"optim_steps above step", doctor(t, good, TrainBlob, nil, editState(t, func(m map[string]any) { m["optim_steps"] = m["step"].(float64) + 1 })),
			[]string{`"optim_steps"`, "out of range"}, true},
		{"batch -1", doctor(t, good, TrainBlob, nil, rawState(t, "batch", "-1")), []string{`"batch" = -1 out of range`}, true},
		{"batch above step", doctor(t, good, TrainBlob, nil, editState(t, func(m map[string]any) {
			m["batch"], m["partial"] = m["step"].(float64)+1, map[string]any{}
		})), []string{`"batch"`, "out of range"}, true},
		{"batch without partial", doctor(t, good, TrainBlob, nil, rawState(t, "batch", "2")), []string{`"partial" is missing with field "batch" = 2`}, true},
		{"partial without batch", doctor(t, good, TrainBlob, nil, rawState(t, "partial", `{"loss":1}`)), []string{`"partial" is given with field "batch" = 0`}, true},
		{"partial loss 1e301", doctor(t, good, TrainBlob, nil, editState(t, func(m map[string]any) {
			m["batch"], m["partial"] = 2, map[string]any{"loss": 1e301}
		})), []string{`"partial": "loss" = 1e+301`}, true},
		// 4 minibatches an epoch: a position past the epoch's end is refused when resuming.
		{"batch past the epoch", doctor(t, good, TrainBlob, nil, editState(t, func(m map[string]any) {
			m["batch"], m["partial"] = 5, map[string]any{}
		})), []string{`"batch" = 5, but an epoch has 4 steps`}, false},
		// On 32-bit ARM the JSON decoder refuses it first (an int field), naming field and number.
		{"epoch 2^62", doctor(t, good, TrainBlob, nil, rawState(t, "epoch", "4611686018427387904")),
			[]string{"epoch", "4611686018427387904"}, true},
		{"train_seconds 1e308", doctor(t, good, TrainBlob, nil, rawState(t, "train_seconds", "1e308")),
			[]string{`"train_seconds"`}, true},
		{"negative second moment", doctor(t, good, firstTensor(t, good, OptimPrefix+"exp_avg_sq/", ""), setValue(-1), nil),
			[]string{"exp_avg_sq/", "value 0 is -1", "second moment"}, false},
		{"prior sd 0", doctor(t, ffg, firstTensor(t, ffg, "", "prior_weight_sd"), setValue(0), nil),
			[]string{"prior_weight_sd", "entry 0 is 0"}, false},
		{"prior sd -1", doctor(t, ffg, firstTensor(t, ffg, "", "prior_weight_sd"), setValue(-1), nil),
			[]string{"prior_weight_sd", "entry 0 is -1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(what string, err error) {
				t.Helper()
				if err == nil || !strings.Contains(err.Error(), tc.path) {
					t.Fatalf("%s = %v, want an error naming %s", what, err, tc.path)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Fatalf("%s = %v, want %q in it", what, err, w)
					}
				}
			}
			_, err := Resume(tc.path, func(c *Config) error { c.Epochs = 3; return nil })
			check("Resume", err)
			if _, err := ReadState(tc.path); tc.state {
				check("ReadState", err)
			} else if err != nil {
				t.Fatalf("ReadState = %v; the state itself is good", err)
			}
		})
	}

	// The history is refused before it is decoded: not 100 MB for 3 MB of "{}".
	path := doctor(t, good, TrainBlob, nil, rawState(t, "history", bomb))
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	if _, err := ReadState(path); err == nil {
		t.Fatal("history bomb accepted")
	}
	goruntime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
		t.Errorf("ReadState of a 3 MB history allocated %d MB", alloc>>20)
	}

	// The genuine checkpoint resumes, and its step count goes on from where it stopped.
	tr, err := Resume(good, func(c *Config) error { c.Epochs = 3; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.History) != 2 || tr.History[1].Epoch != 2 {
		t.Fatalf("resumed history %+v, want epochs 1 and 2", tr.History)
	}
}

// faDoctorState returns a doctor edit of the train.fa blob: edit changes the decoded state.
func faDoctorState(t *testing.T, edit func(s *faStateHeader, floats map[string][]float64)) func([]byte) []byte {
	return func(b []byte) []byte {
		kind, s, avgN, err := decodeFAState(b)
		if err != nil {
			t.Fatal(err)
		}
		h := faStateHeader{Kind: kind, Ints: s.Ints, AvgN: avgN}
		edit(&h, s.Floats)
		s.Ints = h.Ints
		out, err := encodeFAState(h.Kind, s, h.AvgN)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
}

// TestFAResumeRefusesBadState: a factor-analysis checkpoint's learner state, network tensors
// (optim/fa_net/*) and model tensors (fa.*) are checked at resume: a NaN network tensor, a
// negative Adam second moment, a negative, NaN-averaged or too large tail-average count, a log
// variance whose variance is +Inf, and model tensors that are not the learner state's posterior
// (eval --psis diagnosed the state and evaluated the tensors) are errors naming the checkpoint
// and the tensor or field.
func TestFAResumeRefusesBadState(t *testing.T) {
	ckpt := map[string]string{}
	for _, kind := range []string{"vifa", "fa_em", "swag"} {
		c := faConfig(t, kind)
		c.Epochs, c.FAStartEpoch, c.FAWarmup = 2, 0, 2
		if kind == "vifa" {
			c.FAAverageEpochs = 1
		}
		ckpt[kind] = trainRun(t, c).Config.Out
		if _, err := Resume(ckpt[kind], func(c *Config) error { c.Epochs = 3; return nil }); err != nil {
			t.Fatalf("%s: the genuine checkpoint: %v", kind, err)
		}
	}
	vifa := func(edit func(h *faStateHeader, f map[string][]float64)) string {
		return doctor(t, ckpt["vifa"], faStateBlob, nil, faDoctorState(t, edit))
	}
	nan := float32(math.NaN())
	for _, tc := range []struct {
		name, path string
		want       []string
		mismatch   bool
	}{
		{"fa_em NaN network tensor", doctor(t, ckpt["fa_em"], firstTensor(t, ckpt["fa_em"], faNetPrefix, "weight"), setValue(nan), nil),
			[]string{`"` + faNetPrefix, "value 0 is NaN"}, false},
		{"fa_em fa.mean NaN", doctor(t, ckpt["fa_em"], "fa.mean", setValue(nan), nil), []string{`"fa.mean": value 0 is NaN`}, false},
		{"fa_em fa.mean altered", doctor(t, ckpt["fa_em"], "fa.mean", setValue(5), nil), []string{`"fa.mean", value 0 is 5`}, true},
		{"swag fa.factors altered", doctor(t, ckpt["swag"], "fa.factors", setValue(5), nil), []string{`"fa.factors", value 0 is 5`}, true},
		{"vifa fa.mean altered", doctor(t, ckpt["vifa"], "fa.mean", setValue(5), nil), []string{`"fa.mean", value 0 is 5`}, true},
		{"vifa fa.psi altered", doctor(t, ckpt["vifa"], "fa.psi", setValue(5), nil), []string{`"fa.psi", value 0 is 5`}, true},
		{"vifa negative second moment", vifa(func(_ *faStateHeader, f map[string][]float64) { f["adam_v_c"][0] = -1 }),
			[]string{`"adam_v_c": entry 0 is -1`}, false},
		{"vifa first moment beside its second", vifa(func(_ *faStateHeader, f map[string][]float64) { f["adam_m_c"][0], f["adam_v_c"][0] = 1e30, 0 }),
			[]string{`"adam_m_c" and "adam_v_c": entry 0 is 1e+30 beside 0`}, false},
		{"vifa avg_n -2", vifa(func(h *faStateHeader, _ map[string][]float64) { h.AvgN = -2 }), []string{`"avg_n" = -2 out of range`}, false},
		{"vifa avg_n 2^63-1", vifa(func(h *faStateHeader, _ map[string][]float64) { h.AvgN = math.MaxInt64 }),
			[]string{`"avg_n" = 9223372036854775807 out of range`}, false},
		{"vifa avg_mean NaN", vifa(func(_ *faStateHeader, f map[string][]float64) { f["avg_mean"][0] = math.NaN() }),
			[]string{`"avg_mean": entry 0 is NaN`}, false},
		{"vifa log variance 1e300", vifa(func(_ *faStateHeader, f map[string][]float64) { f["gamma"][0] = 1e300 }),
			[]string{`"gamma": entry 0 is 1e+300`}, false},
		{"vifa averaged log variance 1e3", vifa(func(_ *faStateHeader, f map[string][]float64) { f["avg_log_psi"][0] = 1e3 }),
			[]string{`"avg_log_psi": entry 0 is 1000`}, false},
		{"vifa averages altered", vifa(func(_ *faStateHeader, f map[string][]float64) { f["avg_mean"][0] += 1 }),
			[]string{`"fa.mean", value 0`}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Resume(tc.path, func(c *Config) error { c.Epochs = 3; return nil })
			if err == nil || !strings.Contains(err.Error(), tc.path) {
				t.Fatalf("Resume = %v, want an error naming %s", err, tc.path)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("Resume = %v, want %q in it", err, w)
				}
			}
			if errors.Is(err, ErrPosteriorMismatch) != tc.mismatch {
				t.Fatalf("Resume = %v: wraps ErrPosteriorMismatch %v, want %v", err, !tc.mismatch, tc.mismatch)
			}
		})
	}
}

// TestVIFAAccumulateRestarts: a tail average without a count (nAvg ≤ 0) restarts from the current
// posterior instead of dividing by zero.
func TestVIFAAccumulateRestarts(t *testing.T) {
	c := faConfig(t, "vifa")
	c.Epochs = 1
	tr := trainRun(t, c)
	r := tr.fa
	for _, n := range []int64{0, -2} {
		r.avg = r.vifa.Posterior()
		for i := range r.avg.Mean {
			r.avg.Mean[i] = 7
		}
		r.nAvg = n
		r.accumulate()
		want := r.vifa.Posterior()
		if r.nAvg != 1 {
			t.Fatalf("nAvg %d: after accumulate %d, want 1", n, r.nAvg)
		}
		for i, v := range r.avg.Mean {
			if math.IsNaN(v) || v != want.Mean[i] {
				t.Fatalf("nAvg %d: average mean[%d] = %v, want the posterior's %v", n, i, v, want.Mean[i])
			}
		}
	}
}

// TestResumeRefusesBadMomentum: SGD momentum buffers are optimizer state like Adam's moments: a
// buffer of the wrong length, NaN, ±Inf or beyond ±optim.MaxMomentum is refused by Resume with
// an error naming the checkpoint and the parameter, before anything trains. A buffer of 3e38 (a
// finite float32) used to be accepted, and the resumed run moved a bias to −9.3e36 without an
// error, writing a checkpoint that could not be resumed.
func TestResumeRefusesBadMomentum(t *testing.T) {
	c := toyConfig(t, "deterministic", "")
	c.Epochs, c.Optimizer, c.Momentum = 1, "sgd", 0.9
	good := trainRun(t, c).Config.Out
	name := firstTensor(t, good, OptimPrefix+"momentum_buffer/", "")
	param := strings.TrimPrefix(name, OptimPrefix+"momentum_buffer/")
	resize := func(n int) func([]float32, []int) ([]float32, []int) {
		return func(d []float32, s []int) ([]float32, []int) {
			out := make([]float32, len(d)+n)
			copy(out, d)
			return out, []int{len(out)}
		}
	}
	for _, tc := range []struct {
		name string
		edit func([]float32, []int) ([]float32, []int)
		want []string
	}{
		{"one value short", resize(-1), []string{"values, parameter has"}},
		{"one value more", resize(1), []string{"values, parameter has"}},
		{"NaN", setValue(float32(math.NaN())), []string{"value 0 is NaN"}},
		{"+Inf", setValue(float32(math.Inf(1))), []string{"value 0 is +Inf"}},
		{"-Inf", setValue(float32(math.Inf(-1))), []string{"value 0 is -Inf"}},
		{"3e38", setValue(3e38), []string{"value 0 is 3e+38, outside ±1e+15", "momentum buffer", "parameter " + strconv.Quote(param)}},
		{"-1e16", setValue(-1e16), []string{"outside ±1e+15", "parameter " + strconv.Quote(param)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := doctor(t, good, name, tc.edit, nil)
			_, err := Resume(path, func(c *Config) error { c.Epochs = 2; return nil })
			if err == nil {
				t.Fatal("resumed")
			}
			t.Log(err)
			testutil.ErrorContains(t, err, append(tc.want, path, "momentum_buffer/"+param)...)
		})
	}
	// Within the bound, the checkpoint resumes.
	if _, err := Resume(doctor(t, good, name, setValue(1e15), nil), func(c *Config) error { c.Epochs = 2; return nil }); err != nil {
		t.Errorf("a momentum value of 1e15: %v", err)
	}
}
