//go:build !device

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/internal/clip"
	"github.com/edgebnn/edgebnn/internal/outfile"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train"
	"github.com/edgebnn/edgebnn/train/data"
	"github.com/edgebnn/edgebnn/train/eval"
	"github.com/edgebnn/edgebnn/train/plot"
)

const trainUsage = `Usage: edgebnn train [--preset NAME] [--config FILE | --resume CHECKPOINT] [--KEY VALUE ...]
       edgebnn train --preset list
       edgebnn train --dry-run [--preset NAME] [--config FILE | --resume CHECKPOINT] [--KEY VALUE ...]

Trains a Bayesian network on the host with bayesianize's objective (mean NLL
+ KL weight · Σ KL / N) and writes checkpoints in the native model format:
the final one at --out (with the optimizer's state: what --resume and
convert take), the deployable model beside it (<out stem>.model.ebnn: the
same network without the optimizer's state, for predict, calibrate, serve),
a per-epoch checkpoint (<out stem>.last.ebnn, rewritten atomically; not
after the last epoch, but for laplace's MAP network), a JSON-lines metrics log (<out stem>.metrics.jsonl)
and PNG plots (<out stem>.*.png). Ctrl-C finishes the step under way,
writes a checkpoint and exits (a second Ctrl-C stops at once, without one);
--resume continues from one — from an interrupted epoch's next minibatch, as
if never stopped — (flags given with it override its settings, e.g.
--epochs to train longer; without --out the outputs go beside the checkpoint,
under the name the run was started with; the keys that define the model —
arch, posterior, inference, task, dropout, optimizer and the like — and the
data, its test split and order — data, classes, test_fraction, seed — are
the checkpoint's). Every config-file key is also a flag, with dashes
(noise_precision → --noise-precision). Evaluation after each epoch goes
through the runtime, exactly as on a board.

Presets (--preset NAME, or the config key "preset") are the papers' recipes
and our measured ones, built in as complete config files: the preset's keys
come first, then a --config file's, then the flags, so anything given
explicitly overrides the preset (--preset paper003-toy-ffgu --seed 2).
--preset list prints them; docs/PRESETS.md gives each setting's source.

--dry-run checks the settings as a run would — the preset, the --config file
(one JSON object of known keys), the flags, their ranges, the data's name and
that no output would replace an input; with --resume, the checkpoint's
training state — prints the resolved settings as JSON and exits without
reading the data, training or writing anything (exit 2 for a bad setting):
scripts check a config file with it before they start runs.

Factor-analysis posteriors q(θ) = N(c, FFᵀ + diag ψ) over all parameters θ
(every Linear/Conv2d weight and bias, in network order; K = --latent-dim):
  --posterior vifa    variational inference (paper 000, Algorithm 1): the
      exact ELBO with the training-set size N, prior N(0, α⁻¹I) (α =
      --prior-precision), --mc-samples θ samples per update, each on its own
      minibatch (so an epoch has batches/mc_samples updates); learning rates
      --lr (c), --lr-factors (F), --lr-log-var (log ψ); --optimizer adam or
      sgd; --clip on the joint gradient norm (--fa-clip-per-parameter: on
      each of the gradients of c, F, log ψ, as paper 000). Two-stage schedule (§4.3.1):
      --fa-mean-only-epochs (train c only), then --fa-ramp-epochs (F and ψ
      learning rates grow linearly from 0). --fa-decay-epochs decays every
      learning rate linearly to 0 at the end; --fa-average-epochs averages
      c, F, log ψ over the last epochs' updates. c starts at the network's
      initialisation (--fa-init-mean zeros: at 0, Algorithm 1), ψ at
      exp(--fa-init-log-var).
  --posterior fa_em | fa_sga   SWAG-style: the network is trained with the
      optimizer; from epoch --fa-start-epoch, every --fa-every steps, its
      parameter vector goes to online EM / online SGA (thesis 001; F starts
      orthonormal, --fa-warmup iterates only update the running averages,
      --fa-lr is SGA's learning rate); c is the running mean.
The checkpoint is an FA model (tensors fa.mean, fa.factors, fa.psi) that
runtime, convert (also --dtype f16) and posterior read; --resume continues
from the learner's saved state.

Function-space VI (paper 004, eq. 11; docs/FSVI.md): --posterior ffg_w
--objective fsvi keeps the mean-field Gaussian q but replaces Σ KL by the KL
between the linearised network's output Gaussians at --context-size points
drawn each step from --context (random-monochrome, uniform [widened by
--context-margin], corrupted, or data:PATH, a CSV of inputs); the model file
is an ordinary ffg model. The KL's gradient flows through the J of q's side
of the linearisation (--fsvi-jacobian-grad q, the default; none holds J
fixed, cheaper; both differentiates the prior's side too). --fsvi-kl
last_layer computes the KL as timrudner/FSVI's code does instead: only the
last Linear layer random, over the features of one weight sample of the
earlier layers, against the network's initialisation as the prior (cheaper
than an MFVI step; docs/FSVI.md). --temperature scales the KL of every
objective.

MC dropout (Gal & Ghahramani; paper 004's baseline): --posterior mc_dropout
--dropout P trains a deterministic network (weight decay as --weight-decay)
with dropout layers of rate P — the architecture's Dropout layers, or, when
it has none, one after every top-level hidden activation (an MLP: after each
hidden activation) — that drop during training and, in the model file ("p"
and "mc" on the layer), at prediction time: each sample draws its own keep
mask. edgebnn inspect lists them; the posterior mean (runtime Options.Mean,
serve/bench --mean) runs them as the identity.

Full-covariance Gaussian per layer (FCG-W, bayesianize's FCGMixin; paper
003's toy baseline): --posterior fcg_w gives every Linear/Conv2d layer one
Gaussian N(μ, L Lᵀ) over its weights and bias (L lower-triangular, positive
diagonal), sampled whole (θ = μ + L ε) with a closed-form KL to the prior
N(0, s²): prior_weight_sd / prior_bias_sd of an fcg --inference config (or a
per-layer one, as --preset paper003-toy-fcgw). For small layers only: at most
4096 weights and biases per layer (runtime.MaxFCGDim); a larger layer is an
error naming it.

--mixture M trains M posteriors of the configuration with seeds seed, seed+1,
… (member k's files at <out stem>.member<k>.*) and combines them into a
mixture of posteriors at <out stem>.model.ebnn (MultiSWAG-style: sample s
draws from member s mod M); edgebnn convert --member does the same for
posteriors trained separately.

HMC reference (--posterior hmc; small MLPs only: at most 10 000 parameters,
layers Linear, Flatten, ReLU, Tanh, Sigmoid, Identity): NUTS (train/mcmc) on
the exact full-batch posterior of every weight and bias — prior N(0,
1/--prior-precision), or with an ffg --inference config the prior ffg_w would
use (prior_weight_sd, prior_bias_sd, sqrt_width_scaling); Gaussian likelihood
with the fixed --noise-precision, or softmax. --hmc-chains chains (default 4)
of --hmc-warmup adaptation and --hmc-draws kept iterations; --hmc-samples of
the draws, evenly spaced, are stored as an ensemble model (one network per
draw) that convert, predict and eval run unchanged. R̂ and bulk ESS over the
parameters, the predictions at up to 64 test inputs and the log density are
printed and kept in the checkpoint's training state. Not resumable.

Laplace (--posterior laplace; MLPs of Linear layers): the MAP network is
trained as --posterior deterministic with weight decay 1/(N α) (when
--weight-decay is 0), α = --prior-precision, or taken from --init-from with
--epochs 0 (post hoc, no retraining); one pass over the training data then
forms the diagonal of the posterior precision α + GGN (generalized
Gauss-Newton: exact, or --laplace-ggn mc, the Monte-Carlo Fisher with
--laplace-mc-samples labels per example). The posterior N(MAP, (α + GGN)⁻¹) is
written as an ffg_w model (convert makes it KindFFG). --laplace-val N holds the
last N training examples out and picks α from α·10^(k/2), k = −4…12, by their
NLL (the diagonal Laplace is over-dispersed with the training prior); the
MAP network is kept at <out stem>.last.ebnn.

Examples:
  edgebnn train --preset paper003-toy-ensembleu --out toy_ensu.ebnn
  edgebnn train --preset paper000-table4 --data csv:linreg.csv --out lr.ebnn
  edgebnn train --arch mlp:784-256-256-10 --posterior inducing \
      --inference '{"inference": {"Linear": {"inference": "inducing", "inducing_rows": 32, "inducing_cols": 32}}}' \
      --epochs 10 --out ffgu.ebnn
  edgebnn train --config toy.json --posterior ensemble_w
  edgebnn train --arch mlp:784-256-256-10 --posterior mc_dropout --dropout 0.1 \
      --weight-decay 1e-4 --epochs 10 --out mcdrop.ebnn
  edgebnn train --resume ffgu.last.ebnn --epochs 20
  edgebnn train --data csv:linreg.csv --task regression --arch model.txt \
      --posterior vifa --latent-dim 1 --prior-precision 0.01 --noise-precision 0.1 \
      --mc-samples 10 --optimizer sgd --lr 0.01 --lr-factors 1e-4 --lr-log-var 0.01 \
      --clip 10 --epochs 5000 --fa-average-epochs 2500 --test-fraction 0 --out lr.ebnn
  edgebnn train --config bench/configs/fmnist_faem.json
  edgebnn train --preset paper003-toy-hmc --out toy_hmc.ebnn
  edgebnn train --posterior laplace --init-from map.ebnn --epochs 0 \
      --arch mlp:784-256-256-10 --laplace-val 5000 --out laplace.ebnn`

// trainGrace is how long train may take, once interrupted, to finish the step or evaluation
// under way and write the checkpoint of a large model; a second signal stops at once (main).
const trainGrace = time.Minute

func runTrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	// The Go heap is kept to the memory the trainer's checks allow for (unless GOMEMLIMIT says).
	train.SetGoMemoryLimit()
	fs := newFlagSet("train")
	configPath := fs.String("config", "", "JSON config `file` (keys as below)")
	resume := fs.String("resume", "", "continue training from this `checkpoint`")
	quiet := fs.Bool("quiet", false, "no progress bar")
	noPlots := fs.Bool("no-plots", false, "do not write PNG plots")
	dryRun := fs.Bool("dry-run", false, "check the settings and print them as JSON, without training or writing anything")
	mixture := fs.Int("mixture", 0, "train `M` posteriors (seeds seed … seed+M−1, each at <out stem>.member<k>.ebnn) and combine them into a mixture model at <out stem>.model.ebnn")
	set := map[string]string{}
	var order []string
	for _, k := range train.Keys() {
		def := train.DefaultConfig()
		record := func(v string) error {
			if _, dup := set[k.Name]; !dup {
				order = append(order, k.Name)
			}
			set[k.Name] = v
			return nil
		}
		if k.Bool {
			fs.BoolFunc(k.Flag, keyFlagHelp(k, def.Get(k.Name)), record) // --key alone is --key=true
		} else {
			fs.Func(k.Flag, keyFlagHelp(k, def.Get(k.Name)), record)
		}
	}
	if err := parseFlagsOnly(fs, trainUsage, args, stdout); err != nil {
		return err
	}
	// The preset goes beneath everything else: it is applied first, not in flag order.
	preset, hasPreset := set["preset"]
	if hasPreset {
		order = slices.DeleteFunc(order, func(k string) bool { return k == "preset" })
		if preset == "list" || preset == "help" {
			return listPresets(stdout)
		}
	}
	apply := func(c *train.Config) error {
		for _, k := range order {
			if err := c.Set(k, set[k]); err != nil {
				return &usageError{msg: err.Error()}
			}
		}
		return nil
	}
	var (
		t   *train.Trainer
		err error
	)
	if *mixture != 0 && (*mixture < 2 || *mixture > runtime.MaxMembers) {
		return usagef("--mixture %d: want 2 to %d posteriors", *mixture, runtime.MaxMembers)
	}
	if *resume != "" {
		if *mixture != 0 {
			return usagef("--mixture and --resume exclude each other: resume a member's checkpoint, then combine the members with edgebnn convert --member")
		}
		if *configPath != "" {
			return usagef("--config and --resume exclude each other")
		}
		if hasPreset {
			return usagef("--preset and --resume exclude each other (the checkpoint holds its settings)")
		}
		st, rerr := train.ReadState(*resume)
		if rerr != nil {
			return rerr
		}
		if _, given := set["out"]; !given {
			// Never where the file says: a checkpoint from elsewhere would choose what to
			// overwrite. Beside the checkpoint, under the name the run was started with.
			base := filepath.Base(st.Config.Out)
			if base == "." || base == ".." || base == string(filepath.Separator) {
				return usagef("--resume %s: its recorded output %q names no file: give --out", *resume, st.Config.Out)
			}
			set["out"] = filepath.Join(filepath.Dir(*resume), base)
			order = append(order, "out")
			if a, err := os.Stat(set["out"]); err == nil && sameFileAs(a, *resume) {
				// A finished run's checkpoint: continuing it in place would replace it.
				return usagef("--resume %s: the run's output would be this input, the checkpoint itself: give --out for the continued run", *resume)
			}
		}
		// The checkpoint's tensors replace every parameter (priors included), so a key that
		// defines the model would change only what the saved model claims to be.
		for _, k := range resumeFixedKeys {
			if v, given := set[k]; given {
				return usagef("--%s %s: a resumed run keeps the checkpoint's model (%s); start a new run (or --init-from, for the kinds that take it)",
					strings.ReplaceAll(k, "_", "-"), clip.Q(v), k)
			}
		}
		for _, k := range resumeDataKeys {
			if v, given := set[k]; given {
				return usagef("--%s %s: a resumed run keeps the checkpoint's training data, test split and minibatch order (%s); start a new run",
					strings.ReplaceAll(k, "_", "-"), clip.Q(v), k)
			}
		}
		// A setting the checkpoint itself holds out of its domain is a bad input (exit 1, naming
		// the file); one the flags make so, a usage error.
		if err := st.Config.Validate(); err != nil {
			return fmt.Errorf("resuming %s: %w", *resume, err)
		}
		cfg := st.Config
		if err := apply(&cfg); err != nil {
			return err
		}
		if err := cfg.Validate(); err != nil {
			return &usageError{msg: err.Error()}
		}
		if err := checkTrainOutputs(cfg, *configPath, *resume); err != nil {
			return err
		}
		if *dryRun {
			return printSettings(stdout, &cfg)
		}
		// err, not a new variable: a failed Resume must reach the check below.
		t, err = train.Resume(*resume, apply)
	} else {
		cfg := train.DefaultConfig()
		if hasPreset && preset != "" {
			if err := cfg.ApplyPreset(preset); err != nil {
				return &usageError{msg: "--preset: " + err.Error()}
			}
		}
		if *configPath != "" {
			if err := cfg.ReadConfigFile(*configPath); err != nil {
				// A value out of its key's range is a usage error (exit 2) as the same value
				// given as a flag is; the message names the file.
				if re := (*train.RangeError)(nil); errors.As(err, &re) {
					return &usageError{msg: err.Error()}
				}
				return err
			}
			if hasPreset && cfg.Preset != preset {
				return usagef("--preset %q and the preset %q of --config %s differ", preset, cfg.Preset, *configPath)
			}
		}
		if err := apply(&cfg); err != nil {
			return err
		}
		// A setting out of its domain (a flag's or the config file's) is a usage error: exit 2.
		if err := cfg.Validate(); err != nil {
			return &usageError{msg: err.Error()}
		}
		if err := cfg.ValidateData(); err != nil {
			return &usageError{msg: err.Error()}
		}
		if *dryRun {
			if err := checkTrainOutputs(cfg, *configPath, ""); err != nil {
				return err
			}
			return printSettings(stdout, &cfg)
		}
		if *mixture != 0 {
			return trainMixture(ctx, cfg, *mixture, *configPath, *quiet, !*noPlots, stdout, stderr)
		}
		if err := checkTrainOutputs(cfg, *configPath, ""); err != nil {
			return err
		}
		t, err = train.New(cfg)
	}
	if err != nil {
		return err
	}
	return trainLoop(ctx, t, *quiet, !*noPlots, stdout, stderr)
}

// printSettings writes cfg, the settings a run would use, as indented JSON (train --dry-run).
func printSettings(w io.Writer, cfg *train.Config) error {
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("train: settings: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// trainMixture trains M posteriors of cfg, member k with seed cfg.Seed + k and its outputs at
// <out stem>.member<k>.ebnn (checkpoint, model, metrics, plots), and combines their models into
// a mixture of posteriors at cfg's model path (<out stem>.model.ebnn), as convert --member does.
func trainMixture(ctx context.Context, cfg train.Config, M int, configPath string, quiet, plots bool, stdout, stderr io.Writer) error {
	switch cfg.Posterior {
	case "deterministic", "ensemble_w":
		return usagef("--mixture takes a Bayesian --posterior; for a deep ensemble use --posterior ensemble_w")
	case "hmc":
		return usagef("--mixture does not take --posterior hmc: its draws are already an ensemble (run more chains with --hmc-chains)")
	}
	final := train.Trainer{Config: cfg}
	// Checked as the members' outputs are (checkTrainOutputs): not over an input — the data
	// included — and new where its directory does not exist yet (the members' runs create it).
	if _, err := os.Stat(filepath.Dir(final.ModelPath())); !errors.Is(err, fs.ErrNotExist) {
		inputs := append([]string{configPath, fileArg(cfg.Arch), cfg.Inference.Path, cfg.InitFrom}, dataInputs(cfg)...)
		if err := outfile.Check("--out (mixture model)", final.ModelPath(), inputs...); err != nil {
			return err
		}
	}
	var models []string
	for k := range M {
		mc := cfg
		mc.Seed = cfg.Seed + uint64(k)
		mc.Out = sidePath(cfg.Out, fmt.Sprintf(".member%d.ebnn", k))
		if err := checkTrainOutputs(mc, configPath, ""); err != nil {
			return err
		}
		t, err := train.New(mc)
		if err != nil {
			return err
		}
		if k == 0 {
			// Before any training: M members of this network must fit in one model file, as
			// combining them at the end checks (which used to fail only after all M runs).
			spec := t.Spec()
			if err := convert.CheckMembers(&spec, M, 0); err != nil {
				return fmt.Errorf("--mixture %d: the members %s … %s would not combine into %s: %w",
					M, clip.Path(mc.Out), clip.Path(sidePath(cfg.Out, fmt.Sprintf(".member%d.ebnn", M-1))), clip.Path(final.ModelPath()), err)
			}
		}
		fmt.Fprintf(stdout, "mixture member %d of %d (seed %d): %s\n", k+1, M, mc.Seed, mc.Out)
		if err := trainLoop(ctx, t, quiet, plots, stdout, stderr); err != nil {
			return fmt.Errorf("mixture member %d: %w", k, err)
		}
		models = append(models, t.ModelPath())
	}
	rep, err := convertStaged(ctx, convert.Options{Checkpoint: models[0], Members: models[1:], Out: final.ModelPath()})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: a mixture of %d posteriors, %d bytes (evaluate it with edgebnn eval %s)\n", rep.Out, M, rep.FileBytes, rep.Out)
	return nil
}

// listPresets prints every preset with its one-line summary.
func listPresets(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PRESET\tRECIPE")
	for _, p := range train.Presets() {
		fmt.Fprintf(tw, "%s\t%s\n", p.Name, p.Summary)
	}
	fmt.Fprintln(tw, "\nedgebnn train --preset NAME [--KEY VALUE ...]; flags override the preset. Sources: docs/PRESETS.md")
	return tw.Flush()
}

// keyFlagHelp is the help of config key k's flag: its help text, then the default config's
// value def, unless the text states the default itself. A second default would repeat it
// (adam_eps: "default 1e-8") or contradict it (finetune_lr: "default 1e-4", the value its
// stored 0 stands for, train.DefaultFinetuneLR, would be followed by "(default 0)").
func keyFlagHelp(k train.Key, def string) string {
	if strings.Contains(k.Help, "default") {
		return k.Help
	}
	return k.Help + fmt.Sprintf(" (default %s)", orNone(def))
}

func orNone(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

// trainPlotSuffixes returns the suffixes of the PNG plots trainPlots may write beside --out.
func trainPlotSuffixes() []string {
	return []string{".curves.png", ".test.png", ".reliability.png", ".selective.png", ".fit.png"}
}

// resumeFixedKeys are the config keys that define the model, which --resume does not take: the
// network, its posterior and prior, and the optimizer whose state the checkpoint holds.
var resumeFixedKeys = []string{"arch", "posterior", "inference", "task", "ensemble_size", "latent_dim", "init_from",
	"global_inducing", "noise_precision", "prior_precision", "dropout", "bernstein_degree", "bernstein_table",
	"bernstein_prior_sd", "optimizer"}

// resumeDataKeys are the config keys that choose the training data, the test split and the
// minibatch order (the seed: also the noise), which --resume does not take either. (train_limit
// it takes: fine-tuning after pruning may use fewer examples, bench/prunetab.sh.)
var resumeDataKeys = []string{"data", "csv_target", "classes", "test_fraction", "seed"}

// dataInputs are the data files a run of cfg reads: the CSV file or the Fashion-MNIST IDX files,
// and the OOD set's and fsvi's context points' files (digits, digits:PATH or data:PATH).
func dataInputs(cfg train.Config) []string {
	var inputs []string
	if p, ok := strings.CutPrefix(cfg.Data, "csv:"); ok {
		inputs = append(inputs, p)
	} else if cfg.Data == "fmnist" || strings.HasPrefix(cfg.Data, "fmnist-c:") {
		inputs = append(inputs, data.FashionMNISTFiles(cfg.DataDir)...)
	}
	for _, v := range []string{cfg.OOD, cfg.Context} {
		if p, ok := strings.CutPrefix(v, "data:"); ok {
			inputs = append(inputs, p)
		} else if p, ok := strings.CutPrefix(v, "digits:"); ok {
			inputs = append(inputs, p)
		} else if v == "digits" {
			inputs = append(inputs, data.DefaultDigitsPath)
		}
	}
	return inputs
}

// checkTrainOutputs refuses a run whose outputs (the checkpoint at --out, the per-epoch
// checkpoint, the deployable model, the metrics log and the plots) are not new or regular files,
// or would overwrite one of its inputs: the config file, the checkpoint resumed from, the data
// (CSV file or Fashion-MNIST IDX files), an architecture or inference-config file. Only the
// per-epoch checkpoint may be the one resumed from: it is the run's own, replaced atomically.
// Outputs in a directory that does not exist yet are new (the directory is created later).
func checkTrainOutputs(cfg train.Config, configPath, resume string) error {
	inputs := append([]string{configPath, resume, fileArg(cfg.Arch), cfg.Inference.Path, cfg.InitFrom}, dataInputs(cfg)...)
	t := train.Trainer{Config: cfg}
	outs := []struct{ what, path string }{
		{"--out", cfg.Out},
		{"--out (per-epoch checkpoint)", t.EpochCheckpointPath()},
		{"--out (model)", t.ModelPath()},
		{"--out (metrics log)", sidePath(cfg.Out, ".metrics.jsonl")},
	}
	for _, suf := range trainPlotSuffixes() {
		outs = append(outs, struct{ what, path string }{"--out (plot)", sidePath(cfg.Out, suf)})
	}
	for i, o := range outs {
		if _, err := os.Stat(filepath.Dir(o.path)); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		in := inputs
		if i == 1 {
			in = slices.DeleteFunc(slices.Clone(inputs), func(p string) bool { return p == resume })
		}
		if err := outfile.Check(o.what, o.path, in...); err != nil {
			return err
		}
	}
	return nil
}

// sidePath returns out with its extension replaced by suffix (".metrics.jsonl").
func sidePath(out, suffix string) string {
	return strings.TrimSuffix(out, filepath.Ext(out)) + suffix
}

// archLabel names an architecture for the one-line report: inline JSON (as given, or as a
// checkpoint records an architecture file) by its size, anything else as given.
func archLabel(arch string) string {
	if strings.HasPrefix(strings.TrimSpace(arch), "{") {
		return fmt.Sprintf("an inline JSON architecture (%d bytes)", len(arch))
	}
	return arch
}

// metricsLogEvery is the least time between two rewrites of the metrics log during training.
const metricsLogEvery = 2 * time.Second

func trainLoop(ctx context.Context, t *train.Trainer, quiet, plots bool, stdout, stderr io.Writer) (retErr error) {
	c := &t.Config
	if c.Preset != "" {
		fmt.Fprintf(stdout, "preset %s (keys given explicitly override it)\n", c.Preset)
	}
	fmt.Fprintf(stdout, "training %s (%s) on %s: %d train, %d test examples", archLabel(c.Arch), c.Posterior, t.Train.Name, t.Train.N, t.Test.N)
	if t.OOD != nil {
		fmt.Fprintf(stdout, ", %d out-of-distribution", t.OOD.N)
	}
	fmt.Fprintf(stdout, "; %d parameters, %d steps per epoch\n", numParams(t), t.StepsPerEpoch())
	if len(t.ConditionalKL) > 0 {
		fmt.Fprintf(stdout, "conditional_kl %s: β = min(1, N/d_in), N = %d:", c.ConditionalKL, t.Train.N)
		for i, w := range t.ConditionalKL {
			sep := ";"
			if i == len(t.ConditionalKL)-1 {
				sep = "\n"
			}
			fmt.Fprintf(stdout, " layer %s d_in %d β %.4g%s", w.Layer, w.DIn, w.Beta, sep)
		}
	}
	// The directories of --out that this run creates are removed again if it fails having
	// written nothing into them (removeEmptyDirs leaves any that are not empty).
	created, err := mkdirAllCreated(filepath.Dir(c.Out), 0o755)
	defer func() {
		if retErr != nil {
			removeEmptyDirs(created)
		}
	}()
	if err != nil {
		return fmt.Errorf("--out %s: %w", c.Out, err)
	}
	outfile.Watch(ctx, filepath.Dir(c.Out))
	// The metrics log is rewritten whole and atomically from t.History (which checkpoints carry,
	// so a resumed run's log continues the earlier one): at most every metricsLogEvery while
	// training, and once more when the run ends — unless it ended having written nothing, no
	// epoch and no checkpoint (an input refused, a loss that was not finite at the first
	// step): the log at that path is then an earlier run's, the companion of the checkpoint and
	// model still there, and stays as it is.
	logPath := sidePath(c.Out, ".metrics.jsonl")
	startEpochs := len(t.History)
	wroteOutput := false
	interruptCkpt := "" // the checkpoint written after the interrupt
	lastCkpt := ""      // the last checkpoint written
	var extra []any     // lines after the epochs' (the toy1d summary)
	writeLog := func() error {
		err := outfile.Write(context.WithoutCancel(ctx), logPath, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			for i := range t.History {
				if err := enc.Encode(&t.History[i]); err != nil {
					return err
				}
			}
			for _, x := range extra {
				if err := enc.Encode(x); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("metrics log: %w", err)
		}
		return nil
	}
	lastLog := time.Now()

	var bar *progressbar.ProgressBar
	remaining := t.RemainingSteps()
	if !quiet && remaining > 0 {
		bar = progressbar.NewOptions64(remaining, progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetPredictTime(true), progressbar.OptionShowCount(), progressbar.OptionSetWidth(20),
			progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionClearOnFinish(),
			progressbar.OptionShowDescriptionAtLineEnd())
	}
	lastAcc := ""
	hooks := train.Hooks{
		Step: func(s train.StepInfo) {
			if bar == nil {
				return
			}
			if c.Posterior == "hmc" {
				if s.Batch%64 == 0 || s.Batch == s.Batches {
					bar.Describe(fmt.Sprintf("NUTS iterations (%d chains, warm-up included)", c.HMCChains))
				}
				_ = bar.Add(1)
				return
			}
			bar.Describe(fmt.Sprintf("epoch %d/%d step %d/%d loss %.4f KL %.4g%s", s.Epoch, c.TotalEpochs(), s.Batch, s.Batches, s.Loss, s.KL, lastAcc))
			_ = bar.Add(1)
		},
		Epoch: func(m train.EpochMetrics) {
			if time.Since(lastLog) >= metricsLogEvery {
				if err := writeLog(); err != nil {
					fmt.Fprintf(stderr, "edgebnn: %v\n", err)
				}
				lastLog = time.Now()
			}
			line := fmt.Sprintf("epoch %d/%d  loss %.4f  nll %.4f  KL %.4g (weight %.3g)  lr %.3g  %.1f steps/s",
				m.Epoch, c.TotalEpochs(), m.Loss, m.NLL, m.KL, m.KLWeight, m.LR, m.StepsPerSecond)
			if r := m.Test; r != nil {
				line += "  |  test " + reportLine(r)
				if r.Classification != nil {
					lastAcc = fmt.Sprintf(" acc %.2f%%", 100*r.Classification.Accuracy)
				}
			}
			if m.Test == nil && m.Epoch%max(1, c.TotalEpochs()/50) != 0 {
				return // long runs of tiny epochs: print about 50 lines
			}
			if bar != nil {
				_ = bar.Clear()
			}
			fmt.Fprintln(stdout, line)
		},
		Checkpoint: func(p string) {
			wroteOutput, lastCkpt = true, p
			if ctx.Err() != nil {
				interruptCkpt = p
			}
		},
	}
	runErr := t.Run(ctx, hooks)
	if bar != nil {
		_ = bar.Finish()
	}
	if runErr == nil || wroteOutput || len(t.History) > startEpochs {
		if err := writeLog(); err != nil {
			if runErr != nil {
				return errors.Join(runErr, err)
			}
			return err
		}
	}
	if runErr != nil {
		if ctx.Err() != nil && c.Posterior == "hmc" {
			fmt.Fprintln(stdout, "interrupted: posterior hmc keeps no partial state; nothing written")
		} else if ctx.Err() != nil && c.Posterior == "laplace" && c.Epochs == 0 {
			fmt.Fprintln(stdout, "interrupted: the post-hoc Laplace fit keeps no partial state; nothing written")
		} else if ctx.Err() != nil && interruptCkpt != "" {
			fmt.Fprintf(stdout, "interrupted: checkpoint written to %s (resume with --resume)\n", interruptCkpt)
		} else if ctx.Err() != nil && lastCkpt != "" {
			// Laplace's fit, interrupted after the MAP network's last epoch was saved.
			fmt.Fprintf(stdout, "interrupted: the last checkpoint is %s, written before the interrupt (resume with --resume)\n", lastCkpt)
		} else if ctx.Err() != nil {
			fmt.Fprintln(stdout, "interrupted: no checkpoint written")
		}
		return runErr
	}
	fmt.Fprintf(stdout, "wrote %s (%.1f s of training, %d steps)\n", c.Out, t.TrainSeconds, t.Step)
	if r := t.HMC(); r != nil {
		for _, l := range r.Lines() {
			fmt.Fprintln(stdout, l)
		}
		extra = append(extra, map[string]any{"hmc": r})
	}
	if r := t.Laplace(); r != nil {
		for _, l := range r.Lines() {
			fmt.Fprintln(stdout, l)
		}
		extra = append(extra, map[string]any{"laplace": r})
		if err := writeLog(); err != nil {
			return err
		}
	}
	if c.Task == "regression" && t.Train.Dim == 1 && (len(t.Nets) == 1 || c.Posterior == "hmc") {
		m, err := t.Model()
		if err != nil {
			return err
		}
		s, err := train.Toy1D(m, t.Train, t.PredictOptions())
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "epistemic sd at x=0: %.4f; mean over training inputs: %.4f; ratio %.2f\n",
			s.EpistemicSDAt0, s.EpistemicSDTrainMean, s.Ratio)
		extra = append(extra, map[string]any{"toy1d": s})
		if err := writeLog(); err != nil {
			return err
		}
	}
	if plots {
		if err := trainPlots(t); err != nil {
			return err
		}
	}
	return nil
}

// mkdirAllCreated creates dir and its missing parents, as os.MkdirAll does, and returns the
// directories it created itself, deepest first (also when it fails part way), for
// removeEmptyDirs. A directory another process creates meanwhile is not among them.
func mkdirAllCreated(dir string, perm fs.FileMode) ([]string, error) {
	var missing []string // deepest first
	for d := filepath.Clean(dir); ; {
		if _, err := os.Lstat(d); err == nil || !errors.Is(err, fs.ErrNotExist) {
			break
		}
		missing = append(missing, d)
		p := filepath.Dir(d)
		if p == d {
			break
		}
		d = p
	}
	var created []string
	for i := len(missing) - 1; i >= 0; i-- {
		err := os.Mkdir(missing[i], perm)
		if errors.Is(err, fs.ErrExist) {
			continue // made meanwhile by someone else; os.MkdirAll below checks it is a directory
		}
		if err != nil {
			slices.Reverse(created)
			return created, err
		}
		created = append(created, missing[i])
	}
	slices.Reverse(created)
	if err := os.MkdirAll(dir, perm); err != nil {
		return created, err
	}
	return created, nil
}

// removeEmptyDirs removes dirs in order (deepest first, as mkdirAllCreated returns them),
// stopping at the first that cannot be removed: one not empty stays, and so do its parents.
func removeEmptyDirs(dirs []string) {
	for _, d := range dirs {
		if st, err := os.Lstat(d); err != nil || !st.IsDir() || os.Remove(d) != nil {
			return
		}
	}
}

func numParams(t *train.Trainer) int {
	n := 0
	for _, net := range t.Nets {
		n += net.NumParams()
	}
	return n
}

func reportLine(r *eval.Report) string {
	if c := r.Classification; c != nil {
		s := fmt.Sprintf("acc %.2f%%  nll %.4f  ece %.4f  brier %.4f", 100*c.Accuracy, c.NLL, c.ECE, c.Brier)
		if o, ok := r.OOD["mi"]; ok {
			s += fmt.Sprintf("  OOD AUROC mi %.3f entropy %.3f maxprob %.3f", o.AUROC, r.OOD["entropy"].AUROC, r.OOD["maxprob"].AUROC)
		}
		return s
	}
	if g := r.Regression; g != nil {
		return fmt.Sprintf("rmse %.4f  nll %.4f", g.RMSE, g.NLL)
	}
	return ""
}

// trainPlots writes the training curves, and for the last evaluation the reliability diagram
// and selective-prediction curve (classification) or the 1-D fit (regression).
func trainPlots(t *train.Trainer) error {
	if len(t.History) == 0 {
		return nil // no epoch has run: nothing to draw
	}
	out := t.Config.Out
	var ep, loss, nll, acc []float64
	for _, h := range t.History {
		ep = append(ep, float64(h.Epoch))
		loss = append(loss, h.Loss)
		nll = append(nll, h.NLL)
		if h.Test != nil && h.Test.Classification != nil {
			acc = append(acc, h.Test.Classification.Accuracy)
		} else if h.Test != nil && h.Test.Regression != nil {
			acc = append(acc, h.Test.Regression.RMSE)
		} else {
			acc = append(acc, math.NaN())
		}
	}
	if err := plot.Lines(sidePath(out, ".curves.png"), "training", "epoch", "objective",
		[]plot.Series{{Name: "loss", X: ep, Y: loss}, {Name: "NLL", X: ep, Y: nll}}, 6, 4); err != nil {
		return err
	}
	ylab := "test accuracy"
	if t.Test.Regression() {
		ylab = "test RMSE"
	}
	if err := plot.Lines(sidePath(out, ".test.png"), ylab, "epoch", ylab, []plot.Series{{X: ep, Y: acc}}, 6, 4); err != nil {
		return err
	}
	last := t.History[len(t.History)-1].Test
	if last == nil {
		return nil
	}
	if last.Classification != nil {
		bins := make([]plot.Bin, len(last.Reliability))
		for i, b := range last.Reliability {
			bins[i] = plot.Bin{Lo: b.Lo, Hi: b.Hi, Count: b.Count, Confidence: b.Confidence, Accuracy: b.Accuracy}
		}
		if err := plot.Reliability(sidePath(out, ".reliability.png"),
			fmt.Sprintf("reliability (ECE %.4f)", last.Classification.ECE), bins); err != nil {
			return err
		}
		var ss []plot.Series
		for _, s := range eval.Scores {
			// A resumed run's last report is the checkpoint's: a curve of another length is left out.
			if y := last.Selective[s]; len(y) == len(eval.SelectiveFractions) {
				ss = append(ss, plot.Series{Name: "by " + s, X: eval.SelectiveFractions, Y: y})
			}
		}
		return plot.Lines(sidePath(out, ".selective.png"), "selective prediction", "fraction retained", "accuracy", ss, 6, 4)
	}
	if t.Train.Dim == 1 && (len(t.Nets) == 1 || t.Config.Posterior == "hmc") {
		return plotToy(t, sidePath(out, ".fit.png"))
	}
	return nil
}

func plotToy(t *train.Trainer, path string) error {
	m, err := t.Model()
	if err != nil {
		return err
	}
	grid := data.Toy1DGrid(401, -2, 2)
	p, err := eval.Predict(m, grid, t.PredictOptions(), 0)
	if err != nil {
		return err
	}
	var b plot.Band1D
	for i := 0; i < grid.N; i++ {
		b.X = append(b.X, float64(grid.X[i]))
		b.Mean = append(b.Mean, float64(p.Mean[i]))
		b.SD = append(b.SD, math.Sqrt(float64(p.Var[i])))
		b.TrueX = append(b.TrueX, float64(grid.X[i]))
		b.TrueY = append(b.TrueY, float64(grid.Targets[i]))
	}
	for i := 0; i < t.Train.N; i++ {
		b.TrainX = append(b.TrainX, float64(t.Train.X[i]))
		b.TrainY = append(b.TrainY, float64(t.Train.Targets[i]))
	}
	return plot.Regression1D(path, t.Config.Posterior+" "+t.Config.Inference.Path, b)
}

// sameFileAs reports whether path names the file fi describes.
func sameFileAs(fi os.FileInfo, path string) bool {
	b, err := os.Stat(path)
	return err == nil && os.SameFile(fi, b)
}
