// Package train is edgebnn's host-side trainer: it builds a Bayesian network from a Config
// (architecture, bayesianize inference config, data), optimises bayesianize's objective —
// mean NLL + (KL weight)·Σ_l KL_l / N with train_samples Monte Carlo samples per step, KL weight
// 0 for ml_epochs then annealed linearly — with Adam or SGD, learning-rate milestones and
// gradient clipping, evaluates through the runtime package after each epoch (training and
// deployment share one inference path), and writes checkpoints in the native model format that
// runtime.Load reads and --resume continues from. The factor-analysis posteriors vifa, fa_em and
// fa_sga (fa_trainer.go) cover the whole parameter vector with train/fa's learners instead.
package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/edgebnn/edgebnn/convert/bnnconfig"
	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/prune"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
	"github.com/edgebnn/edgebnn/train/bfvi"
	"github.com/edgebnn/edgebnn/train/bnn"
	"github.com/edgebnn/edgebnn/train/data"
	"github.com/edgebnn/edgebnn/train/eval"
	"github.com/edgebnn/edgebnn/train/fsvi"
	"github.com/edgebnn/edgebnn/train/optim"
)

// Trainer runs one training job.
type Trainer struct {
	// Config is the run's configuration.
	Config Config
	// Nets holds the network (one, or the members of ensemble_w).
	Nets []*bnn.Net[float32]
	// Train, Test and OOD are the data sets (OOD is nil without held-out classes).
	Train, Test, OOD *data.Dataset
	// Epoch is the number of completed epochs and Step the number of optimizer steps taken.
	Epoch int
	Step  int64
	// History holds the metrics of every completed epoch.
	History []EpochMetrics
	// TrainSeconds is the wall-clock time spent in training steps (not evaluation).
	TrainSeconds float64
	// ConditionalKL holds each inducing layer's weight β_l of its conditional KL with
	// conditional_kl function_space (nil with weight: every β_l is 1).
	ConditionalKL []bnn.ConditionalKLWeight

	opt     optim.Optimizer[float32]
	params  []*autodiff.Param[float32]
	tape    *autodiff.Tape[float32]
	xb      []float32
	yb      []int
	tb      []float32
	spec    *runtime.Spec
	inits   map[string]bnn.Init // the layers' initialisations (buildNets), for fsvi_kl last_layer's prior network
	classes []int
	fa      *faRun         // the factor-analysis posterior (vifa, fa_em, fa_sga), else nil
	fs      *fsviRun       // the function-space objective (objective fsvi), else nil
	hmc     *hmcRun        // posterior hmc's sampler, else nil
	lap     *LaplaceReport // posterior laplace once fitted (Nets[0] is then the ffg network), else nil
	arch    string         // Config.Arch as checkpoints record it (storedArch)
	lapVal  *data.Dataset  // laplace_val's held-out examples, else nil
	// batch is the number of minibatches (vifa: updates) of epoch Epoch+1 already trained — by
	// a run interrupted inside it, restored by Resume — and partial their sums (State.Batch,
	// State.Partial); 0 at an epoch's end.
	batch   int
	partial EpochPartial
	// finetuneBegun: Resume restored a position inside a fine-tuning epoch (pruned already).
	finetuneBegun bool
	// resumed is the checkpoint Resume restored the run from ("" for a new run), and startStep
	// the step count the run started at (the checkpoint's; 0 for a new run): a non-finite loss
	// at that step comes before any update of this run, from the data or the parameters.
	resumed   string
	startStep int64

	// PruneReport is the outcome of prune_z once the fine-tuning phase has begun (nil before, and
	// after a resume inside that phase).
	PruneReport *prune.Report
	// PruneSNRReport is the outcome of prune_snr once the fine-tuning phase has begun (nil before,
	// and after resuming inside it).
	PruneSNRReport *prune.SNRReport
	mask           *zMask // the pruned Z entries pinned at zero while fine-tuning
	finetuning     bool   // the fine-tuning phase has begun
	evalOnly       bool   // LoadEvalData's: the training set is not used
	// stageFault, when set (tests only), fails the staging of the output it returns an error for:
	// a full disk at that file.
	stageFault func(path string) error
}

// StepInfo reports one optimizer step.
type StepInfo struct {
	Epoch, Batch, Batches int
	Step                  int64
	// Loss is the objective, NLL its data term (mean over the batch and samples) and KL Σ_l KL_l.
	Loss, NLL, KL, KLWeight float64
	// LR is the step's base learning rate (lr times the schedule's factor; 0 where the run has
	// no such rate: vifa's groups, hmc).
	LR float64
}

// EpochMetrics summarise one epoch.
type EpochMetrics struct {
	Epoch    int     `json:"epoch"`
	Step     int64   `json:"step"`
	LR       float64 `json:"lr"`
	KLWeight float64 `json:"kl_weight"`
	// Loss, NLL and KL are averages over the epoch's steps.
	Loss float64 `json:"loss"`
	NLL  float64 `json:"nll"`
	KL   float64 `json:"kl"`
	// TrainSeconds is the cumulative training time; StepsPerSecond this epoch's rate.
	TrainSeconds   float64 `json:"train_seconds"`
	StepsPerSecond float64 `json:"steps_per_second"`
	// Test is the evaluation on the test set (nil when not evaluated this epoch).
	Test *eval.Report `json:"test,omitempty"`
}

// EpochPartial holds the sums of the loss, NLL and KL over the minibatches of an epoch trained
// before an interrupt (State.Partial).
type EpochPartial struct {
	Loss float64 `json:"loss"`
	NLL  float64 `json:"nll"`
	KL   float64 `json:"kl"`
}

// Hooks observe training. Any may be nil.
type Hooks struct {
	Step  func(StepInfo)
	Epoch func(EpochMetrics)
	// Checkpoint is called with the path of each checkpoint written.
	Checkpoint func(path string)
}

// MoonsTrain and MoonsTest are the sizes of data moons: Two Moons (data.TwoMoons, noise 0.1)
// with the run's seed for training and seed+1 for testing.
const (
	MoonsTrain = 200
	MoonsTest  = 1000
)

// New prepares a run: it loads the data, builds the network with freshly initialised parameters
// (or those of init_from) and the optimizer.
func New(cfg Config) (*Trainer, error) {
	return newTrainer(cfg, nil, nil, true)
}

// NewWithData is New with the training and test sets given instead of loaded from cfg.Data
// (which then only names them in the checkpoint): a benchmark's own splits and preprocessing,
// e.g. bench/uci's standardised UCI splits. cfg.TrainLimit and cfg.TestLimit still apply; the
// data must fit cfg.Task.
func NewWithData(cfg Config, train, test *data.Dataset) (*Trainer, error) {
	if train == nil || test == nil {
		return nil, errors.New("train: NewWithData needs a training and a test set")
	}
	return newTrainer(cfg, train, test, true)
}

// newTape returns a tape whose matrix products, convolutions and pools run on GOMAXPROCS
// goroutines: the trainer's results do not depend on the count (autodiff.Tape.SetWorkers), only
// its speed does.
func newTape() *autodiff.Tape[float32] {
	tp := autodiff.NewTape[float32]()
	tp.SetWorkers(goruntime.GOMAXPROCS(0))
	return tp
}

// newTrainer is New (train, test nil: loaded from cfg.Data) and NewWithData; initFrom says
// whether cfg.InitFrom is loaded (not on Resume, whose checkpoint holds the parameters).
func newTrainer(cfg Config, train, test *data.Dataset, initFrom bool) (*Trainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := &Trainer{Config: cfg, tape: newTape()}
	if train != nil {
		if err := t.setData(train, test); err != nil {
			return nil, err
		}
	} else if err := t.loadData(); err != nil {
		return nil, err
	}
	if err := t.buildNets(); err != nil {
		return nil, err
	}
	if initFrom && cfg.InitFrom != "" {
		if err := t.loadInit(cfg.InitFrom); err != nil {
			return nil, err
		}
	}
	if err := t.buildOptimizer(); err != nil {
		return nil, err
	}
	if cfg.PruneSNR > 0 {
		if layers, _ := t.ffgParams(); len(layers) == 0 {
			return nil, fmt.Errorf("train: prune_snr %g: the network has no FFG layers (no weights to prune by |μ|/σ)", cfg.PruneSNR)
		}
	}
	if cfg.PruneZ > 0 {
		if layers, _ := t.zParams(); len(layers) == 0 {
			return nil, fmt.Errorf("train: prune_z %g: the network has no inducing layers (no Z matrices to prune)", cfg.PruneZ)
		}
	}
	if cfg.Objective == "fsvi" {
		var err error
		if t.fs, err = newFSVIRun(t); err != nil {
			return nil, err
		}
	}
	if IsFA(cfg.Posterior) {
		var err error
		if t.fa, err = newFARun(t); err != nil {
			return nil, err
		}
	}
	if cfg.Posterior == "hmc" {
		var err error
		if t.hmc, err = newHMCRun(t); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (t *Trainer) loadData() error {
	c := &t.Config
	var train, test *data.Dataset
	var err error
	switch {
	case c.Data == "fmnist" || strings.HasPrefix(c.Data, "fmnist-c:"):
		dir := c.DataDir
		if dir == "" {
			dir = data.DefaultFashionMNISTDir
		}
		if train, test, err = t.fashionMNIST(dir); err != nil {
			return err
		}
		if spec, ok := strings.CutPrefix(c.Data, "fmnist-c:"); ok {
			name, sev, err := data.ParseCorruption(spec)
			if err != nil {
				return fmt.Errorf("config: data %s: %w", c.Data, err)
			}
			if test, err = data.Corrupt(test, name, sev, c.Seed); err != nil {
				return fmt.Errorf("config: data %s: %w", c.Data, err)
			}
		}
	case c.Data == "toy1d" || strings.HasPrefix(c.Data, "toy1d:"):
		n := 100
		if s, ok := strings.CutPrefix(c.Data, "toy1d:"); ok {
			if n, err = strconv.Atoi(s); err != nil || n < 2 || n > MaxToy1DPoints {
				return fmt.Errorf("config: data %s: want toy1d:N with N in [2, %d] training points", c.Data, MaxToy1DPoints)
			}
		}
		train = data.Toy1D(n, c.Seed)
		test = data.Toy1DGrid(201, -2, 2)
	case c.Data == "moons":
		train = data.TwoMoons(MoonsTrain, 0.1, c.Seed)
		test = data.TwoMoons(MoonsTest, 0.1, c.Seed+1)
	case strings.HasPrefix(c.Data, "csv:"):
		all, err := data.ReadCSVFile(strings.TrimPrefix(c.Data, "csv:"),
			data.CSVOptions{Target: c.CSVTarget, Regression: c.Task == "regression"})
		if err != nil {
			return err
		}
		if t.evalOnly && c.EvalAllRows {
			// Every row in the file's order, so that test_limit takes the first rows and an
			// error's input numbers are the file's.
			if train, err = all.Subset(nil); err != nil {
				return err
			}
			test = all
			break
		}
		m := int(math.Round(c.TestFraction * float64(all.N)))
		if train, test, err = all.Split(m, c.Seed); err != nil {
			return err
		}
	default:
		return fmt.Errorf("config: data %q is not fmnist, fmnist-c:CORRUPTION:SEVERITY, csv:PATH, toy1d[:N] or moons", c.Data)
	}
	if (c.Task == "regression") != train.Regression() {
		return fmt.Errorf("config: task %s does not fit data %s", c.Task, train.Name)
	}
	if c.Classes != "" {
		if train.Regression() {
			return fmt.Errorf("config: classes needs classification data")
		}
		cs, err := data.ParseClasses(c.Classes)
		if err != nil {
			return err
		}
		t.classes = cs
		all := test
		if train, err = train.SelectClasses(cs, true); err != nil {
			return err
		}
		if test, err = all.SelectClasses(cs, true); err != nil {
			return err
		}
		if rest := data.Complement(cs, all.Classes); len(rest) > 0 {
			if t.OOD, err = all.SelectClasses(rest, false); err != nil {
				return err
			}
			t.OOD = t.OOD.Head(c.TestLimit)
		}
	}
	t.Train, t.Test = train.Head(c.TrainLimit), test.Head(c.TestLimit)
	if t.Train.N == 0 && !(t.evalOnly && c.EvalAllRows) {
		return fmt.Errorf("config: no training data")
	}
	if !t.evalOnly {
		if err := t.splitLaplaceVal(); err != nil {
			return err
		}
	}
	return t.loadOOD()
}

// fashionMNIST reads Fashion-MNIST's two splits only as far into their image files as the run
// looks: the first train_limit (test_limit) examples of the trained classes and, in the test
// split, of the held-out classes that make the OOD set. The labels files (tens of kilobytes) are
// read whole to find that point; a split the limits do not shorten is read in full. LoadEvalData
// (evalOnly) reads one training example, enough for the checks that follow.
func (t *Trainer) fashionMNIST(dir string) (train, test *data.Dataset, err error) {
	c := &t.Config
	var trainGroups, testGroups [][]int // label sets whose first examples are kept; nil: any label
	if c.Classes != "" {
		cs, err := data.ParseClasses(c.Classes)
		if err != nil {
			return nil, nil, err
		}
		trainGroups = [][]int{cs}
		testGroups = trainGroups
		if rest := data.Complement(cs, len(data.FashionMNISTClasses())); len(rest) > 0 && (c.OOD == "" || c.OOD == "classes") {
			testGroups = [][]int{cs, rest}
		}
	}
	trainLimit := c.TrainLimit
	if t.evalOnly {
		trainLimit = 1
	}
	load := func(split string, limit int, groups [][]int) (*data.Dataset, error) {
		n := 0
		if limit > 0 {
			labels, err := data.FashionMNISTLabels(dir, split)
			if err != nil {
				return nil, err
			}
			n = headFor(labels, limit, groups)
		}
		return data.FashionMNISTHead(dir, split, n)
	}
	if train, err = load("train", trainLimit, trainGroups); err != nil {
		return nil, nil, err
	}
	if test, err = load("test", c.TestLimit, testGroups); err != nil {
		return nil, nil, err
	}
	if !slices.Equal(train.Shape, test.Shape) {
		// Same-sized images of another shape would be scored silently, and --ood digits is
		// upsampled to the test images' size.
		return nil, nil, fmt.Errorf("data %s: the test images are %v, the training images %v", dir, test.Shape, train.Shape)
	}
	return train, test, nil
}

// headFor returns how many leading labels hold the first limit examples of every group (a set
// of labels; no groups: any label), or 0 (all of them) when a group has fewer.
func headFor(labels []int, limit int, groups [][]int) int {
	if len(groups) == 0 {
		return min(limit, len(labels))
	}
	counts, done := make([]int, len(groups)), 0
	for i, y := range labels {
		for g, set := range groups {
			if counts[g] < limit && slices.Contains(set, y) {
				if counts[g]++; counts[g] == limit {
					done++
				}
			}
		}
		if done == len(groups) {
			return i + 1
		}
	}
	return 0
}

// loadOOD replaces the OOD set of held-out classes by the one the ood key names (see
// Config.OOD), limited to test_limit examples as the test set.
func (t *Trainer) loadOOD() error {
	c := &t.Config
	var err error
	switch {
	case c.OOD == "" || c.OOD == "classes":
		if c.OOD == "classes" && t.OOD == nil {
			return fmt.Errorf("config: ood classes: every class of the test set is trained on (classes %s)", c.Classes)
		}
		return nil
	case c.OOD == "fmnist-shuffled":
		// Every test image (not only those of the trained classes): a fixed OOD set. Only the
		// first test_limit are read (pixels are shuffled by one permutation for every image).
		all, err := data.FashionMNISTHead(c.fmnistDir(), "test", c.TestLimit)
		if err != nil {
			return fmt.Errorf("config: ood %s: %w", c.OOD, err)
		}
		t.OOD = data.ShufflePixels(all, data.ShuffledPixelsSeed)
	case c.OOD == "digits" || strings.HasPrefix(c.OOD, "digits:"):
		path := strings.TrimPrefix(strings.TrimPrefix(c.OOD, "digits"), ":")
		if path == "" {
			path = data.DefaultDigitsPath
		}
		if len(t.Test.Shape) != 3 || t.Test.Shape[0] != 1 || t.Test.Shape[1] != t.Test.Shape[2] {
			return fmt.Errorf("config: ood %s needs square one-channel test images, not shape %v", c.OOD, t.Test.Shape)
		}
		// Only the first test_limit rows are read and upsampled (every one used to be, before
		// the limit: a 171 kB gzip of identical rows took 3.9 GB).
		if t.OOD, err = data.DigitsHead(path, t.Test.Shape[1], c.TestLimit); err != nil {
			return fmt.Errorf("config: ood %s (apt-get install python3-sklearn provides %s): %w", c.OOD, data.DefaultDigitsPath, err)
		}
	default:
		return fmt.Errorf("config: ood %q is not %s", c.OOD, OODSets)
	}
	t.OOD = t.OOD.Head(c.TestLimit)
	// The OOD values are on the test images' scale ([0, 1]); eval.Predict takes inputs back to
	// stored values by dividing by Scale before the model's own preprocessing (Fashion-MNIST's
	// 1/255), so the OOD set must claim the test set's Scale to reach the model unchanged.
	t.OOD.Scale = t.Test.Scale
	return nil
}

// fmnistDir is the directory of the Fashion-MNIST IDX files (data_dir or the default).
func (c *Config) fmnistDir() string {
	if c.DataDir == "" {
		return data.DefaultFashionMNISTDir
	}
	return c.DataDir
}

// setData takes NewWithData's data sets (checked and limited as loadData's).
func (t *Trainer) setData(train, test *data.Dataset) error {
	c := &t.Config
	for _, d := range []*data.Dataset{train, test} {
		if err := d.Validate(); err != nil {
			return fmt.Errorf("train: data %s: %w", d.Name, err)
		}
		if (c.Task == "regression") != d.Regression() {
			return fmt.Errorf("config: task %s does not fit data %s", c.Task, d.Name)
		}
	}
	if c.Classes != "" {
		return fmt.Errorf("config: classes does not apply to data given to NewWithData")
	}
	if c.OOD != "" {
		return fmt.Errorf("config: ood %s does not apply to data given to NewWithData", c.OOD)
	}
	t.Train, t.Test = train.Head(c.TrainLimit), test.Head(c.TestLimit)
	if t.Train.N == 0 {
		return fmt.Errorf("config: no training data")
	}
	return t.splitLaplaceVal()
}

// loadInit sets the network's parameters from the checkpoint or model file at path (init_from):
// every weight and bias by name, with the same shapes, each value within ±MaxInitFromValue.
func (t *Trainer) loadInit(path string) error {
	f, err := format.Open(path)
	if err != nil {
		return fmt.Errorf("init_from: %w", err)
	}
	defer f.Close()
	for _, n := range t.Nets {
		if err := n.Load(boundedTensors{fileTensors{f}}); err != nil {
			if errors.Is(err, errInitValue) {
				return fmt.Errorf("init_from %s: %w", path, err)
			}
			return fmt.Errorf("init_from %s (want a deterministic network with the same architecture): %w", path, err)
		}
	}
	return nil
}

// MaxInitFromValue bounds the magnitude of init_from's weights and biases, and of every
// parameter --resume restores: trained networks' are a few units at most, and weights of 3e38
// (finite float32 values) made the first loss +Inf.
const MaxInitFromValue = 1e15

// errInitValue is wrapped by boundedTensors' errors.
var errInitValue = errors.New("weights this large overflow float32 arithmetic in training")

// boundedTensors passes src's tensors on, refusing one with a value beyond ±MaxInitFromValue
// with an error giving the value and its index (Net.Load adds the tensor's name). NaN and ±Inf
// pass: Net.Load refuses them.
type boundedTensors struct{ src runtime.TensorSource }

func (b boundedTensors) Tensor(name string) ([]float32, []int, error) {
	v, shape, err := b.src.Tensor(name)
	if err != nil {
		return nil, nil, err
	}
	if i := outOfBound(v); i >= 0 {
		return nil, nil, fmt.Errorf("value %d is %g, outside ±%.0e: %w", i, v[i], MaxInitFromValue, errInitValue)
	}
	return v, shape, nil
}

// outOfBound returns the index of the first finite value of v beyond ±MaxInitFromValue, or −1.
func outOfBound(v []float32) int {
	for i, x := range v {
		if a := math.Abs(float64(x)); a > MaxInitFromValue && !math.IsInf(a, 0) {
			return i
		}
	}
	return -1
}

// inferenceConfig returns the bayesianize config: the given one, or the posterior's default.
func (t *Trainer) inferenceConfig() (*bnnconfig.Config, error) {
	c := &t.Config
	if strings.TrimSpace(c.Inference.JSON) != "" {
		if c.Posterior == "deterministic" || c.Posterior == "ensemble_w" || c.Posterior == "mc_dropout" || c.Posterior == "laplace" {
			return nil, fmt.Errorf("config: posterior %s takes no inference config", c.Posterior)
		}
		cfg, err := bnnconfig.Parse([]byte(c.Inference.JSON))
		if err != nil {
			if c.Inference.Path == "" {
				return nil, fmt.Errorf("the inline inference config: %w", err)
			}
			return nil, fmt.Errorf("inference config %s: %w", c.Inference.Path, err)
		}
		return cfg, nil
	}
	switch c.Posterior {
	case "ffg_w":
		return bnnconfig.Parse([]byte(`{"inference": "ffg"}`))
	case "fcg_w":
		return bnnconfig.Parse([]byte(`{"inference": "fcg"}`))
	case "inducing":
		return bnnconfig.Parse([]byte(`{"inference": "inducing"}`))
	}
	return nil, nil
}

func (t *Trainer) buildNets() error {
	c := &t.Config
	nodes, err := archNodes(c.Arch, c.Task, t.Train)
	if err != nil {
		return err
	}
	t.arch = storedArch(c.Arch, nodes)
	cfg, err := t.inferenceConfig()
	if err != nil {
		return err
	}
	task := runtime.Classification
	if c.Task == "regression" {
		task = runtime.Regression
	}
	if c.Posterior == "hmc" {
		cfg = nil // the network is deterministic; hmc reads only the config's prior (newHMCRun)
	}
	spec, inits, err := bnn.SpecFromNodes(nodes, cfg, t.Train.Shape, task, 1/c.NoisePrecision)
	if err != nil {
		return err
	}
	switch c.Posterior {
	case "bernstein_last":
		if err := bernsteinLast(spec, c); err != nil {
			return err
		}
	case "mc_dropout":
		if err := mcDropout(spec, c.Dropout); err != nil {
			return err
		}
	}
	t.spec, t.inits = spec, inits
	if c.InitSDU > 0 {
		for name, in := range inits {
			in.InitSDU = c.InitSDU
			inits[name] = in
		}
	}
	if c.GlobalInducing != "" {
		rows, cols, err := c.GlobalInducingSize()
		if err != nil {
			return err
		}
		if err := bnn.UseGlobalInducing(spec, inits, rows, cols); err != nil {
			return err
		}
	}
	k := 1
	if c.Posterior == "ensemble_w" {
		k = c.EnsembleSize
	}
	if err := checkTrainingMemory(spec, c, k, memoryLimit()); err != nil {
		return err
	}
	rng := initRNG(c.Seed)
	for i := 0; i < k; i++ {
		n, err := bnn.New[float32](spec, inits, rng)
		if err != nil {
			return err
		}
		if i > 0 {
			n.SetPrefix(runtime.MemberPrefix(i))
		}
		if c.ConditionalKL == CondKLFunctionSpace {
			if t.ConditionalKL, err = n.UseFunctionSpaceKL(t.Train.N); err != nil {
				return fmt.Errorf("config: conditional_kl %s: %w", c.ConditionalKL, err)
			}
		}
		t.Nets = append(t.Nets, n)
	}
	m, err := t.Nets[0].Model()
	if err != nil {
		return fmt.Errorf("train: the network does not build in the runtime: %w", err)
	}
	if err := checkActivationMemory(m.ActivationValues(), c, k, memoryLimit()); err != nil {
		return err
	}
	if err := checkEvalMemory(t.Test, t.OOD, m.OutputSize(), memoryLimit()); err != nil {
		return err
	}
	if task == runtime.Classification && m.OutputSize() < t.Train.Classes {
		return fmt.Errorf("train: the network has %d outputs but the data has %d classes", m.OutputSize(), t.Train.Classes)
	}
	if task == runtime.Regression && m.OutputSize() != t.Train.Outputs {
		return fmt.Errorf("train: the network has %d outputs but the data has %d targets", m.OutputSize(), t.Train.Outputs)
	}
	return nil
}

// initRNG is the generator buildNets initialises the networks from.
func initRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x1417)) }

// bernsteinLast gives the network's last top-level Linear layer a Bernstein-flow posterior
// (posterior bernstein_last); the body stays deterministic.
func bernsteinLast(spec *runtime.Spec, c *Config) error {
	l := spec.LastLinear()
	if l == nil {
		return fmt.Errorf("train: posterior bernstein_last: the network does not end with a Linear layer")
	}
	m, sd := c.BernsteinDegree, c.BernsteinPriorSD
	if m == 0 {
		m = bnn.DefaultBernsteinDegree
	}
	if sd == 0 {
		sd = 1
	}
	l.Posterior = &runtime.PosteriorSpec{Kind: runtime.KindBernstein, Degree: m, TableSize: c.BernsteinTable, PriorSD: sd}
	return spec.Validate()
}

// mcDropout makes spec an MC dropout network of rate p (posterior mc_dropout): every Dropout
// layer of the architecture, residual blocks included, gets rate p and MC; an architecture
// without Dropout layers gets one after every top-level activation that is not the last layer
// (for an MLP, after each hidden activation, as Gal & Ghahramani's MC dropout baseline), named
// after the activation (<name>.dropout).
func mcDropout(spec *runtime.Spec, p float64) error {
	found := false
	runtime.WalkLayers(spec.Layers, func(l *runtime.LayerSpec) {
		if l.Op == runtime.OpDropout {
			l.P, l.MC = p, true
			found = true
		}
	})
	if !found {
		var out []runtime.LayerSpec
		for i, l := range spec.Layers {
			out = append(out, l)
			switch l.Op {
			case runtime.OpReLU, runtime.OpTanh, runtime.OpSigmoid, runtime.OpGELU:
				if i < len(spec.Layers)-1 {
					out = append(out, runtime.LayerSpec{Name: l.Name + ".dropout", Op: runtime.OpDropout, P: p, MC: true})
					found = true
				}
			}
		}
		spec.Layers = out
	}
	if !found {
		return fmt.Errorf("train: posterior mc_dropout: the architecture has neither Dropout layers nor a hidden activation to put one after")
	}
	if err := spec.Validate(); err != nil {
		return fmt.Errorf("train: posterior mc_dropout: %w", err)
	}
	return nil
}

func (t *Trainer) buildOptimizer() error {
	c := &t.Config
	t.params = nil
	for _, n := range t.Nets {
		t.params = append(t.params, n.Trainable()...)
	}
	wd := c.WeightDecay
	if c.Posterior == "laplace" && wd == 0 {
		wd = 1 / (float64(t.Train.N) * c.PriorPrecision) // the MAP of the prior N(0, α⁻¹I)
	}
	// Parameter groups with their own learning-rate factor; the rest keep LR. With every factor
	// 1 there is one group, as before the factors existed.
	factors := []struct {
		f     float64
		match func(name string) bool
	}{
		// The Cholesky factors of full-covariance posteriors.
		{c.ScaleTrilLR, func(name string) bool { return strings.HasSuffix(name, "scale_tril") }},
		// The mean-field standard deviations of ffg layers.
		{c.SDLR, func(name string) bool {
			field := name[strings.LastIndexByte(name, '.')+1:]
			return field == "_weight_sd" || field == "_bias_sd"
		}},
	}
	rest := t.params
	var extra []optim.Group[float32]
	for _, fc := range factors {
		if fc.f == 1 {
			continue
		}
		var kept, own []*autodiff.Param[float32]
		for _, p := range rest {
			if fc.match(p.Name) {
				own = append(own, p)
			} else {
				kept = append(kept, p)
			}
		}
		rest = kept
		if len(own) > 0 {
			extra = append(extra, optim.Group[float32]{Params: own, LR: c.LR * fc.f, WeightDecay: wd})
		}
	}
	groups := append([]optim.Group[float32]{{Params: rest, LR: c.LR, WeightDecay: wd}}, extra...)
	if c.Posterior == "vifa" {
		// VIFA trains q's c, F and log ψ with its own Adam (train/fa); the network only computes
		// the likelihood's gradient. An optimizer without parameters holds no moments (2 float32
		// values per parameter) and checkpoints none, as before.
		groups = []optim.Group[float32]{{LR: c.LR, WeightDecay: wd}}
	}
	var err error
	if c.Optimizer == "adam" {
		ac := optim.DefaultAdamConfig()
		ac.Eps = c.AdamEps
		t.opt, err = optim.NewAdam(groups, ac)
	} else {
		t.opt, err = optim.NewSGD(groups, optim.SGDConfig{Momentum: c.Momentum})
	}
	return err
}

// Spec returns the runtime description of the deployed model: the network's (each member's for
// ensemble_w), or for the factor-analysis posteriors the network with every Linear and Conv2d
// layer of kind "fa" and the Spec.FA section.
func (t *Trainer) Spec() runtime.Spec {
	if t.fa != nil {
		return t.fa.spec
	}
	return *t.spec
}

// Model builds the deployed runtime model from the current parameters (every member for
// ensemble_w, runtime.Spec.Members; the FA posterior for vifa, fa_em and fa_sga).
func (t *Trainer) Model() (*runtime.Model, error) {
	if t.fa != nil {
		return t.fa.runtimeModel()
	}
	if len(t.Nets) > 1 {
		return t.ensembleModel()
	}
	return t.Nets[0].Model()
}

// RemainingSteps returns the number of steps (vifa: updates) left to train: those of the epochs
// not completed, less the minibatches an interrupted epoch already trained.
func (t *Trainer) RemainingSteps() int64 {
	return int64(t.Config.TotalEpochs()-t.Epoch)*int64(t.StepsPerEpoch()) - int64(t.batch)
}

// Batches returns the number of minibatches per epoch.
func (t *Trainer) Batches() int { return (t.Train.N + t.Config.BatchSize - 1) / t.Config.BatchSize }

// Run trains until Config.TotalEpochs epochs are complete (Epochs, then the fine-tuning epochs
// after prune_z), evaluating and checkpointing as configured. When ctx is cancelled it writes a
// checkpoint of the current state — with the interrupted epoch's position, from which Resume goes
// on as if the run had not stopped — and returns ctx's error.
func (t *Trainer) Run(ctx context.Context, h Hooks) error {
	c := &t.Config
	if t.hmc != nil {
		return t.runHMC(ctx, h)
	}
	if t.Epoch >= c.TotalEpochs() && c.Posterior != "laplace" {
		// Nothing would run, so nothing would be written: the caller would report an output
		// that does not exist.
		if t.batch > 0 {
			return fmt.Errorf("train: the checkpoint stopped inside epoch %d, beyond the %d epochs asked for: ask for at least %d", t.Epoch+1, c.TotalEpochs(), t.Epoch+1)
		}
		if t.Epoch > 0 {
			return fmt.Errorf("train: the checkpoint has %d of the %d epochs already: nothing to train (ask for more epochs)", t.Epoch, c.TotalEpochs())
		}
		return fmt.Errorf("train: epochs 0: nothing to train (posterior laplace with init_from fits without training)")
	}
	// Steps of the last evaluation and checkpoint (the gates of EvalMinSteps and
	// CheckpointMinSteps): a resumed run evaluates where the uninterrupted one would (its history
	// has the step of every evaluation) and counts checkpoints from the one it resumed.
	evalStep, ckptStep := int64(0), t.Step
	for _, m := range t.History {
		if m.Test != nil {
			evalStep = m.Step
		}
	}
	saved := int64(-1) // the step of this run's last per-epoch checkpoint
	for t.Epoch < c.TotalEpochs() {
		if c.finetuning(t.Epoch) && !t.finetuning {
			// Resuming inside the fine-tuning phase: after its first epoch, or in it.
			if err := t.startFinetune(t.Epoch > c.Epochs || t.finetuneBegun); err != nil {
				return err
			}
			t.finetuning = true
		}
		em, err := t.runEpoch(ctx, h)
		if err != nil {
			if ctx.Err() != nil {
				path := t.EpochCheckpointPath()
				if saved != t.Step { // else the epoch's checkpoint, just written, is this state
					if werr := t.SaveCheckpoint(path); werr != nil {
						return errors.Join(err, werr)
					}
				}
				if h.Checkpoint != nil {
					h.Checkpoint(path)
				}
			}
			return err
		}
		last := t.Epoch == c.TotalEpochs()
		if t.Test.N > 0 && (last || due(t.Epoch, c.EvalEvery, t.Step-evalStep, c.EvalMinSteps)) {
			if em.Test, err = t.Evaluate(); err != nil {
				return err
			}
			evalStep = t.Step
		}
		t.History = append(t.History, em)
		if h.Epoch != nil {
			h.Epoch(em)
		}
		if last && c.Posterior == "laplace" {
			// The MAP network goes to the per-epoch checkpoint (which --resume takes); finishLaplace
			// writes Out and the model.
			if err := t.SaveCheckpoint(t.EpochCheckpointPath()); err != nil {
				return err
			}
			if h.Checkpoint != nil {
				h.Checkpoint(t.EpochCheckpointPath())
			}
		} else if last {
			// The checkpoint (Out) and the model, both or neither.
			if err := t.saveFinal(h); err != nil {
				return err
			}
		} else if due(t.Epoch, c.CheckpointEvery, t.Step-ckptStep, c.CheckpointMinSteps) {
			ckptStep = t.Step
			path := t.EpochCheckpointPath()
			if err := t.SaveCheckpoint(path); err != nil {
				return err
			}
			saved = t.Step
			if h.Checkpoint != nil {
				h.Checkpoint(path)
			}
		}
	}
	if c.Posterior == "laplace" {
		return t.finishLaplace(ctx, h)
	}
	return nil
}

// trainingFloats is the float32 values a run holds, at its peak, per value denseWeights counts
// (each layer's weights and biases or, where more, what its posterior declares): the
// parameters, their gradients and Adam's moments, the sampled weights of every train_samples
// sample with the graph kept for the backward pass, the posterior's own state (an FA's factors
// and its learner's statistics, swag's deviations), and the checkpoint and model files' tensors,
// which are staged in memory before they are written (an FA learner's state is generated into
// the file, not staged). Measured as the peak live heap of one epoch of toy1d:1000 (batch 100)
// on mlp:1-1000-1000-1 and mlp:1-2000-2000-1 (1 M and 4 M weights; float32 values per counted
// value): deterministic 13, mc_dropout 11, laplace 21, ensemble_w 10 per member (3 members: 30),
// ffg_w 16 (17 with 1 M; train_samples 4: 24), inducing 16 (train_samples 4: 54), swag 35, 62,
// 98 (latent_dim 1, 4, 8; 25, 45, 62 since the FA state is not staged), and for latent_dim 1, 2,
// 4, 8: vifa 50, 61, 84, 131 (its float64 state: c, ψ, log ψ, their gradients, the sample θ, z
// and its gradient, Adam's moments of c and log ψ, 24 values; F, its gradient and its moments,
// 8 per latent dimension; at the end of an epoch the evaluation's runtime model, 3 + K, and the
// model's float32 tensors, 2 + K; with fa_average_epochs the average of c, F and log ψ, 4 + 2K
// more: 57 at latent_dim 1, 151 at 8), fa_em 37, 47, 70, 112 and fa_sga 35, 43, 62, 99 (the
// online fit's float64 running mean, ψ, the iterate's deviation, d̄² and the observed iterate,
// 10; F, Ā, Cᵀ and a D×K scratch, 8 per latent dimension; the network with Adam, 4). The
// factors below are those plus about 15 %.
func trainingFloats(c *Config, members int) int64 {
	s := int64(max(c.TrainSamples, 1))
	k := int64(max(c.LatentDim, 0))
	switch c.Posterior {
	case "vifa":
		if c.FAAverageEpochs > 0 {
			return 50 + 15*k
		}
		return 44 + 13*k
	case "fa_em", "fa_sga":
		return 28 + 13*k
	case "swag":
		return 30 + 10*k
	case "laplace":
		return 24
	case "inducing":
		return 4 + 15*s
	case "ffg_w", "fcg_w", "bernstein_last":
		return 14 + 4*s
	}
	// deterministic, mc_dropout, ensemble_w (members networks), and any other point network.
	return 4 + 11*int64(members)
}

// trainingOverhead is the heap a run holds beyond trainingFloats' per-weight values (the data,
// evaluation's and the kernels' buffers, per-layer and per-sample intermediates): the peak live
// heap's intercept over the network's size, 18 to 20 MB for deterministic and ffg_w (between
// mlp:1-1000-1000-1 and mlp:1-2000-2000-1), 46 MB for inducing (between mlp:1-600-600-1 and
// mlp:1-2000-2000-1), 79 MB for inducing with train_samples 4.
const trainingOverhead = 64 << 20

// trainingMemory is checkTrainingMemory's estimate of a run's peak live heap in bytes:
// trainingOverhead and trainingFloats float32 values per value denseWeights counts; ok is false
// when it exceeds 2⁶².
func trainingMemory(spec *runtime.Spec, c *Config, members int) (need, w int64, ok bool) {
	w, ok = denseWeights(spec.Layers)
	per := 4 * trainingFloats(c, members)
	if !ok || w > (1<<62-trainingOverhead)/per {
		return 0, w, false
	}
	return w*per + trainingOverhead, w, true
}

// checkTrainingMemory refuses, before anything is allocated, a network whose weights would not
// fit in limit bytes while training (an architecture string can declare any widths:
// mlp:1-1000000000-1 used to end in an out-of-memory crash). members networks are trained
// (Ensemble-W); trainingFloats gives what each posterior holds per weight. The estimate bounds
// the peak live heap; SetGoMemoryLimit keeps the Go runtime's heap (which grows to twice the
// live heap by GOGC) to the same limit.
func checkTrainingMemory(spec *runtime.Spec, c *Config, members int, limit int64) error {
	need, w, ok := trainingMemory(spec, c, members)
	if ok && need <= limit {
		return nil
	}
	per := 4 * trainingFloats(c, members)
	what := "more than 2⁶² parameters"
	if w > 0 && w < 1<<62 {
		what = fmt.Sprintf("%d parameters (%.1f GiB as float32)", w, float64(w)*4/(1<<30))
	}
	// The count is the posterior's tensors where they outnumber the weights (an inference
	// config's inducing matrices): name the posterior and the config, not the arch alone.
	post := "posterior " + c.Posterior
	if strings.TrimSpace(c.Inference.JSON) != "" {
		post += " with its inference config"
	}
	return fmt.Errorf("train: arch %s, %s: %s (the weights and biases, or the posterior's tensors where more); training it needs about %d× that (parameters, gradients, optimizer moments, sampled weights per train_samples sample, the posterior's state, the staged checkpoint and model files) and 64 MiB, above the memory available (%.1f GiB: the machine's, its cgroup's or what ulimit -v leaves)",
		clipArch(c.Arch), post, what, per/4, float64(limit)/(1<<30))
}

// activationFactor bounds the float32 values a training step holds per activation value of the
// forward pass: the value, its gradient, and the local reparameterisation's and the loss's
// intermediates (measured: about 2.4 for a deterministic convolution).
const activationFactor = 4

// checkActivationMemory refuses, before the first step, a batch whose activations would not fit
// in limit bytes: perExample values a forward pass (ActivationValues) for batch_size examples
// (and fsvi's context points) × train_samples samples × members networks, each kept with its
// gradient for the backward pass. The parameters alone pass checkTrainingMemory; a wide
// convolution at a large batch does not (196 k parameters once asked for 5 GB in one block).
func checkActivationMemory(perExample int64, c *Config, members int, limit int64) error {
	rows := int64(c.BatchSize)
	if c.Objective == "fsvi" {
		rows += int64(c.ContextSize)
	}
	per := rows * int64(max(c.TrainSamples, 1)) * int64(members) * activationFactor * 4
	if perExample <= limit/per {
		return nil
	}
	return fmt.Errorf("train: arch %s: a step holds about %.1f GiB of activations (%d values per example × batch %d × %d sample(s)), above the memory available (%.1f GiB: the machine's, its cgroup's or what ulimit -v leaves): lower --batch-size",
		clipArch(c.Arch), float64(perExample)*float64(per)/(1<<30), perExample, rows, max(c.TrainSamples, 1), float64(limit)/(1<<30))
}

// checkEvalMemory refuses, before training, a test set (with the OOD set, nil if none) whose
// predictions by a network of outputs outputs would not fit in limit bytes (eval.CheckMemory;
// evaluation holds both sets' predictions at once): a CSV of 20 000 class names made every
// test row's prediction 20 000 values, and evaluation once ran out of memory after training.
func checkEvalMemory(test, ood *data.Dataset, outputs int, limit int64) error {
	what, n := "the test set", 0
	if test != nil {
		what, n = "the test set "+test.Name, test.N
	}
	if ood != nil && ood.N > 0 {
		what += " and the OOD set " + ood.Name
		n += ood.N
	}
	if err := eval.CheckMemory(what, n, outputs, limit); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	return nil
}

// clipArch quotes an architecture for an error message: a short one whole, a long one (a JSON
// architecture given inline) by its first 64 bytes.
func clipArch(a string) string {
	if len(a) <= 64 {
		return strconv.Quote(a)
	}
	return strconv.Quote(a[:64]) + fmt.Sprintf("… (%d bytes)", len(a))
}

// denseWeights counts the weights and biases of the Linear and Conv2d layers (residual blocks
// included) — or, where more, the values their posterior declares (runtime.LayerTensors) — and
// whether the count fits in an int64.
func denseWeights(layers []runtime.LayerSpec) (int64, bool) {
	const huge = int64(1) << 62
	var total int64
	mul := func(vals ...int) (int64, bool) {
		p := int64(1)
		for _, v := range vals {
			if v < 0 || (v > 0 && p > huge/int64(v)) {
				return 0, false
			}
			p *= int64(v)
		}
		return p, true
	}
	for i := range layers {
		l := &layers[i]
		var n int64
		ok := true
		switch l.Op {
		case runtime.OpLinear:
			n, ok = mul(l.Out, l.In+1)
		case runtime.OpConv2d:
			n, ok = mul(l.Out, l.In*max(l.Kernel[0], 1)*max(l.Kernel[1], 1)+1)
		case runtime.OpResidual:
			b, ok1 := denseWeights(l.Body)
			s, ok2 := denseWeights(l.Shortcut)
			n, ok = b+s, ok1 && ok2 && b <= huge-s
		}
		if ok && (l.Op == runtime.OpLinear || l.Op == runtime.OpConv2d) {
			// The posterior's own tensors (an Ensemble-U's K inducing matrices, a full
			// covariance's factor) may outnumber the weights: count what the schema declares.
			var decl int64
			for _, d := range runtime.LayerTensors(l) {
				m, ok1 := mul(d.Shape...)
				if !ok1 || decl > huge-m {
					return 0, false
				}
				decl += m
			}
			n = max(n, decl)
		}
		if !ok || total > huge-n {
			return 0, false
		}
		total += n
	}
	return total, true
}

// due reports whether the end of epoch (1-based count of completed epochs) is selected by
// "every" epochs (0: never) and at least minSteps steps have run since the last such event.
func due(epoch, every int, steps int64, minSteps int) bool {
	return every > 0 && epoch%every == 0 && steps >= int64(minSteps)
}

// cosine is lr_schedule cosine over the run's training steps (epochs × batches; fine-tuning
// epochs keep their own learning rate).
func (t *Trainer) cosine() optim.CosineLR {
	return optim.CosineLR{Total: t.Config.Epochs * t.Batches(), Alpha: t.Config.LRMinFactor}
}

// runEpoch trains one epoch (epoch index t.Epoch) and advances t.Epoch.
func (t *Trainer) runEpoch(ctx context.Context, h Hooks) (EpochMetrics, error) {
	if t.fa != nil && t.fa.vifa != nil {
		return t.runVIFAEpoch(ctx, h)
	}
	c := &t.Config
	e := t.Epoch
	b0 := t.batch // a resumed interrupted epoch goes on from its next minibatch
	lrf := optim.MultiStepLR{Milestones: c.Milestones, Gamma: c.Gamma}.Factor(e)
	if c.LRSchedule == "cosine" {
		lrf = t.cosine().Factor(t.Step - int64(b0)) // the epoch's first step's; then set before every step
	}
	if c.finetuning(e) {
		lrf = c.finetuneLR() / c.LR
	}
	t.opt.SetLRFactor(lrf)
	klw := c.KLWeight(e)
	em := EpochMetrics{Epoch: e + 1, LR: c.LR * lrf, KLWeight: klw,
		Loss: t.partial.Loss, NLL: t.partial.NLL, KL: t.partial.KL}
	perm := rand.New(rand.NewPCG(c.Seed, uint64(e)+1)).Perm(t.Train.N)
	nb := t.Batches()
	start := time.Now()
	steps := 0
	for b := b0; b < nb; b++ {
		if err := ctx.Err(); err != nil {
			t.interrupted(b, em, start)
			return em, err
		}
		idx := perm[b*c.BatchSize : min((b+1)*c.BatchSize, t.Train.N)]
		if c.LRSchedule == "cosine" && !c.finetuning(e) {
			lrf = t.cosine().Factor(t.Step)
			t.opt.SetLRFactor(lrf)
		}
		loss, nll, kl, err := t.step(idx, klw)
		if err != nil {
			if t.fs != nil {
				err = t.fs.explain(err, &t.Config, t.Step-t.startStep)
			}
			return em, fmt.Errorf("train: epoch %d step %d: %w", e+1, t.Step, t.explainFlows(err))
		}
		steps++
		if t.fa != nil && e >= c.FAStartEpoch && t.Step%int64(c.FAEvery) == 0 {
			if err := t.fa.observe(); err != nil {
				return em, fmt.Errorf("train: epoch %d step %d: %w", e+1, t.Step, err)
			}
		}
		em.Loss += loss
		em.NLL += nll
		em.KL += kl
		if h.Step != nil {
			h.Step(StepInfo{Epoch: e + 1, Batch: b + 1, Batches: nb, Step: t.Step, Loss: loss, NLL: nll, KL: kl, KLWeight: klw, LR: c.LR * lrf})
		}
	}
	if c.Posterior == "bernstein_last" {
		// The epoch's last update is checked by no later step: before evaluation and the
		// checkpoint, which would otherwise fail in the runtime without naming lr.
		for _, n := range t.Nets {
			if err := n.CheckFlows(); err != nil {
				return em, fmt.Errorf("train: epoch %d step %d: %w", e+1, t.Step, t.explainFlows(err))
			}
		}
	}
	// The epoch's last update is checked by no later step's loss, and a value beyond what Resume
	// accepts can leave the loss finite: one pass over the values, before evaluation and the
	// checkpoint, fails the run here, at the epoch that made it, instead of at a save.
	if err := t.checkValues(t.opt.SharedState()); err != nil {
		return em, t.explainRange(e+1, err)
	}
	t.finishEpoch(&em, nb, steps, start)
	return em, nil
}

// explainFlows adds to err, when posterior bernstein_last's flows have parameters out of range
// (bfvi.ErrParamRange) after this run's updates, that the learning rate is the cause: lr 1e6
// failed after the first update with only "bfvi: flow scale parameters a₁′ = -999994.0625,
// a₂′ = 999999 underflow". Other errors, and parameters out of range before any update (they
// come from a checkpoint or init_from), are returned as they are.
func (t *Trainer) explainFlows(err error) error {
	updates := t.Step - t.startStep
	if !errors.Is(err, bfvi.ErrParamRange) || updates <= 0 {
		return err
	}
	c := &t.Config
	return fmt.Errorf("%w (after %d update(s) at learning rate lr %g, optimizer %s: lr is too large for posterior bernstein_last — lower it; the flows' parameters start at order 1, an update moves each by about lr (adam) or lr × its gradient (sgd), and a scale parameter below about −745 makes its scale softplus(a′) 0)",
		err, updates, c.LR, c.Optimizer)
}

// interrupted records, for the checkpoint written on an interrupt, that the epoch stopped before
// its minibatch (vifa: update) b with em's sums, and the training time since start.
func (t *Trainer) interrupted(b int, em EpochMetrics, start time.Time) {
	t.TrainSeconds += time.Since(start).Seconds()
	t.batch, t.partial = b, EpochPartial{Loss: em.Loss, NLL: em.NLL, KL: em.KL}
}

// finishEpoch closes an epoch of n updates, of which this run took steps since start: it
// advances Epoch and the training time and turns em's sums into averages.
func (t *Trainer) finishEpoch(em *EpochMetrics, n, steps int, start time.Time) {
	d := time.Since(start).Seconds()
	t.TrainSeconds += d
	t.Epoch++
	t.batch, t.partial = 0, EpochPartial{}
	em.Loss /= float64(n)
	em.NLL /= float64(n)
	em.KL /= float64(n)
	em.Step = t.Step
	em.TrainSeconds = t.TrainSeconds
	if d > 0 {
		em.StepsPerSecond = float64(steps) / d
	}
}

// gatherBatch copies the training examples idx into t.xb and their labels into t.yb
// (classification) or targets into t.tb (regression).
func (t *Trainer) gatherBatch(idx []int) {
	d := t.Train
	t.xb, t.yb, t.tb = t.xb[:0], t.yb[:0], t.tb[:0]
	for _, i := range idx {
		t.xb = append(t.xb, d.Row(i)...)
		if d.Labels != nil {
			t.yb = append(t.yb, d.Labels[i])
		} else {
			t.tb = append(t.tb, d.Targets[i*d.Outputs:(i+1)*d.Outputs]...)
		}
	}
}

// step runs one optimizer step on the examples idx and returns the objective, its NLL and KL.
func (t *Trainer) step(idx []int, klw float64) (loss, nll, kl float64, err error) {
	c := &t.Config
	d := t.Train
	nb := len(idx)
	t.gatherBatch(idx)
	shape := append([]int{nb}, d.Shape...)
	tp := t.tape
	var lin *fsvi.Linearization
	if t.fs != nil && !t.fs.lastLayer() {
		// The linearisation's reverse passes use the tape and the parameters' gradients: before
		// the step's own.
		if lin, err = t.fs.linearize(t); err != nil {
			return 0, 0, 0, err
		}
		if err = t.fs.prepare(t, lin); err != nil {
			return 0, 0, 0, err
		}
	}
	tp.Reset()
	t.opt.ZeroGrad()
	var total *autodiff.Var[float32]
	S := c.TrainSamples
	for k, n := range t.Nets {
		n.Begin()
		n.Seed(c.Seed, t.Step*int64(len(t.Nets))+int64(k))
		x := tp.Const(t.xb, shape...)
		var nllV *autodiff.Var[float32]
		for s := 0; s < S; s++ {
			out := n.Forward(tp, x, true)
			var l *autodiff.Var[float32]
			if d.Labels != nil {
				l = tp.CrossEntropy(out, t.yb)
			} else {
				l = tp.GaussianNLL(out, tp.Const(t.tb, nb, d.Outputs), tp.Scalar(float32(c.NoisePrecision)))
			}
			if nllV == nil {
				nllV = l
			} else {
				nllV = tp.Add(nllV, l)
			}
		}
		nllV = tp.Scale(nllV, 1/float32(S))
		obj := nllV
		var klV *autodiff.Var[float32]
		switch {
		case t.fs == nil:
			klV = n.KL(tp)
		case t.fs.lastLayer():
			if klV, err = t.fs.lastLayerKL(t, tp); err != nil {
				return 0, 0, 0, err
			}
		}
		if klV != nil {
			obj = tp.Add(nllV, tp.Scale(klV, float32(klw*c.Temperature/float64(d.N))))
			kl += float64(klV.Item())
		}
		if total == nil {
			total = obj
		} else {
			total = tp.Add(total, obj)
		}
		nll += float64(nllV.Item())
	}
	if err := tp.Backward(total); err != nil {
		return 0, 0, 0, err
	}
	loss = float64(total.Item())
	if t.fs != nil && !t.fs.lastLayer() {
		w := klw * c.Temperature / float64(d.N)
		if kl, err = t.fs.addKLGrad(t, lin, w); err != nil {
			return 0, 0, 0, err
		}
		loss += w * kl
	}
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		if t.Step == t.startStep {
			// No update has been made: the learning rate is not the cause.
			first := "the first step"
			if t.resumed != "" {
				first = "the first step after resuming"
			}
			return 0, 0, 0, fmt.Errorf("the loss is %v at %s, before any update: %s", loss, first, t.overflowHint())
		}
		return 0, 0, 0, fmt.Errorf("the loss is %v (lower the learning rate?)", loss)
	}
	if c.ClipValue > 0 {
		if err := optim.ClipGradValue(t.params, c.ClipValue); err != nil {
			return 0, 0, 0, err
		}
	}
	if c.Clip > 0 {
		if _, err := optim.ClipGradNorm(t.params, c.Clip); err != nil {
			return 0, 0, 0, err
		}
	}
	if t.mask != nil {
		t.mask.zeroGrads()
	}
	t.opt.Step()
	if t.mask != nil {
		t.mask.zeroValues()
	}
	t.Step++
	k := float64(len(t.Nets))
	return loss / k, nll / k, kl / k, nil
}

// overflowHint says where a non-finite loss before any update comes from: the training data's
// largest magnitudes, and init_from's weights when there are some.
func (t *Trainer) overflowHint() string {
	d := t.Train
	maxAbs := func(v []float32) float64 {
		m := 0.0
		for _, x := range v {
			m = max(m, math.Abs(float64(x)))
		}
		return m
	}
	h := fmt.Sprintf("the training data %s has inputs up to |x| = %.3g", d.Name, maxAbs(d.X))
	if d.Targets != nil {
		h += fmt.Sprintf(" and targets up to |y| = %.3g", maxAbs(d.Targets))
	}
	if t.resumed != "" {
		return h + fmt.Sprintf(", the parameters come from checkpoint %s: values that overflow float32 arithmetic (rescale the data, or resume another checkpoint)", t.resumed)
	}
	if t.Config.InitFrom != "" {
		return h + fmt.Sprintf(", the weights come from init_from %s: values that overflow float32 arithmetic (rescale the data, or start from other weights)", t.Config.InitFrom)
	}
	return h + ": values that overflow float32 arithmetic (rescale the data)"
}

// PredictOptions are the runtime options evaluation uses. An ensemble_w run predicts with one
// sample per member (the deep-ensemble predictive), whatever TestSamples says.
func (t *Trainer) PredictOptions() runtime.Options {
	o := runtime.Options{Samples: t.Config.TestSamples, Seed: t.Config.Seed, MaxBatch: 100}
	if len(t.Nets) > 1 {
		o.Samples = len(t.Nets)
	}
	return o
}

// Evaluate predicts the test (and OOD) set through the runtime with the current parameters (an
// ensemble_w run through its ensemble model, as its model file predicts on the device).
func (t *Trainer) Evaluate() (*eval.Report, error) {
	m, err := t.Model()
	if err != nil {
		return nil, err
	}
	return eval.Evaluate(m, t.Test, t.OOD, t.PredictOptions())
}

// ensembleModel builds the runtime model of all the networks from the current parameters: for
// ensemble_w a model with runtime.Spec.Members = K, member k's tensors under
// runtime.MemberPrefix(k) (the form checkpoints store).
func (t *Trainer) ensembleModel() (*runtime.Model, error) {
	spec := *t.spec
	if len(t.Nets) > 1 {
		spec.Members = len(t.Nets)
	}
	ts := runtime.Tensors{}
	for k, n := range t.Nets {
		for name, v := range n.Tensors() {
			ts[runtime.MemberPrefix(k)+name] = v
		}
	}
	m, err := runtime.New(&spec, ts)
	if err != nil {
		return nil, fmt.Errorf("train: the ensemble does not build in the runtime: %w", err)
	}
	return m, nil
}
