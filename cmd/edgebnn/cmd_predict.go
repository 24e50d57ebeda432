package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/edgebnn/edgebnn/runtime"
)

const predictUsage = `Usage: edgebnn predict --model FILE --input PATH [flags]

Predicts with a model file and prints, for each input, the predictive
distribution and how far to trust it: the predicted class and its probability,
the total entropy of the predictive distribution, the expected entropy
(aleatoric) and the mutual information (epistemic uncertainty). Regression
models print the predictive mean and its total and epistemic standard deviations
(--json: the variances).

Inputs: a CSV file with one input per row (finite floats; the first row is a
header if --header is given or every field is a name: no number, none empty,
each with a letter), or a tensor
of shape [N, ...] in a safetensors file (--input-key, default "inputs").
Images are channel-major (C×H×W), flattened. Inputs are read and predicted
--batch at a time, and results printed as they come.

Inputs are raw values: the model's preprocessing (edgebnn inspect shows it;
edgebnn train records it, e.g. scale 1/255 for Fashion-MNIST pixels 0–255)
is applied first, unless --normalized says they are the network's inputs.

DECISION is the model's policy (edgebnn calibrate) on the prediction: act, or
abstain with the reason; without a policy every prediction is acted on. With
--adaptive, samples are drawn in rounds and an input stops once the policy's
decision would not change with all K (docs/ADAPTIVE.md).

With --json, one JSON object per line and input: classification keys index,
probs, pred, class_name (when the model names its classes), confidence,
entropy, expected_entropy, mutual_info, std, decision, reason, samples;
regression keys index, mean, var, epistemic_var, decision, reason, samples.`

// predictFlags are the options shared by predict and bench.
type predictFlags struct {
	model    *string
	samples  *int
	seed     *uint64
	strategy *string
	batch    *int
	threads  *int
	// mean, when set by a command that offers --mean, predicts at the posterior mean.
	mean *bool
	// adaptive, when set by a command that offers --adaptive, stops sampling early once the
	// model's policy has decided (runtime.Options.Adaptive).
	adaptive *bool
	// keepF16 loads the model with runtime.LoadOptions.KeepF16.
	keepF16 *bool
	// policySeed: no --seed was given, so a calibrated model predicts with the seed of its
	// policy's draws (runtime.Options.PolicySeed).
	policySeed bool
}

func addPredictFlags(fs interface {
	String(string, string, string) *string
	Int(string, int, string) *int
	Uint64(string, uint64, string) *uint64
	Bool(string, bool, string) *bool
}, batchDefault int) predictFlags {
	return predictFlags{
		model:    fs.String("model", "", "the model `FILE` (from edgebnn convert)"),
		samples:  fs.Int("samples", 0, "Monte Carlo samples `K` per prediction (default: the K the model's policy was fitted with, else 32;\nan ensemble of M networks: M, one per member; a mixture of M: 32 rounded up to a multiple of M;\na deterministic network: 1)"),
		seed:     fs.Uint64("seed", 0, "random `seed`; the same seed gives identical outputs (default: the seed a calibrated\nmodel's policy was fitted with, else 0)"),
		strategy: fs.String("strategy", "auto", "sampling `strategy`: weight, local or auto (auto: a calibrated model's policy's, if it records one)"),
		batch:    fs.Int("batch", batchDefault, "inputs processed together (`B`)"),
		threads:  fs.Int("threads", 1, "goroutines drawing the samples of a prediction in parallel (`T`); results do not depend on it"),
		keepF16:  fs.Bool("keep-f16", false, "keep the fp16 weights of deterministic layers as stored and widen them per use: half their memory, bit-identical outputs"),
	}
}

// load opens the model file of --model (with --keep-f16).
func (f predictFlags) load() (*runtime.Model, error) {
	return runtime.LoadWith(*f.model, runtime.LoadOptions{KeepF16: *f.keepF16})
}

// Limits of predict's and bench's numeric flags: larger values are refused (they would only
// allocate more, or run longer, without changing a result).
const (
	// maxSamplesFlag bounds --samples: as many as a model's policy may ask for.
	maxSamplesFlag = runtime.MaxPolicySamples
	// maxBatchFlag bounds --batch (the runtime's own limit).
	maxBatchFlag = 1 << 16
	// maxThreadsFlag bounds --threads.
	maxThreadsFlag = 256
	// maxKeptOutputs bounds the samples × batch × outputs values a multi-threaded predictor
	// keeps; predict lowers the batch to stay within it (results do not depend on the batch).
	maxKeptOutputs = 16 << 20
	// maxChunkValues bounds the input values predict reads and predicts at once (4 MiB of
	// float32): a --batch beyond it is lowered, which changes no result but keeps the inputs
	// and the predictor's activations, which grow with the batch, bounded.
	maxChunkValues = 1 << 20
)

// validate checks the flags' values; errors name the flag.
func (f predictFlags) validate() error {
	if *f.model == "" {
		return usagef("--model is required")
	}
	if _, err := runtime.ParseStrategy(*f.strategy); err != nil {
		return usagef("%v", err)
	}
	switch {
	case *f.samples < 0:
		return usagef("--samples must be positive (0: the model's default)")
	case *f.samples > maxSamplesFlag:
		return usagef("--samples %d is too large (at most %d)", *f.samples, maxSamplesFlag)
	case *f.batch < 1:
		return usagef("--batch must be at least 1")
	case *f.batch > maxBatchFlag:
		return usagef("--batch %d is too large (at most %d)", *f.batch, maxBatchFlag)
	case *f.threads < 1:
		return usagef("--threads must be at least 1")
	case *f.threads > maxThreadsFlag:
		return usagef("--threads %d is too large (at most %d)", *f.threads, maxThreadsFlag)
	}
	if f.mean != nil && *f.mean {
		// One pass at the posterior mean: nothing is sampled, so these would be ignored.
		switch {
		case *f.samples != 0:
			return usagef("--mean predicts once at the posterior mean: --samples does not apply")
		case f.adaptive != nil && *f.adaptive:
			return usagef("--mean predicts once at the posterior mean: --adaptive does not apply")
		case *f.strategy != "auto":
			return usagef("--mean predicts once at the posterior mean: --strategy does not apply")
		}
	}
	return nil
}

func (f predictFlags) open() (*runtime.Model, *runtime.Predictor, error) {
	if err := f.validate(); err != nil {
		return nil, nil, err
	}
	m, err := f.load()
	if err != nil {
		return nil, nil, err
	}
	p, err := f.predictor(m, *f.batch, *f.threads)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return m, p, nil
}

// predictor makes m's predictor with the flags' options and the given batch and threads.
func (f predictFlags) predictor(m *runtime.Model, batch, threads int) (*runtime.Predictor, error) {
	st, err := runtime.ParseStrategy(*f.strategy)
	if err != nil {
		return nil, usagef("%v", err)
	}
	adaptive := f.adaptive != nil && *f.adaptive
	if adaptive && m.Policy() == nil {
		return nil, usagef("--adaptive needs a model with a decision policy (edgebnn calibrate writes one); %s has none", *f.model)
	}
	return m.NewPredictor(runtime.Options{Samples: *f.samples, Seed: *f.seed, PolicySeed: f.policySeed, Strategy: st, MaxBatch: batch,
		Threads: threads, Mean: f.mean != nil && *f.mean, Adaptive: adaptive})
}

type classJSON struct {
	Index           int       `json:"index"`
	Probs           []float32 `json:"probs"`
	Pred            int       `json:"pred"`
	ClassName       string    `json:"class_name,omitempty"`
	Confidence      float32   `json:"confidence"`
	Entropy         float64   `json:"entropy"`
	ExpectedEntropy float64   `json:"expected_entropy"`
	MutualInfo      float64   `json:"mutual_info"`
	Std             []float32 `json:"std"`
	Decision        string    `json:"decision"`
	Reason          string    `json:"reason"`
	Samples         int       `json:"samples"`
}

type regressionJSON struct {
	Index        int       `json:"index"`
	Mean         []float32 `json:"mean"`
	Var          []float32 `json:"var"`
	EpistemicVar []float32 `json:"epistemic_var"`
	Decision     string    `json:"decision"`
	Reason       string    `json:"reason"`
	Samples      int       `json:"samples"`
}

func runPredict(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("predict")
	pf := addPredictFlags(fs, 32)
	input := fs.String("input", "", "inputs: a CSV or safetensors `PATH`")
	key := fs.String("input-key", "", "the tensor `NAME` in a safetensors input file")
	header := fs.Bool("header", false, "the CSV input's first row is a header (default: only when every field is a name: no number, none empty)")
	asJSON := fs.Bool("json", false, "print one JSON object per input")
	normalized := fs.Bool("normalized", false, "the inputs are already the network's inputs: do not apply the model's preprocessing")
	pf.adaptive = fs.Bool("adaptive", false, "draw samples in rounds and stop once the model's policy has decided (docs/ADAPTIVE.md)")
	pf.mean = fs.Bool("mean", false, "predict with the posterior mean network, no sampling (an ensemble or mixture: each member's mean once); mutual information is 0")
	if err := parseFlagsOnly(fs, predictUsage, args, stdout); err != nil {
		return err
	}
	pf.policySeed = !flagSet(fs, "seed")
	if *input == "" {
		return usagef("--input is required")
	}
	if err := pf.validate(); err != nil {
		return err
	}
	m, err := pf.load()
	if err != nil {
		return err
	}
	defer m.Close()
	src, err := openInputs(*input, *key, m.InputSize(), *header, inputLimits{})
	if err != nil {
		return err
	}
	defer src.Close()
	// The first chunk tells how many inputs there are when they are fewer than --batch: the
	// predictor's scratch follows the inputs, not the flag.
	batch := max(1, min(*pf.batch, maxChunkValues/m.InputSize()))
	xs, err := src.next(batch)
	if err != nil {
		return err
	}
	batch = max(1, min(batch, len(xs)/m.InputSize()))
	threads := min(*pf.threads, goruntime.GOMAXPROCS(0))
	if threads > 1 {
		k := m.PredictorSamples(runtime.Options{Samples: *pf.samples, Mean: *pf.mean})
		batch = max(1, min(batch, maxKeptOutputs/max(1, k*m.OutputSize())))
	}
	p, err := pf.predictor(m, batch, threads)
	if err != nil {
		return err
	}
	defer p.Close()
	if pol := m.Policy(); pol != nil && m.Stochastic() {
		// The defaults are the policy's draws; other ones are allowed, but the thresholds were
		// fitted to those: with fewer samples the uncertainty is estimated less well, and with
		// other draws the risk the policy was fitted to is not quite what it gets.
		if d := pol.Differences(p.Options()); d != nil {
			fmt.Fprintf(stderr, "note: %s's decision policy was fitted with other draws; predicting with %s (the defaults match)\n",
				*pf.model, strings.Join(d, ", "))
		}
		if *pf.mean && pol.MaxMutualInfo != nil {
			fmt.Fprintf(stderr, "note: --mean predicts with mutual information 0: the policy's max_mutual_info never abstains\n")
		}
	}
	out, err := newPredictionWriter(stdout, m, *asJSON, src)
	if err != nil {
		return err
	}
	defer out.close()
	preds := make([]runtime.Prediction, batch)
	norm := make([]float32, batch*m.InputSize())
	for len(xs) > 0 {
		for len(xs) > 0 {
			n := min(batch, len(xs)/m.InputSize())
			x := xs[:n*m.InputSize()]
			raw := x
			if !*normalized && m.Preprocessing() != nil {
				if err := m.Normalize(norm[:len(x)], x); err != nil {
					return err
				}
				x = norm[:len(x)]
			}
			if err := p.PredictBatch(x, preds[:n]); err != nil {
				var nf *runtime.NonFiniteError
				if errors.As(err, &nf) {
					// The runtime counts within the batch; the user counts inputs in the file.
					return fmt.Errorf("%s: input %d (counting from 0): %w (the network overflowed float32: are the inputs scaled as in training?)",
						*input, out.index+nf.Input, runtime.ErrNonFinite)
				}
				if ve, ok := errors.AsType[*runtime.InputValueError](err); ok {
					// Finite in the file (read checks that): the model's preprocessing overflowed.
					j := m.RawIndex(ve.Value)
					return fmt.Errorf("%s: input %d (counting from 0), value %d: %g becomes %s in the model's preprocessing (are the inputs on the scale it expects? --normalized if they are already normalised)",
						*input, out.index+ve.Input, j, raw[ve.Input*m.InputSize()+j], map[bool]string{true: "NaN", false: "infinite"}[ve.NaN])
				}
				return err
			}
			if err := out.write(preds[:n]); err != nil {
				return err
			}
			xs = xs[n*m.InputSize():]
		}
		if xs, err = src.next(batch); err != nil {
			return err
		}
	}
	return out.flush()
}

// predictionWriter prints predictions as they come, in predict's table or JSON format.
type predictionWriter struct {
	m     *runtime.Model
	w     io.Writer
	task  runtime.Task
	json  *json.Encoder
	table *alignedTable // classification: columns of known width, streamed
	spill *spillTable   // regression: widths follow the values, so the rows wait in a file
	index int
}

// classHeader is the classification table's header; the widths of the columns but the first
// two and the last are fixed by their formats (probabilities and entropies in nats below 100
// print in at most 7 characters, within the headers' widths); the last, DECISION, is text,
// left-aligned, so it needs no width.
var classHeader = []string{"INPUT", "CLASS", "CONFIDENCE", "ENTROPY", "EXPECTED ENTROPY", "MUTUAL INFO", "DECISION"}

func newPredictionWriter(w io.Writer, m *runtime.Model, asJSON bool, src inputSource) (*predictionWriter, error) {
	pw := &predictionWriter{m: m, w: w, task: m.Task()}
	switch {
	case asJSON:
		pw.json = json.NewEncoder(w)
	case m.Task() == runtime.Regression:
		pw.spill = newSpillTable(w, 2)
		pw.spill.leftLast = true // DECISION
		if err := pw.spill.row("INPUT", "MEAN", "STD", "EPISTEMIC STD", "DECISION"); err != nil {
			return nil, err
		}
	default:
		n, err := src.count()
		if err != nil {
			return nil, err
		}
		widths := make([]int, len(classHeader))
		for i, h := range classHeader {
			widths[i] = len(h)
		}
		widths[0] = max(widths[0], len(strconv.Itoa(n-1)))
		widths[1] = max(widths[1], len(strconv.Itoa(max(0, m.OutputSize()-1))))
		pw.table = &alignedTable{w: w, widths: widths, padding: 2, leftLast: true}
		if err := pw.table.row(classHeader...); err != nil {
			return nil, fmt.Errorf("writing table: %w", err)
		}
	}
	return pw, nil
}

func (pw *predictionWriter) write(preds []runtime.Prediction) error {
	for i := range preds {
		pr := &preds[i]
		idx := pw.index
		pw.index++
		switch {
		case pw.json != nil:
			var v any
			if pw.task == runtime.Regression {
				v = regressionJSON{idx, pr.Mean, pr.Var, pr.EpistemicVar, pr.Decision.String(), pr.Decision.Reason.String(), pr.Samples}
			} else {
				v = classJSON{idx, pr.Probs, pr.Class, pw.m.ClassName(pr.Class), pr.Confidence, pr.Entropy, pr.ExpectedEntropy,
					pr.MutualInfo, pr.Std, pr.Decision.String(), pr.Decision.Reason.String(), pr.Samples}
			}
			if err := pw.json.Encode(v); err != nil {
				return fmt.Errorf("writing JSON: %w", err)
			}
		case pw.spill != nil:
			for j := range pr.Mean {
				err := pw.spill.row(strconv.Itoa(idx), fmt.Sprintf("%.5g", pr.Mean[j]), fmt.Sprintf("%.4g", sqrt32(pr.Var[j])),
					fmt.Sprintf("%.4g", sqrt32(pr.EpistemicVar[j])), decisionText(pr.Decision))
				if err != nil {
					return err
				}
			}
		default:
			err := pw.table.row(strconv.Itoa(idx), strconv.Itoa(pr.Class), fmt.Sprintf("%.4f", pr.Confidence),
				fmt.Sprintf("%.4f", pr.Entropy), fmt.Sprintf("%.4f", pr.ExpectedEntropy), fmt.Sprintf("%.4f", pr.MutualInfo),
				decisionText(pr.Decision))
			if err != nil {
				return fmt.Errorf("writing table: %w", err)
			}
		}
	}
	return nil
}

// decisionText prints a decision for predict's table: "act", or "abstain (reason)".
func decisionText(d runtime.Decision) string {
	if d.Act {
		return "act"
	}
	return "abstain (" + d.Reason.String() + ")"
}

func (pw *predictionWriter) flush() error {
	if pw.spill != nil {
		return pw.spill.flush()
	}
	return nil
}

// close releases the spill file of an unfinished table.
func (pw *predictionWriter) close() {
	if pw.spill != nil {
		pw.spill.close()
	}
}

// spillTable prints a table whose column widths depend on all its rows, as text/tabwriter
// (AlignRight, cells terminated by tabs) would, without holding the rows in memory: they wait
// in an unlinked temporary file until flush. Without a temporary directory it holds them in
// memory. With leftLast the last column is left-aligned (alignedTable).
type spillTable struct {
	w        io.Writer
	padding  int
	leftLast bool
	f        *os.File
	bw       *bufio.Writer
	mem      bytes.Buffer
	widths   []int
	err      error
}

func newSpillTable(w io.Writer, padding int) *spillTable {
	t := &spillTable{w: w, padding: padding}
	if f, err := os.CreateTemp("", "edgebnn-predict-*.tsv"); err == nil {
		t.f, t.bw = f, bufio.NewWriter(f)
		_ = os.Remove(f.Name()) // gone once closed, whatever happens
	}
	return t
}

func (t *spillTable) row(cells ...string) error {
	if t.err != nil {
		return t.err
	}
	for len(t.widths) < len(cells) {
		t.widths = append(t.widths, 0)
	}
	var out io.Writer = &t.mem
	if t.bw != nil {
		out = t.bw
	}
	for i, c := range cells {
		t.widths[i] = max(t.widths[i], utf8.RuneCountInString(c))
		if _, t.err = io.WriteString(out, c+"\t"); t.err != nil {
			return fmt.Errorf("writing table: %w", t.err)
		}
	}
	if _, t.err = io.WriteString(out, "\n"); t.err != nil {
		return fmt.Errorf("writing table: %w", t.err)
	}
	return nil
}

func (t *spillTable) flush() error {
	defer t.close()
	if t.err != nil {
		return t.err
	}
	var in io.Reader = &t.mem
	if t.f != nil {
		if err := t.bw.Flush(); err != nil {
			return fmt.Errorf("writing table: %w", err)
		}
		if _, err := t.f.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("writing table: %w", err)
		}
		in = bufio.NewReader(t.f)
	}
	at := &alignedTable{w: t.w, widths: t.widths, padding: t.padding, leftLast: t.leftLast}
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if err := at.row(strings.Split(strings.TrimSuffix(sc.Text(), "\t"), "\t")...); err != nil {
			return fmt.Errorf("writing table: %w", err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("writing table: %w", err)
	}
	return nil
}

func (t *spillTable) close() {
	if t.f != nil {
		t.f.Close()
		t.f = nil
	}
}

// alignedTable writes rows of right-aligned cells in columns of fixed widths, each cell
// followed by padding spaces' worth of room: the layout text/tabwriter gives
// (tabwriter.AlignRight, cells terminated by tabs) when no cell is wider than its column,
// without holding the rows. A wider cell widens its column from its row on, so that columns
// are always separated by at least padding spaces (the rows already written stay as they are).
// With leftLast the last column is text, left-aligned: its cells follow padding spaces, and
// its width is not used.
type alignedTable struct {
	w        io.Writer
	widths   []int
	padding  int
	leftLast bool
	line     []byte
}

func (t *alignedTable) row(cells ...string) error {
	t.line = t.line[:0]
	for i, c := range cells {
		n := utf8.RuneCountInString(c)
		t.widths[i] = max(t.widths[i], n)
		if t.leftLast && i == len(t.widths)-1 {
			n = t.widths[i] // no alignment room: padding spaces only
		}
		for k := n; k < t.widths[i]+t.padding; k++ {
			t.line = append(t.line, ' ')
		}
		t.line = append(t.line, c...)
	}
	t.line = append(t.line, '\n')
	_, err := t.w.Write(t.line)
	return err
}

func sqrt32(v float32) float64 { return math.Sqrt(float64(v)) }
