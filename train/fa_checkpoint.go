package train

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/fa"
	"github.com/edgebnn/edgebnn/train/optim"
)

// faStateHeader is the JSON head of the train.fa blob: the learner's counters and byte strings,
// the names and lengths of its float64 buffers (stored after the head, little-endian, in this
// order), and the trainer's tail-average count.
type faStateHeader struct {
	Kind    string            `json:"kind"`
	Ints    map[string]int64  `json:"ints"`
	Bytes   map[string][]byte `json:"bytes"`
	Buffers []faBuffer        `json:"buffers"`
	AvgN    int64             `json:"avg_n"`
}

type faBuffer struct {
	Name string `json:"name"`
	Len  int    `json:"len"`
}

// faStateEncoder generates the train.fa blob of a learner's state: a uint32 head length, the
// JSON head, the float64 buffers (little-endian, in the head's order). It encodes from the
// state's own buffers, which must not change while it is in use: the checkpoint's writer
// generates the blob twice (format.Writer.AddBlobFunc), to checksum it and to write it, instead
// of holding it (for vifa 12 + 6·latent_dim float32 values per parameter).
type faStateEncoder struct {
	head  []byte
	names []string
	s     fa.State
	size  int64 // the blob's bytes
}

func newFAStateEncoder(kind string, s fa.State, avgN int64) (*faStateEncoder, error) {
	h := faStateHeader{Kind: kind, Ints: s.Ints, Bytes: s.Bytes, AvgN: avgN}
	names := make([]string, 0, len(s.Floats))
	for n := range s.Floats {
		names = append(names, n)
	}
	sort.Strings(names)
	total := 0
	for _, n := range names {
		h.Buffers = append(h.Buffers, faBuffer{n, len(s.Floats[n])})
		total += len(s.Floats[n])
	}
	head, err := json.Marshal(&h)
	if err != nil {
		return nil, err
	}
	return &faStateEncoder{head: head, names: names, s: s, size: 4 + int64(len(head)) + 8*int64(total)}, nil
}

// writeTo writes the blob to w, in pieces of at most 64 KiB (beyond the head).
func (e *faStateEncoder) writeTo(w io.Writer) error {
	buf := make([]byte, 4, max(64<<10, 4+len(e.head)))
	binary.LittleEndian.PutUint32(buf, uint32(len(e.head)))
	buf = append(buf, e.head...)
	for _, n := range e.names {
		for _, v := range e.s.Floats[n] {
			if len(buf)+8 > cap(buf) {
				if _, err := w.Write(buf); err != nil {
					return err
				}
				buf = buf[:0]
			}
			buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
		}
	}
	_, err := w.Write(buf)
	return err
}

// encodeFAState returns the blob faStateEncoder generates.
func encodeFAState(kind string, s fa.State, avgN int64) ([]byte, error) {
	e, err := newFAStateEncoder(kind, s, avgN)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(int(e.size))
	if err := e.writeTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// decodeFAState reads a blob written by encodeFAState.
func decodeFAState(b []byte) (kind string, s fa.State, avgN int64, err error) {
	return decodeFAStateInto(b, nil)
}

// decodeFAStateInto is decodeFAState decoding each buffer into into's buffer of the same name
// and length, where there is one (a learner's SharedState: no second copy of its state), and
// into a new one otherwise. Those buffers are overwritten before anything is checked.
func decodeFAStateInto(b []byte, into map[string][]float64) (kind string, s fa.State, avgN int64, err error) {
	if len(b) < 4 {
		return "", s, 0, fmt.Errorf("blob %q is truncated", faStateBlob)
	}
	n := binary.LittleEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4) {
		return "", s, 0, fmt.Errorf("blob %q: head of %d bytes exceeds the blob", faStateBlob, n)
	}
	var h faStateHeader
	if err := json.Unmarshal(b[4:4+n], &h); err != nil {
		return "", s, 0, fmt.Errorf("blob %q: %w", faStateBlob, err)
	}
	rest := b[4+n:]
	s = fa.State{Ints: h.Ints, Bytes: h.Bytes, Floats: map[string][]float64{}}
	for _, buf := range h.Buffers {
		if buf.Len < 0 || buf.Len > len(rest)/8 { // no product: Len·8 wraps for Len ≥ 2^61
			return "", s, 0, fmt.Errorf("blob %q: buffer %q of %d values exceeds the blob", faStateBlob, buf.Name, buf.Len)
		}
		v := into[buf.Name]
		if len(v) != buf.Len {
			v = make([]float64, buf.Len)
		}
		for i := range v {
			v[i] = math.Float64frombits(binary.LittleEndian.Uint64(rest[8*i:]))
		}
		s.Floats[buf.Name] = v
		rest = rest[8*buf.Len:]
	}
	if len(rest) != 0 {
		return "", s, 0, fmt.Errorf("blob %q: %d trailing bytes", faStateBlob, len(rest))
	}
	return h.Kind, s, h.AvgN, nil
}

// state returns the learner's state plus, for vifa, the tail averages, for faStateEncoder: the
// buffers are the learner's own (SharedState), not copies, valid until its next update.
func (r *faRun) state() (fa.State, error) {
	if r.vifa == nil {
		return r.online.SharedState()
	}
	s, err := r.vifa.SharedState()
	if err != nil {
		return s, err
	}
	if r.avg != nil {
		s.Floats["avg_mean"], s.Floats["avg_f"], s.Floats["avg_log_psi"] = r.avg.Mean, r.avg.F, r.avg.Psi
	}
	return s, nil
}

// writeFA adds the FA model's tensors and, for a checkpoint, the learner's state (blob train.fa)
// and for fa_em / fa_sga the network's current parameters (under optim/fa_net/).
func (t *Trainer) writeFA(w *format.Writer, path string, checkpoint bool) error {
	r := t.fa
	ts := r.tensors()
	for _, name := range []string{"fa.mean", "fa.factors", "fa.psi"} {
		if i := nonFinite(ts[name].Data); i >= 0 { // refused by Resume and the runtime
			return fmt.Errorf("tensor %q: value %d is %v: %w", name, i, ts[name].Data[i], ErrParamRange)
		}
		if _, err := w.AddTensor(name, ts[name].Shape, ts[name].Data, format.AddOptions{}); err != nil {
			return fmt.Errorf("checkpoint %s: tensor %q: %w", path, name, err)
		}
	}
	if !checkpoint {
		return nil
	}
	if r.vifa == nil {
		for _, p := range t.Nets[0].Params() {
			if _, err := w.AddTensor(faNetPrefix+p.Name, p.Shape, p.Value, format.AddOptions{}); err != nil {
				return fmt.Errorf("checkpoint %s: tensor %q: %w", path, p.Name, err)
			}
		}
	}
	s, err := r.state()
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	enc, err := newFAStateEncoder(r.kind, s, r.nAvg)
	if err != nil {
		return fmt.Errorf("checkpoint %s: fa state: %w", path, err)
	}
	// Generated from the learner's buffers (SharedState) while the checkpoint is written, which
	// is before the next update; never held whole.
	if err := w.AddBlobFunc(faStateBlob, enc.size, enc.writeTo); err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return nil
}

// resumeFA restores the FA learner (and for fa_em / fa_sga the network) from a checkpoint.
func (t *Trainer) resumeFA(f *format.File, path string) error {
	r := t.fa
	b, err := f.Blob(faStateBlob)
	if err != nil {
		return fmt.Errorf("checkpoint %s: posterior %s: no FA learner state (written by an older edgebnn, or a model file?): %w",
			path, r.kind, err)
	}
	// Decoded into the learner's own buffers, which its LoadState then checks and keeps (a
	// decoded copy beside them would be 12 + 6·latent_dim float32 values per parameter for
	// vifa): a bad state leaves them overwritten, but then Resume returns no trainer.
	var own fa.State
	if r.vifa != nil {
		own, err = r.vifa.SharedState()
	} else {
		own, err = r.online.SharedState()
	}
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	kind, s, avgN, err := decodeFAStateInto(b, own.Floats)
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if kind != r.kind {
		return fmt.Errorf("checkpoint %s: FA state of posterior %s, the configuration is %s", path, kind, r.kind)
	}
	// The model's tensors, as the runtime (and eval) reads them: they must be the posterior the
	// learner's state describes, checked once that is restored.
	stored := map[string][]float32{}
	for _, name := range []string{"fa.mean", "fa.factors", "fa.psi"} {
		data, _, err := fileTensors{f}.Tensor(name)
		if err != nil {
			return fmt.Errorf("checkpoint %s: %w", path, err)
		}
		if i := nonFinite(data); i >= 0 {
			return fmt.Errorf("checkpoint %s: tensor %q: value %d is %v", path, name, i, data[i])
		}
		stored[name] = data
	}
	if r.vifa == nil {
		src := fileTensors{f}
		for _, p := range t.Nets[0].Params() {
			data, shape, err := src.Tensor(faNetPrefix + p.Name)
			if err != nil {
				return fmt.Errorf("checkpoint %s: %w", path, err)
			}
			if len(data) != len(p.Value) || !runtime.SameShape(shape, p.Shape) {
				return fmt.Errorf("checkpoint %s: tensor %q has shape %v, want %v", path, faNetPrefix+p.Name, shape, p.Shape)
			}
			if i := nonFinite(data); i >= 0 {
				return fmt.Errorf("checkpoint %s: tensor %q: value %d is %v", path, faNetPrefix+p.Name, i, data[i])
			}
			if i := outOfBound(data); i >= 0 {
				return fmt.Errorf("checkpoint %s: tensor %q: value %d is %g, outside ±%.0e: %w", path, faNetPrefix+p.Name, i, data[i], MaxInitFromValue, errInitValue)
			}
			copy(p.Value, data)
		}
		if err := checkLogVar(s, "gamma"); err != nil { // online SGA's log ψ
			return fmt.Errorf("checkpoint %s: blob %q: %w", path, faStateBlob, err)
		}
		if err := r.online.LoadState(s); err != nil {
			return fmt.Errorf("checkpoint %s: %w", path, err)
		}
		return r.checkStored(path, stored)
	}
	if err := checkVIFAState(s, avgN); err != nil {
		return fmt.Errorf("checkpoint %s: blob %q: %w", path, faStateBlob, err)
	}
	var avg *fa.Model
	if avgN > 0 {
		avg = &fa.Model{D: r.dim, K: r.rank, Mean: s.Floats["avg_mean"], F: s.Floats["avg_f"], Psi: s.Floats["avg_log_psi"]}
		if len(avg.Mean) != r.dim || len(avg.F) != r.dim*r.rank || len(avg.Psi) != r.dim {
			return fmt.Errorf("checkpoint %s: FA tail averages missing or of the wrong size", path)
		}
	}
	if err := r.vifa.LoadState(s); err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	r.avg, r.nAvg = avg, avgN
	return r.checkStored(path, stored)
}

// maxLogVar bounds a restored log variance log ψ: exp of more is +Inf in the model's float32
// fa.psi (and the samples θ = c + F h + √ψ ⊙ z are NaN).
var maxLogVar = math.Log(math.MaxFloat32)

// checkLogVar refuses a log variance in buffer name of s above maxLogVar.
func checkLogVar(s fa.State, name string) error {
	for i, v := range s.Floats[name] {
		if v > maxLogVar {
			return fmt.Errorf("buffer %q: entry %d is %g; a log variance above %.4g is an infinite variance in float32", name, i, v, maxLogVar)
		}
	}
	return nil
}

// checkVIFAState checks what vifa's LoadState leaves to its caller: Adam's second moments
// (buffers adam_v_*) are ≥ 0 (the update divides by their square root), the log variances
// (gamma) at most maxLogVar, and the tail average counts avg_n ∈ [0, updates] of the averages
// avg_mean, avg_f and avg_log_psi, which are finite (the last at most maxLogVar).
func checkVIFAState(s fa.State, avgN int64) error {
	for _, name := range slices.Sorted(maps.Keys(s.Floats)) {
		if !strings.HasPrefix(name, "adam_v_") {
			continue
		}
		for i, v := range s.Floats[name] {
			if !(v >= 0) || math.IsInf(v, 0) {
				return fmt.Errorf("buffer %q: entry %d is %g; a second moment must be finite and ≥ 0", name, i, v)
			}
		}
	}
	// The first moments against the second (optim.AdamMomentRatio; fa's Adam has β₁ 0.9, β₂
	// 0.999): adam_m_c of 1e30 beside adam_v_c 0 would make the first update overflow c.
	rho, _ := optim.AdamMomentRatio(0.9, 0.999)
	for _, name := range []string{"c", "f", "gamma"} {
		m, v := s.Floats["adam_m_"+name], s.Floats["adam_v_"+name]
		if len(m) != len(v) {
			continue // LoadState refuses buffers of the wrong size
		}
		for i := range m {
			if !optim.AdamMomentsPossible(m[i], v[i], rho) {
				return fmt.Errorf("buffers %q and %q: entry %d is %g beside %g; a first moment m of Adam has m² ≤ %.4g·v",
					"adam_m_"+name, "adam_v_"+name, i, m[i], v[i], rho)
			}
		}
	}
	if err := checkLogVar(s, "gamma"); err != nil {
		return err
	}
	steps, ok := s.Ints["steps"]
	if !ok {
		return fmt.Errorf("counter %q is missing", "steps")
	}
	if avgN < 0 || avgN > steps {
		return fmt.Errorf("field \"avg_n\" = %d out of range [0, %d] (the updates made)", avgN, steps)
	}
	if avgN == 0 {
		return nil
	}
	for _, name := range []string{"avg_mean", "avg_f", "avg_log_psi"} {
		for i, v := range s.Floats[name] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("buffer %q: entry %d is %g", name, i, v)
			}
		}
	}
	return checkLogVar(s, "avg_log_psi")
}

// ErrPosteriorMismatch is wrapped by Resume's error for a factor-analysis checkpoint whose model
// tensors (fa.mean, fa.factors, fa.psi) are not the posterior its learner state describes.
var ErrPosteriorMismatch = errors.New("the model tensors and the training state describe different posteriors")

// checkStored refuses a checkpoint whose model tensors (fa.mean, fa.factors, fa.psi: what the
// runtime, eval and convert read) are not the posterior of the restored learner state (what
// --resume continues and eval --psis diagnoses): one of the two was altered, and a report on
// both would mix two posteriors.
func (r *faRun) checkStored(path string, stored map[string][]float32) error {
	want := r.tensors()
	for _, name := range []string{"fa.mean", "fa.factors", "fa.psi"} {
		got, w := stored[name], want[name].Data
		if len(got) != len(w) {
			return fmt.Errorf("checkpoint %s: tensor %q has %d values, the learner state's posterior %d: %w", path, name, len(got), len(w), ErrPosteriorMismatch)
		}
		for i := range got {
			if got[i] != w[i] {
				return fmt.Errorf("checkpoint %s: tensor %q, value %d is %v, but the learner state (blob %q) gives %v: %w (was the file edited?)",
					path, name, i, got[i], faStateBlob, w[i], ErrPosteriorMismatch)
			}
		}
	}
	return nil
}
