package train

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"sort"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/train/fa"
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

// encodeFAState writes the blob: a uint32 head length, the JSON head, the float64 buffers.
func encodeFAState(kind string, s fa.State, avgN int64) ([]byte, error) {
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
	out := make([]byte, 4, 4+len(head)+8*total)
	binary.LittleEndian.PutUint32(out, uint32(len(head)))
	out = append(out, head...)
	for _, n := range names {
		for _, v := range s.Floats[n] {
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(v))
		}
	}
	return out, nil
}

// decodeFAState reads a blob written by encodeFAState.
func decodeFAState(b []byte) (kind string, s fa.State, avgN int64, err error) {
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
		v := make([]float64, buf.Len)
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

// faState returns the learner's state plus, for vifa, the tail averages.
func (r *faRun) state() (fa.State, error) {
	if r.vifa == nil {
		return r.online.State()
	}
	s, err := r.vifa.State()
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
	blob, err := encodeFAState(r.kind, s, r.nAvg)
	if err != nil {
		return fmt.Errorf("checkpoint %s: fa state: %w", path, err)
	}
	if err := w.AddBlob(faStateBlob, blob, false); err != nil {
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
	kind, s, avgN, err := decodeFAState(b)
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if kind != r.kind {
		return fmt.Errorf("checkpoint %s: FA state of posterior %s, the configuration is %s", path, kind, r.kind)
	}
	if r.vifa == nil {
		src := fileTensors{f}
		for _, p := range t.Nets[0].Params() {
			data, shape, err := src.Tensor(faNetPrefix + p.Name)
			if err != nil {
				return fmt.Errorf("checkpoint %s: %w", path, err)
			}
			if len(data) != len(p.Value) {
				return fmt.Errorf("checkpoint %s: tensor %q has shape %v, want %v", path, faNetPrefix+p.Name, shape, p.Shape)
			}
			copy(p.Value, data)
		}
		if err := r.online.LoadState(s); err != nil {
			return fmt.Errorf("checkpoint %s: %w", path, err)
		}
		return nil
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
	return nil
}
