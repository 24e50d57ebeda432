package train

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/testutil"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/data"
)

// faConfig is a fast run of a factor-analysis posterior on the toy 1-D regression data.
func faConfig(t *testing.T, posterior string) Config {
	c := toyConfig(t, posterior, "")
	c.LatentDim = 2
	c.FAInitLogVar = -8
	c.FAWarmup = 4
	c.FAStartEpoch = 2
	return c
}

// faTensors reads fa.mean, fa.factors and fa.psi of a model file.
func faTensors(t *testing.T, path string) map[string][]float32 {
	t.Helper()
	f, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]float32{}
	for _, name := range []string{"fa.mean", "fa.factors", "fa.psi"} {
		v, _, err := fileTensors{f}.Tensor(name)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = v
	}
	return out
}

// TestFAPosteriorsTrain trains each FA kind briefly (regression and classification), and checks
// that the objective falls, that the checkpoint and the deployable model load in the runtime as
// FA models, and that the converter takes the checkpoint (f16 included).
func TestFAPosteriorsTrain(t *testing.T) {
	for _, kind := range []string{"vifa", "fa_em", "fa_sga", "swag"} {
		for _, task := range []string{"regression", "classification"} {
			t.Run(kind+"/"+task, func(t *testing.T) {
				c := faConfig(t, kind)
				if task == "classification" {
					c.Data, c.Task, c.Arch, c.BatchSize, c.TestFraction = "csv:"+writeCSV(t), "classification", "mlp:2-8-3", 10, 0.2
				}
				tr, err := New(c)
				if err != nil {
					t.Fatal(err)
				}
				var first, last float64
				if err := tr.Run(context.Background(), Hooks{Epoch: func(m EpochMetrics) {
					if m.Epoch == 1 {
						first = m.NLL
					}
					last = m.NLL
				}}); err != nil {
					t.Fatal(err)
				}
				if !(last < first) {
					t.Errorf("NLL went from %.4g to %.4g", first, last)
				}
				if h := tr.History[len(tr.History)-1]; h.Test == nil {
					t.Fatal("no evaluation after the last epoch")
				}
				for _, path := range []string{c.Out, tr.ModelPath()} {
					m, err := runtime.Load(path)
					if err != nil {
						t.Fatal(err)
					}
					spec := m.Spec()
					if spec.FA == nil || spec.FA.Rank != 2 || !m.Stochastic() {
						t.Errorf("%s: spec fa %+v, stochastic %v", path, spec.FA, m.Stochastic())
					}
					m.Close()
				}
				ts := faTensors(t, c.Out)
				for i, p := range ts["fa.psi"] {
					// Online EM floors ψ at 10⁻⁸ of the iterates' variance, 0 for a parameter
					// that never moved (a dead unit's weights).
					if !(p > 0 || (kind == "fa_em" && p == 0)) || math.IsInf(float64(p), 0) {
						t.Fatalf("psi[%d] = %g", i, p)
					}
				}
				f, err := format.Open(tr.ModelPath())
				if err != nil {
					t.Fatal(err)
				}
				for _, name := range f.Tensors() {
					if strings.HasPrefix(name, OptimPrefix) {
						t.Errorf("model file holds training tensor %q", name)
					}
				}
				if _, err := f.Blob(faStateBlob); err == nil {
					t.Errorf("model file holds the FA learner state")
				}
				f.Close()
				convertLoad(t, convert.Options{Checkpoint: c.Out, Out: filepath.Join(t.TempDir(), "c.ebnn"), DType: "f16"})
			})
		}
	}
}

// TestFAParameterOrder checks the flattened parameter vector against the runtime: before any
// iterate is collected the fa_em model is the network itself (c = θ, F = 0, ψ = 0), so the
// runtime must predict exactly what the deterministic network predicts, and its posterior mean
// must be the layers' weights (PyTorch layout, row-major) each followed by its bias.
func TestFAParameterOrder(t *testing.T) {
	cnn := filepath.Join(t.TempDir(), "cnn.txt")
	if err := os.WriteFile(cnn, []byte("Sequential(\n  (0): Conv2d(1, 3, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))\n"+
		"  (1): ReLU()\n  (2): Conv2d(3, 2, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), bias=False)\n"+
		"  (3): Flatten(start_dim=1, end_dim=-1)\n  (4): Linear(in_features=98, out_features=10, bias=True)\n)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, data, arch string
		tensors          []string
	}{
		{"mlp", "csv:" + writeCSV(t), "mlp:2-5-4-3", []string{"1.weight", "1.bias", "3.weight", "3.bias", "5.weight", "5.bias"}},
		{"cnn", "fmnist", cnn, []string{"0.weight", "0.bias", "2.weight", "4.weight", "4.bias"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.data == "fmnist" {
				if _, err := os.Stat(filepath.Join(data.DefaultFashionMNISTDir, "t10k-images-idx3-ubyte")); err != nil {
					if _, err2 := os.Stat(filepath.Join(data.DefaultFashionMNISTDir, "t10k-images-idx3-ubyte.gz")); err2 != nil {
						t.Skipf("no Fashion-MNIST in %s", data.DefaultFashionMNISTDir)
					}
				}
			}
			c := faConfig(t, "fa_em")
			c.Data, c.Task, c.Arch, c.BatchSize, c.TrainLimit, c.TestLimit = tc.data, "classification", tc.arch, 10, 50, 20
			tr, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			fam, err := tr.Model()
			if err != nil {
				t.Fatal(err)
			}
			det, err := tr.Nets[0].Model()
			if err != nil {
				t.Fatal(err)
			}
			var want []float64
			byName := map[string][]float32{}
			for _, p := range tr.Nets[0].Params() {
				byName[p.Name] = p.Value
			}
			for _, n := range tc.tensors {
				v, ok := byName[n]
				if !ok {
					t.Fatalf("no tensor %q", n)
				}
				for _, x := range v {
					want = append(want, float64(x))
				}
			}
			post, err := fam.Posterior(2000)
			if err != nil {
				t.Fatal(err)
			}
			if post.Dim != len(want) {
				t.Fatalf("posterior dim %d, want %d", post.Dim, len(want))
			}
			for i, w := range want {
				if post.Mean[i] != w {
					t.Fatalf("mean[%d] = %v, want %v", i, post.Mean[i], w)
				}
			}
			x := tr.Test.X[:tr.Test.Dim*tr.Test.N]
			opt := runtime.Options{Samples: 2, Seed: 1, MaxBatch: tr.Test.N}
			pa, err := fam.NewPredictor(opt)
			if err != nil {
				t.Fatal(err)
			}
			pb, err := det.NewPredictor(opt)
			if err != nil {
				t.Fatal(err)
			}
			ra, rb := make([]runtime.Prediction, tr.Test.N), make([]runtime.Prediction, tr.Test.N)
			if err := pa.PredictBatch(x, ra); err != nil {
				t.Fatal(err)
			}
			if err := pb.PredictBatch(x, rb); err != nil {
				t.Fatal(err)
			}
			for n := range rb {
				if len(rb[n].Probs) == 0 || len(rb[n].Probs) != len(ra[n].Probs) {
					t.Fatalf("example %d: fa model %d probabilities, network %d", n, len(ra[n].Probs), len(rb[n].Probs))
				}
				for i := range rb[n].Probs {
					if !(math.Abs(float64(ra[n].Probs[i]-rb[n].Probs[i])) <= 1e-6) {
						t.Fatalf("example %d prob[%d]: fa model %v, network %v", n, i, ra[n].Probs[i], rb[n].Probs[i])
					}
				}
			}
		})
	}
}

// TestFAResume checks for every FA kind that training resumed from the checkpoint after 2 epochs
// ends with the posterior of the uninterrupted 4-epoch run.
func TestFAResume(t *testing.T) {
	for _, kind := range []string{"vifa", "fa_em", "fa_sga", "swag"} {
		t.Run(kind, func(t *testing.T) {
			c := faConfig(t, kind)
			c.Epochs, c.FAStartEpoch = 4, 1
			c.FAAverageEpochs = 2 * btoi(kind == "vifa")
			trainRun(t, c)
			c2 := c
			c2.Out = filepath.Join(t.TempDir(), "half.ebnn")
			c2.Epochs, c2.FAAverageEpochs = 2, 0 // the same schedule: averaging starts after epoch 2
			trainRun(t, c2)
			res, err := Resume(c2.Out, func(cfg *Config) error {
				cfg.Epochs, cfg.FAAverageEpochs, cfg.Out = 4, c.FAAverageEpochs, c.Out+".res.ebnn"
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := res.Run(context.Background(), Hooks{}); err != nil {
				t.Fatal(err)
			}
			a, b := faTensors(t, c.Out), faTensors(t, c.Out+".res.ebnn")
			for name, va := range a {
				if len(va) == 0 || len(va) != len(b[name]) {
					t.Fatalf("%s: uninterrupted %d values, resumed %d", name, len(va), len(b[name]))
				}
				for i := range va {
					if d := math.Abs(float64(va[i] - b[name][i])); !(d <= 1e-5*(1+math.Abs(float64(va[i])))) {
						t.Fatalf("%s[%d]: uninterrupted %v, resumed %v", name, i, va[i], b[name][i])
					}
				}
			}
			// The checkpoint of one kind does not resume as another.
			other := map[string]string{"vifa": "fa_em", "fa_em": "fa_sga", "fa_sga": "swag", "swag": "vifa"}[kind]
			_, err = Resume(c2.Out, func(cfg *Config) error { cfg.Posterior = other; cfg.FAAverageEpochs = 0; return nil })
			if err == nil || !strings.Contains(err.Error(), kind) {
				t.Fatalf("resuming a %s checkpoint as %s: %v", kind, other, err)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestFAConfigErrors checks the validation of the FA keys.
func TestFAConfigErrors(t *testing.T) {
	cases := []struct {
		name string
		edit func(c *Config)
		want string
	}{
		{"latent dim", func(c *Config) { c.LatentDim = 0 }, "latent_dim"},
		{"inference", func(c *Config) { c.Inference.JSON = `{"inference": "ffg"}` }, "inference"},
		{"prior", func(c *Config) { c.PriorPrecision = 0 }, "prior_precision"},
		{"mc", func(c *Config) { c.MCSamples = 0 }, "mc_samples"},
		{"lr_factors", func(c *Config) { c.LRFactors = -1 }, "lr_factors"},
		{"weight decay", func(c *Config) { c.WeightDecay = 1e-4 }, "weight_decay"},
		{"decay epochs", func(c *Config) { c.FADecayEpochs = c.Epochs + 1 }, "fa_decay_epochs"},
		{"annealing", func(c *Config) { c.AnnealingEpochs = 2 }, "annealing_epochs"},
		{"fa_every", func(c *Config) { c.Posterior = "fa_em"; c.FAEvery = 0 }, "fa_every"},
		{"fa_start", func(c *Config) { c.Posterior = "fa_em"; c.FAStartEpoch = c.Epochs }, "fa_start_epoch"},
		{"fa_lr", func(c *Config) { c.Posterior = "fa_sga"; c.FALR = 0 }, "fa_lr"},
		{"rank > dim", func(c *Config) { c.LatentDim = 1000 }, "latent_dim 1000 exceeds"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := faConfig(t, "vifa")
			tc.edit(&c)
			_, err := New(c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// TestDecodeFAStateBufferLengths: a buffer length that does not fit the blob is an error, also
// one whose byte count Len·8 wraps around 2^64 (it once passed the check and panicked in make).
func TestDecodeFAStateBufferLengths(t *testing.T) {
	blob := func(n int64) []byte {
		head := []byte(fmt.Sprintf(`{"kind":"vifa","buffers":[{"name":"c","len":%d}]}`, n))
		b := binary.LittleEndian.AppendUint32(nil, uint32(len(head)))
		return append(append(b, head...), make([]byte, 16)...)
	}
	for _, n := range []int64{3, -1, 1 << 61, 1<<62 + 1} {
		// (On 32-bit ARM the JSON decoder already refuses lengths beyond int32.)
		if _, _, _, err := decodeFAState(blob(n)); err == nil || !strings.Contains(err.Error(), `blob "train.fa"`) ||
			!(strings.Contains(err.Error(), "exceeds the blob") || strings.Contains(err.Error(), "cannot unmarshal")) {
			t.Errorf("len %d: %v, want an error that it exceeds the blob", n, err)
		}
	}
	if _, s, _, err := decodeFAState(blob(2)); err != nil || len(s.Floats["c"]) != 2 {
		t.Errorf("len 2 of 16 bytes: %v, %v", s.Floats, err)
	}
}

// TestVIFAInitMeanAndClipKeys: fa_init_mean zeros starts c at 0 (Algorithm 1), the default at the
// network's initialisation; fa_clip_per_parameter reaches the learner (one epoch with a tiny clip
// moves c differently clipped jointly and per parameter).
func TestVIFAInitMeanAndClipKeys(t *testing.T) {
	start := func(initMean string) []float64 {
		c := faConfig(t, "vifa")
		c.FAInitMean = initMean
		tr, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		return tr.fa.vifa.Posterior().Mean
	}
	nonzero := func(v []float64) int {
		n := 0
		for _, x := range v {
			if x != 0 {
				n++
			}
		}
		return n
	}
	if n := nonzero(start("zeros")); n != 0 {
		t.Errorf("fa_init_mean zeros: %d nonzero entries of c", n)
	}
	for _, m := range []string{"", "network"} {
		if c := start(m); nonzero(c) == 0 {
			t.Errorf("fa_init_mean %q: c is all zeros, want the network's initialisation", m)
		}
	}
	trained := func(perParameter bool) []float64 {
		c := faConfig(t, "vifa")
		c.Epochs, c.Clip, c.FAClipPerParameter = 1, 1e-3, perParameter
		c.FAAverageEpochs = 0
		return trainRun(t, c).fa.vifa.Posterior().Mean
	}
	joint, per := trained(false), trained(true)
	same := true
	for i := range joint {
		same = same && joint[i] == per[i]
	}
	if same {
		t.Error("fa_clip_per_parameter made no difference to c after an epoch clipped at 1e-3")
	}
}

// TestVIFADegenerateUpdateHint: an update that leaves vifa's covariance degenerate (lr 1e6 sends
// ψ to 0) fails the next KL's Cholesky factorisation; the error says which learning rates to
// lower, where it said only "pivot 0 is +Inf: matrix is not positive definite".
func TestVIFADegenerateUpdateHint(t *testing.T) {
	c := toyConfig(t, "vifa", "")
	c.Arch, c.LatentDim, c.Epochs, c.LR = "mlp:1-4-1", 1, 1, 1e6
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	err = tr.Run(context.Background(), Hooks{})
	testutil.ErrorContains(t, err, "not positive definite", "degenerate", "lower the learning rates lr 1e+06")
}
