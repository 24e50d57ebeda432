package train

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/clip"
	"github.com/edgebnn/edgebnn/internal/outfile"
	"github.com/edgebnn/edgebnn/internal/schema"
	"github.com/edgebnn/edgebnn/internal/strictjson"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/optim"
)

// TrainBlob is the name of the checkpoint blob holding the training state (State as JSON).
const TrainBlob = "train"

// OptimPrefix prefixes the names of optimizer-state tensors in a checkpoint.
const OptimPrefix = convert.TrainingStatePrefix

// State is what a checkpoint records besides the tensors: everything --resume needs.
type State struct {
	Config       Config         `json:"config"`
	Epoch        int            `json:"epoch"`
	Step         int64          `json:"step"`
	OptimSteps   int64          `json:"optim_steps"`
	TrainSeconds float64        `json:"train_seconds"`
	History      []EpochMetrics `json:"history,omitempty"`
	// Batch is the number of minibatches (vifa: updates) of epoch Epoch+1 trained before an
	// interrupt (0 at the end of an epoch), and Partial their sums of the loss, NLL and KL:
	// --resume goes on with the next minibatch, so that an interrupted run ends where an
	// uninterrupted one would.
	Batch   int           `json:"batch,omitempty"`
	Partial *EpochPartial `json:"partial,omitempty"`
	// TrainN is the number of training examples the run's minibatches are drawn from (since
	// session 35; 0 in older checkpoints): resuming inside an epoch needs the same set.
	TrainN int `json:"train_n,omitempty"`
	// Members is the number of networks (ensemble_w); member k > 0 is stored under
	// runtime.MemberPrefix(k) = "member<k>/", member 0 under the plain names, and the meta
	// blob's runtime.Spec has Members = K, so runtime.Load predicts with the whole ensemble.
	Members int `json:"members"`
	// HMC is posterior hmc's report: the sampler's settings and health, R̂ and bulk ESS.
	HMC *HMCReport `json:"hmc,omitempty"`
	// Laplace is posterior laplace's report once the approximation is fitted: the checkpoint
	// then holds the ffg network (the per-epoch checkpoint the MAP network).
	Laplace *LaplaceReport `json:"laplace,omitempty"`
}

// EpochCheckpointPath is where the per-epoch checkpoint goes: beside Config.Out, named
// <stem>.last<ext> (overwritten atomically every epoch).
func (t *Trainer) EpochCheckpointPath() string {
	out := t.Config.Out
	ext := filepath.Ext(out)
	return strings.TrimSuffix(out, ext) + ".last" + ext
}

// SaveCheckpoint writes the current state atomically to path: the "meta" blob (runtime.Spec
// JSON, so runtime.Load reads the file as a model), every tensor as f32 under its state_dict
// name, the optimizer state under "optim/...", and the "train" blob.
func (t *Trainer) SaveCheckpoint(path string) error { return t.save(path, true) }

// Preprocess is the input transformation of the training data — the scale its loader applied
// to the stored values (1/255 for Fashion-MNIST pixels) and its class names — which checkpoints
// and models record so that devices apply it to raw inputs; nil when there is none (the values
// were used as stored) or no data is loaded.
func (t *Trainer) Preprocess() *runtime.Preprocess {
	d := t.Train
	if d == nil || ((d.Scale == 0 || d.Scale == 1) && d.ClassNames == nil) {
		return nil
	}
	p := &runtime.Preprocess{Version: runtime.DeployVersion, ClassNames: d.ClassNames,
		Source: "edgebnn train: " + d.Name}
	if d.Scale != 1 {
		p.Scale = d.Scale
	}
	if len(d.ClassNames) != d.Classes {
		p.ClassNames = nil
	}
	return p
}

// ModelPath is where the deployable model goes: <stem>.model<ext> beside Config.Out.
func (t *Trainer) ModelPath() string {
	out := t.Config.Out
	ext := filepath.Ext(out)
	return strings.TrimSuffix(out, ext) + ".model" + ext
}

// saveFinal writes the checkpoint to Config.Out and the deployable model to ModelPath, calling
// h.Checkpoint after each file. Both are written in full (staged) before either replaces its
// file: a failure in either (a full disk) leaves both as they were, never a new checkpoint beside
// an old model.
func (t *Trainer) saveFinal(h Hooks) error {
	sc, err := t.stage(t.Config.Out, true)
	if err != nil {
		return err
	}
	sm, err := t.stage(t.ModelPath(), false)
	if err != nil {
		sc.Discard()
		return err
	}
	for _, s := range []*outfile.Staged{sc, sm} {
		if err := s.Commit(context.Background()); err != nil {
			sm.Discard()
			return fmt.Errorf("checkpoint: %w", err)
		}
		if h.Checkpoint != nil {
			h.Checkpoint(s.Out())
		}
	}
	return nil
}

// SaveModel writes the deployable model atomically to path: the checkpoint without optimizer
// state (what the converter and the boards take). Ensemble-W runs write every member.
func (t *Trainer) SaveModel(path string) error { return t.save(path, false) }

func (t *Trainer) save(path string, optimizer bool) error {
	s, err := t.stage(path, optimizer)
	if err != nil {
		return err
	}
	if err := s.Commit(context.Background()); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// stage writes the checkpoint (optimizer: with the optimizer's state) or the model for path into
// a staged file beside it (outfile.StageWrite), to be committed.
func (t *Trainer) stage(path string, optimizer bool) (*outfile.Staged, error) {
	if t.stageFault != nil {
		if err := t.stageFault(path); err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", path, err)
		}
	}
	// The optimizer's own buffers, not copies: they are only encoded (into new payloads).
	st := optim.State[float32]{Step: t.opt.Steps()}
	if optimizer && (t.fa == nil || t.fa.vifa == nil) && t.hmc == nil && t.lap == nil {
		st = t.opt.SharedState() // vifa's optimizer state is in the FA learner's; hmc and a fitted laplace have none
	}
	// Before anything is staged: a state Resume would refuse is not written, and the file at
	// path stays as it was.
	if err := t.checkValues(st); err != nil {
		return nil, t.notWritten(path, err)
	}
	w := format.NewWriter()
	spec := t.Spec()
	if len(t.Nets) > 1 {
		spec.Members = len(t.Nets) // ensemble_w: every member is part of the model
	}
	meta, err := json.Marshal(&spec)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: spec: %w", path, err)
	}
	if err := w.AddBlob(runtime.MetaBlob, meta, false); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if pre := t.Preprocess(); pre != nil {
		b, err := json.Marshal(pre)
		if err != nil {
			return nil, fmt.Errorf("checkpoint %s: preprocess: %w", path, err)
		}
		if err := w.AddBlob(runtime.PreprocessBlob, b, false); err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", path, err)
		}
	}
	nets := t.Nets
	if t.fa != nil {
		nets = nets[:1]
	}
	if t.fa != nil {
		if err := t.writeFA(w, path, optimizer); err != nil {
			if errors.Is(err, ErrParamRange) {
				return nil, t.notWritten(path, err)
			}
			return nil, err
		}
		nets = nil // the network's parameters are under optim/fa_net/ (fa_em, fa_sga, swag) or scratch (vifa)
	}
	// A model file leaves out the prior buffers that hold the spec's prior (the runtime rebuilds
	// them); a checkpoint keeps every tensor.
	omitPrior := func(string, []float32) bool { return false }
	if !optimizer {
		omitPrior = schema.PriorOmitter(&spec)
	}
	for _, n := range nets {
		for _, p := range n.Params() {
			if omitPrior(p.Name, p.Value) {
				continue
			}
			if _, err := w.AddTensor(p.Name, p.Shape, p.Value, format.AddOptions{}); err != nil {
				return nil, fmt.Errorf("checkpoint %s: tensor %q: %w", path, p.Name, err)
			}
		}
	}
	// In sorted order, not the map's (which Go randomises): the same state gives the same bytes.
	for _, name := range slices.Sorted(maps.Keys(st.Buffers)) {
		buf := st.Buffers[name]
		if _, err := w.AddTensor(OptimPrefix+name, []int{len(buf)}, buf, format.AddOptions{}); err != nil {
			return nil, fmt.Errorf("checkpoint %s: optimizer tensor %q: %w", path, name, err)
		}
	}
	cfg := t.Config
	if t.arch != "" {
		cfg.Arch = t.arch
	}
	s := State{Config: cfg, Epoch: t.Epoch, Step: t.Step, OptimSteps: st.Step, TrainSeconds: t.TrainSeconds,
		History: t.History, Members: max(1, len(nets)), HMC: t.HMC(), Laplace: t.lap}
	if t.batch > 0 {
		p := t.partial
		s.Batch, s.Partial = t.batch, &p
	}
	if t.Train != nil {
		s.TrainN = t.Train.N
	}
	blob, err := json.Marshal(&s)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: state: %w", path, err)
	}
	if err := w.AddBlob(TrainBlob, blob, true); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", path, err)
		}
	}
	// Staged beside path (committed: fsynced and renamed over it, then the directory fsynced): an
	// interrupted or failed save leaves the previous checkpoint as it was.
	staged, err := outfile.StageWrite(context.Background(), path, func(out io.Writer) error {
		_, err := w.WriteTo(out)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return staged, nil
}

// ErrParamRange is wrapped by the trainer's error for a value that a checkpoint or model would
// hold and that Resume or init_from would refuse: a network parameter (or a factor-analysis
// tensor) that is NaN or ±Inf or beyond ±MaxInitFromValue, or an optimizer state value that is
// NaN or ±Inf or, in an SGD momentum buffer, beyond ±optim.MaxMomentum. Training stops at the
// end of the epoch that made it (or at the save that finds it) and no file is written for that
// state: an earlier checkpoint stays as it was.
var ErrParamRange = errors.New("a checkpoint holding it would not resume")

// checkValues returns an error wrapping ErrParamRange naming the first value out of range (see
// ErrParamRange) among the network parameters a checkpoint of t holds and the optimizer state
// st, or nil. It only reads them.
func (t *Trainer) checkValues(st optim.State[float32]) error {
	nets := t.Nets
	if t.fa != nil {
		// fa_em, fa_sga: the network's parameters (under optim/fa_net/); vifa's are scratch. The
		// FA tensors are checked as writeFA generates them.
		nets = nil
		if t.fa.vifa == nil {
			nets = t.Nets[:1]
		}
	}
	for _, n := range nets {
		for _, p := range n.Params() {
			if i := nonFinite(p.Value); i >= 0 {
				return fmt.Errorf("tensor %q: value %d is %v: %w", p.Name, i, p.Value[i], ErrParamRange)
			}
			if i := outOfBound(p.Value); i >= 0 {
				return fmt.Errorf("tensor %q: value %d is %g, outside ±%.0e: %w", p.Name, i, p.Value[i], MaxInitFromValue, ErrParamRange)
			}
		}
	}
	if t.Config.Posterior == "bernstein_last" {
		// Flow parameters out of the flows' range (bfvi.ErrParamRange: not finite, or scales
		// that underflow) are refused by the runtime and by the next sampling pass, however
		// small they are: an interrupt just after the update that made them must not save them.
		for _, n := range nets {
			if err := n.CheckFlows(); err != nil {
				return fmt.Errorf("%w: %w", err, ErrParamRange)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(st.Buffers)) {
		buf := st.Buffers[name]
		if i := nonFinite(buf); i >= 0 {
			return fmt.Errorf("optimizer state %q: value %d is %v: %w", OptimPrefix+name, i, buf[i], ErrParamRange)
		}
		if !strings.HasPrefix(name, "momentum_buffer/") {
			continue
		}
		for i, x := range buf {
			if math.Abs(float64(x)) > optim.MaxMomentum {
				return fmt.Errorf("optimizer state %q: value %d is %g, outside ±%.0e: %w", OptimPrefix+name, i, x, optim.MaxMomentum, ErrParamRange)
			}
		}
	}
	return nil
}

// explainRange adds to err, from checkValues, where the run is (epoch, 1-based, and step) and,
// when this run's updates made the value, that the learning rate is the cause.
func (t *Trainer) explainRange(epoch int, err error) error {
	const kept = "nothing is written for this state; an earlier checkpoint stays as it was"
	c := &t.Config
	if updates := t.Step - t.startStep; updates > 0 && t.hmc == nil && t.lap == nil {
		err = fmt.Errorf("%w (after %d update(s) with optimizer %s: the updates diverged — lower lr (now %g); %s)",
			err, updates, c.Optimizer, c.LR, kept)
	} else {
		err = fmt.Errorf("%w (%s)", err, kept)
	}
	return fmt.Errorf("train: epoch %d step %d: %w", epoch, t.Step, err)
}

// notWritten is stage's error for path when the state holds a value out of range (err, from
// checkValues or writeFA).
func (t *Trainer) notWritten(path string, err error) error {
	epoch := t.Epoch // the last completed epoch's state or, stopped inside the next, that one's
	if t.batch > 0 {
		epoch++
	}
	return fmt.Errorf("checkpoint %s not written: %w", path, t.explainRange(epoch, err))
}

// ReadState reads a checkpoint's training state.
func ReadState(path string) (*State, error) {
	f, err := format.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readState(f, path)
}

// ErrNoState is wrapped by ReadState's error for a model file without a training state (a
// converted model, say), as opposed to a checkpoint whose state is bad.
var ErrNoState = errors.New("no training state")

func readState(f *format.File, path string) (*State, error) {
	b, err := f.Blob(TrainBlob)
	if errors.Is(err, format.ErrNotFound) {
		return nil, fmt.Errorf("checkpoint %s: %w (is it a converted model?): %w", path, ErrNoState, err)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: training state: %w", path, err)
	}
	// A checkpoint records its inference config and architecture inline; one that names files
	// instead would have them read (and quoted in errors) though the user named no such file.
	var raw struct {
		Config json.RawMessage `json:"config"`
	}
	// The history is decoded after the counters, entry by entry, so that its length is checked
	// against them before it is allocated: 15 million "{}" entries zstd to a few KB.
	var w struct {
		State
		History json.RawMessage `json:"history"`
	}
	if err := strictjson.Check(b, &w); err != nil {
		return nil, fmt.Errorf("checkpoint %s: training state: %w", path, err)
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("checkpoint %s: training state: %w", path, err)
	}
	var rawCfg struct {
		Inference json.RawMessage `json:"inference"`
	}
	if len(raw.Config) > 0 {
		if err := json.Unmarshal(raw.Config, &rawCfg); err != nil {
			return nil, fmt.Errorf("checkpoint %s: training state: %w", path, err)
		}
		// Every setting a checkpoint records must be one this trainer knows: one it would ignore
		// (from a newer edgebnn, or edited) would make a resumed run silently differ.
		strict := DefaultConfig()
		if err := strict.decode(raw.Config, "recorded in checkpoint "+path); err != nil {
			return nil, err
		}
	}
	var inf string
	if json.Unmarshal(rawCfg.Inference, &inf) == nil && !strings.HasPrefix(strings.TrimSpace(inf), "{") && strings.TrimSpace(inf) != "" {
		return nil, fmt.Errorf("checkpoint %s: its inference config names a file (%s), which checkpoints never do: not reading it", path, clip.Q(inf))
	}
	w.State = State{Config: DefaultConfig()}
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("checkpoint %s: training state: %w", path, err)
	}
	s := w.State
	if convert.ArchIsFile(s.Config.Arch) {
		return nil, fmt.Errorf("checkpoint %s: its architecture names a file (%s); checkpoints record it inline: not reading it", path, clip.Q(s.Config.Arch))
	}
	if err := s.checkCounters(); err != nil {
		return nil, fmt.Errorf("checkpoint %s: training state: %w", path, err)
	}
	if s.History, err = decodeHistory(w.History, &s); err != nil {
		return nil, fmt.Errorf("checkpoint %s: training state: %w", path, err)
	}
	for _, r := range []struct {
		name   string
		report any
	}{{"hmc", s.HMC}, {"laplace", s.Laplace}} {
		if err := checkMetrics(reflect.ValueOf(r.report), r.name); err != nil {
			return nil, fmt.Errorf("checkpoint %s: training state: %w", path, err)
		}
	}
	return &s, nil
}

// Bounds of a checkpoint's training state, which --resume continues from and eval reads.
const (
	// maxStateEpochs bounds the epoch count: epochs plus finetune_epochs, each at most MaxEpochs.
	maxStateEpochs = 2 * MaxEpochs
	// maxStepsPerEpoch bounds the steps of one epoch: a step takes at least one of at most
	// MaxExamples examples (hmc's epoch, MaxHMCChains × 2·MaxHMCIterations iterations, is
	// fewer). A state's step counts are at most (epoch + 1) × maxStepsPerEpoch — the epoch
	// interrupted by a checkpoint included — which stays below 2^53 (optim.MaxStep), so they
	// are exact as float64 and counting on from them cannot overflow.
	maxStepsPerEpoch = MaxExamples
	// maxMetric bounds the magnitude of every number the history and the reports hold: far
	// beyond any genuine metric, and low enough that their sums and differences — the plots'
	// axis ranges — stay finite (±1.7e308 made the plot's tick search spin for ever).
	maxMetric = 1e300
	// maxMetricList bounds every list and map inside one history entry or report: ECE bins
	// (eval.ECEBins), selective fractions, scores, hmc's chains (MaxHMCChains), Laplace's grid.
	maxMetricList = 64
)

// checkCounters checks the state's epoch, step counts and training time against the bounds
// above.
func (s *State) checkCounters() error {
	if s.Epoch < 0 || s.Epoch > maxStateEpochs {
		return fmt.Errorf("field \"epoch\" = %d out of range [0, %d]", s.Epoch, maxStateEpochs)
	}
	maxStep := (int64(s.Epoch) + 1) * maxStepsPerEpoch
	if s.Step < 0 || s.Step > maxStep {
		return fmt.Errorf("field \"step\" = %d out of range [0, %d] (at most %d steps in each of %d epochs)", s.Step, maxStep, int64(maxStepsPerEpoch), s.Epoch+1)
	}
	// The optimizer steps once per training step (and starts again from zero for fine-tuning).
	if s.OptimSteps < 0 || s.OptimSteps > s.Step {
		return fmt.Errorf("field \"optim_steps\" = %d out of range [0, %d] (the training steps)", s.OptimSteps, s.Step)
	}
	if !(s.TrainSeconds >= 0 && s.TrainSeconds <= maxMetric) {
		return fmt.Errorf("field \"train_seconds\" = %g out of range [0, %g]", s.TrainSeconds, maxMetric)
	}
	// An interrupted epoch's batches are steps taken since the last completed epoch.
	if s.Batch < 0 || int64(s.Batch) > min(s.Step, maxStepsPerEpoch) {
		return fmt.Errorf("field \"batch\" = %d out of range [0, %d] (the steps taken)", s.Batch, min(s.Step, maxStepsPerEpoch))
	}
	if (s.Batch > 0) != (s.Partial != nil) {
		return fmt.Errorf("field \"partial\" is %s with field \"batch\" = %d: want it exactly when batch > 0", map[bool]string{true: "given", false: "missing"}[s.Partial != nil], s.Batch)
	}
	if p := s.Partial; p != nil {
		for _, v := range []struct {
			name string
			x    float64
		}{{"loss", p.Loss}, {"nll", p.NLL}, {"kl", p.KL}} {
			if !(math.Abs(v.x) <= maxMetric) {
				return fmt.Errorf("field \"partial\": %q = %g is not a finite number within ±%g", v.name, v.x, maxMetric)
			}
		}
	}
	return nil
}

// decodeHistory decodes raw, the state's "history" (a JSON array or null), refusing more entries
// than the s.Epoch epochs trained (one entry each), before decoding them: entry i is epoch
// History[i].Epoch, increasing, at most s.Epoch, at a step at most s.Step, and every number in
// it within maxMetric.
func decodeHistory(raw json.RawMessage, s *State) ([]EpochMetrics, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, fmt.Errorf("field \"history\": not a list")
	}
	var h []EpochMetrics
	for dec.More() {
		i := len(h)
		if i >= s.Epoch {
			return nil, fmt.Errorf("field \"history\" has more than %d entries, one per epoch trained (epoch %d)", s.Epoch, s.Epoch)
		}
		var em EpochMetrics
		if err := dec.Decode(&em); err != nil {
			return nil, fmt.Errorf("field \"history\": entry %d: %w", i, err)
		}
		prev := 0
		if i > 0 {
			prev = h[i-1].Epoch
		}
		if em.Epoch <= prev || em.Epoch > s.Epoch {
			return nil, fmt.Errorf("field \"history\": entry %d is of epoch %d, want one in [%d, %d] (after epoch %d)", i, em.Epoch, prev+1, s.Epoch, prev)
		}
		if em.Step < 0 || em.Step > s.Step {
			return nil, fmt.Errorf("field \"history\": entry %d (epoch %d): step %d outside [0, %d]", i, em.Epoch, em.Step, s.Step)
		}
		if err := checkMetrics(reflect.ValueOf(&em).Elem(), fmt.Sprintf("history[%d]", i)); err != nil {
			return nil, err
		}
		h = append(h, em)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("field \"history\": %w", err)
	}
	return h, nil
}

// checkMetrics walks v, a decoded report (an EpochMetrics, HMCReport or LaplaceReport) named
// name, and refuses a number of magnitude above maxMetric (NaN, a JSON null, stays: an undefined
// metric) and a list or map of more than maxMetricList entries, naming the field.
func checkMetrics(v reflect.Value, name string) error {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if x := v.Float(); math.Abs(x) > maxMetric {
			return fmt.Errorf("field %q = %g: a metric of magnitude above %g", name, x, maxMetric)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return checkMetrics(v.Elem(), name)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			key := f.Name
			if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag != "" && tag != "-" {
				key = tag
			}
			if err := checkMetrics(v.Field(i), name+"."+key); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Len() > maxMetricList {
			return fmt.Errorf("field %q has %d entries, more than %d", name, v.Len(), maxMetricList)
		}
		for i := range v.Len() {
			if err := checkMetrics(v.Index(i), fmt.Sprintf("%s[%d]", name, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if v.Len() > maxMetricList {
			return fmt.Errorf("field %q has %d entries, more than %d", name, v.Len(), maxMetricList)
		}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
		for _, k := range keys {
			if err := checkMetrics(v.MapIndex(k), fmt.Sprintf("%s[%v]", name, k)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Resume rebuilds a run from a checkpoint: the configuration it recorded (after edit, which may
// change e.g. the number of epochs or the output path; nil keeps it), the data, the parameters
// and the optimizer state.
func Resume(path string, edit func(*Config) error) (*Trainer, error) {
	f, err := format.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := readState(f, path)
	if err != nil {
		return nil, err
	}
	cfg := s.Config
	// The counters come from the file: a negative epoch would buy a billion epochs of run time.
	// (readState has checked them against their bounds; here against the run's epochs.)
	if s.Epoch > cfg.TotalEpochs() {
		return nil, fmt.Errorf("checkpoint %s: training state epoch %d (of %d), step %d, optimizer steps %d, %g s: out of range", path, s.Epoch, cfg.TotalEpochs(), s.Step, s.OptimSteps, s.TrainSeconds)
	}
	if s.Laplace != nil {
		return nil, fmt.Errorf("checkpoint %s holds a fitted Laplace posterior, which is not resumed: resume the MAP network's per-epoch checkpoint (<stem>.last) or refit with --init-from and --epochs 0", path)
	}
	if cfg.Posterior == "hmc" {
		return nil, fmt.Errorf("checkpoint %s: posterior hmc cannot be resumed (the sampler keeps no state between runs; its draws are the model): start a new run", path)
	}
	if edit != nil {
		if err := edit(&cfg); err != nil {
			return nil, err
		}
	}
	t, err := newTrainer(cfg, nil, nil, false)
	if err != nil {
		// The settings are the checkpoint's (with the edits): say which file they came from.
		return nil, fmt.Errorf("resuming %s: %w", path, err)
	}
	if s.Members != len(t.Nets) {
		return nil, fmt.Errorf("checkpoint %s: %d networks, the configuration builds %d", path, s.Members, len(t.Nets))
	}
	src := fileTensors{f}
	if t.fa != nil {
		if err := t.resumeFA(f, path); err != nil {
			return nil, err
		}
	}
	for _, n := range t.Nets {
		if t.fa != nil {
			break
		}
		for _, p := range n.Params() {
			data, shape, err := src.Tensor(p.Name)
			if err != nil {
				return nil, fmt.Errorf("checkpoint %s: %w", path, err)
			}
			if len(data) != len(p.Value) || !runtime.SameShape(shape, p.Shape) {
				return nil, fmt.Errorf("checkpoint %s: tensor %q has shape %v, want %v", path, p.Name, shape, p.Shape)
			}
			if i := nonFinite(data); i >= 0 {
				return nil, fmt.Errorf("checkpoint %s: tensor %q: value %d is %v", path, p.Name, i, data[i])
			}
			if i := outOfBound(data); i >= 0 {
				return nil, fmt.Errorf("checkpoint %s: tensor %q: value %d is %g, outside ±%.0e: %w", path, p.Name, i, data[i], MaxInitFromValue, errInitValue)
			}
			copy(p.Value, data)
		}
	}
	if t.fa == nil {
		// The runtime checks what the tensors must satisfy besides being finite (a prior
		// standard deviation > 0, say), naming the tensor: before training, not as a NaN loss.
		m, err := t.Model()
		if err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", path, err)
		}
		m.Close()
	}
	st := optim.State[float32]{Step: s.OptimSteps, Buffers: map[string][]float32{}}
	for _, name := range f.Tensors() {
		if strings.HasPrefix(name, faNetPrefix) {
			continue
		}
		if rest, ok := strings.CutPrefix(name, OptimPrefix); ok {
			data, _, err := src.Tensor(name)
			if err != nil {
				return nil, fmt.Errorf("checkpoint %s: %w", path, err)
			}
			if i := nonFinite(data); i >= 0 {
				return nil, fmt.Errorf("checkpoint %s: optimizer state %q: value %d is %v", path, name, i, data[i])
			}
			st.Buffers[rest] = data
		}
	}
	if t.fa != nil && t.fa.vifa != nil {
		st = t.opt.State() // vifa does not use the network's optimizer
	}
	if err := t.opt.LoadState(st); err != nil {
		return nil, fmt.Errorf("checkpoint %s: optimizer state: %w", path, err)
	}
	t.Epoch, t.Step, t.TrainSeconds, t.History = s.Epoch, s.Step, s.TrainSeconds, s.History
	t.resumed, t.startStep = path, s.Step
	if s.Batch > 0 {
		// The position counts minibatches (vifa: updates of mc_samples minibatches) of the
		// checkpoint's size in the epoch's order of its training examples: the rest of the
		// epoch needs the same.
		if t.Config.BatchSize != s.Config.BatchSize || t.Config.TrainLimit != s.Config.TrainLimit ||
			(t.fa != nil && t.fa.vifa != nil && t.Config.MCSamples != s.Config.MCSamples) {
			return nil, fmt.Errorf("checkpoint %s stopped inside epoch %d after %d minibatches: resume it with its batch_size %d, train_limit %d and mc_samples %d",
				path, s.Epoch+1, s.Batch, s.Config.BatchSize, s.Config.TrainLimit, s.Config.MCSamples)
		}
		if s.TrainN > 0 && t.Train.N != s.TrainN {
			return nil, fmt.Errorf("checkpoint %s stopped inside epoch %d after %d minibatches of %d training examples; these settings give %d (laplace_val, the data): resume it with the same training set",
				path, s.Epoch+1, s.Batch, s.TrainN, t.Train.N)
		}
		// Whether the interrupted epoch was a fine-tuning one is the checkpoint's phase, not
		// the edited config's: a shorter --epochs must not take it for pruned already.
		t.finetuneBegun = s.Config.finetuning(s.Epoch)
		if n := t.StepsPerEpoch(); s.Batch >= n {
			return nil, fmt.Errorf("checkpoint %s: training state: field \"batch\" = %d, but an epoch has %d steps", path, s.Batch, n)
		}
		t.batch, t.partial = s.Batch, *s.Partial
	}
	return t, nil
}

// nonFinite returns the index of the first NaN or ±Inf in x, or −1.
func nonFinite(x []float32) int {
	for i, v := range x {
		if v-v != 0 {
			return i
		}
	}
	return -1
}

// fileTensors reads f32 tensors from a model file (copies, so the file may be closed).
type fileTensors struct{ f *format.File }

func (s fileTensors) Tensor(name string) ([]float32, []int, error) {
	tn, err := s.f.Tensor(name)
	if err != nil {
		return nil, nil, fmt.Errorf("tensor %q: %w", name, err)
	}
	v, err := tn.Float32s()
	if err != nil {
		return nil, nil, fmt.Errorf("tensor %q: %w", name, err)
	}
	return append([]float32(nil), v...), tn.Shape(), nil
}
