package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/edgebnn/edgebnn/internal/schema"
	"github.com/edgebnn/edgebnn/runtime"
)

const inspectUsage = `Usage: edgebnn inspect FILE [--json] [--verify]

Describes a model file: its header and sections, and per layer the posterior
kind, the parameter count as bayesianize counts it (pruned Z entries excluded),
the deterministic network's count and the layer's KL divergence, and the
dropout layers' rates p (MC dropout: sampled at prediction time). For an
ensemble of networks (Ensemble-W) it shows the number of members K and the
parameters per member; the per-layer counts and bytes then cover all members.
--verify first checks every checksum and fails (exit status 1) on corruption.`

func runInspect(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("inspect")
	asJSON := fs.Bool("json", false, "print JSON")
	verify := fs.Bool("verify", false, "check every checksum first; exit status 1 on corruption")
	pos, err := parseInterspersed(fs, inspectUsage, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("expected one model FILE, got %d arguments", len(pos))
	}
	in, ierr := schema.Inspect(pos[0], *verify)
	if in == nil {
		return ierr
	}
	if *asJSON {
		if ierr != nil {
			return ierr
		}
		return writeJSON(stdout, in)
	}
	if err := writeInspection(stdout, in, ierr == nil); err != nil {
		return err
	}
	if ierr != nil {
		if schema.ErrCorrupt(ierr) {
			return fmt.Errorf("corrupt: %w", ierr)
		}
		return ierr
	}
	return nil
}

// writeInspection prints in; loaded says whether the model was built, without which the
// nonzero counts and KL terms were never computed (printed "-", not 0).
func writeInspection(w io.Writer, in *schema.Inspection, loaded bool) error {
	fmt.Fprintf(w, "%s: edgebnn model file version %s, %d bytes (%s), %d sections", in.Path, in.Version, in.FileBytes,
		formatBytes(in.FileBytes), len(in.Sections))
	if in.Verified {
		fmt.Fprint(w, ", all checksums verified")
	}
	fmt.Fprintln(w)
	if in.Task != "" {
		fmt.Fprintf(w, "task %s, input shape %v\n", in.Task, in.InputShape)
		if p := in.Preprocess; p != nil {
			fmt.Fprintf(w, "preprocess: %s\n", describePreprocess(p))
		}
	}
	switch {
	case in.Mixture:
		fmt.Fprintf(w, "mixture of %d posteriors (sample s draws from member s mod %d): %d parameters per member, %d in all\n",
			in.Members, in.Members, in.MemberParameters, in.Parameters)
	case in.Members > 1:
		fmt.Fprintf(w, "ensemble of %d networks (Ensemble-W): %d parameters per member, %d in all\n", in.Members,
			in.MemberParameters, in.Parameters)
	}
	if d := describeDropout(in.Dropout); d != "" {
		fmt.Fprintln(w, d)
	}
	fmt.Fprintln(w, "\nSections:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tENCODING\tCOMPRESSION\tSHAPE\tSTORED\tRAW\tCRC")
	for _, s := range in.Sections {
		shape := "-"
		if s.Shape != nil {
			shape = fmt.Sprint(s.Shape)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", s.Name, s.Kind, s.Encoding, s.Compression, shape, s.StoredBytes, s.RawBytes, s.CRC)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(in.Layers) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nLayers:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "LAYER\tKIND\tPARAMS\tNONZERO\tDETERMINISTIC\tBYTES\tZ PRUNED\tKL\t")
	for _, l := range in.Layers {
		pr := "-"
		if l.Kind == "inducing" {
			pr = fractionPercent(l.ZPruned)
		}
		nz, kl := fmt.Sprint(l.Nonzero), fmt.Sprintf("%.4g", l.KL)
		if !loaded {
			nz, kl = "-", "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%d\t%s\t%s\t\n", l.Name, l.Kind, l.Parameters, nz, l.Deterministic, l.Bytes, pr, kl)
	}
	nz, kl := fmt.Sprint(in.NonzeroParameters), fmt.Sprintf("%.6g", in.KL)
	if !loaded {
		nz, kl = "-", "-"
	}
	fmt.Fprintf(tw, "total\t\t%d\t%s\t%d\t\t\t%s\t\n", in.Parameters, nz, in.DeterministicParameters, kl)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nfile is %.2f%% of the deterministic network in fp32 (%d bytes)\n", 100*in.Ratio, in.DeterministicFP32Bytes)
	if len(in.Info) > 0 {
		fmt.Fprintf(w, "info: %s\n", summariseInfo(in.Info))
	}
	if p := in.Policy; p != nil {
		fmt.Fprintln(w, summarisePolicy(p))
	}
	return nil
}

// fractionPercent prints a fraction in [0, 1] as a percentage with one decimal that is 0.0% or
// 100.0% only when the fraction is exactly 0 or 1: a Z with one column of ten thousand kept is
// ">99.9%" pruned, not "100.0%".
func fractionPercent(f float64) string {
	s := fmt.Sprintf("%.1f%%", 100*f)
	switch {
	case f > 0 && s == "0.0%":
		return "<0.1%"
	case f < 1 && s == "100.0%":
		return ">99.9%"
	}
	return s
}

// describeDropout summarises the dropout layers with a rate: those sampled at prediction time
// (MC dropout) and those that are the identity there; "" when there are none.
func describeDropout(ds []schema.InspectDropout) string {
	var mc, off []string
	for _, d := range ds {
		s := fmt.Sprintf("%s p=%g", d.Name, d.P)
		if d.MC {
			mc = append(mc, s)
		} else {
			off = append(off, s)
		}
	}
	var lines []string
	if len(mc) > 0 {
		lines = append(lines, fmt.Sprintf("MC dropout: %d layer(s) sampled at prediction time (a keep mask per sample; the posterior mean runs them as the identity): %s",
			len(mc), strings.Join(mc, ", ")))
	}
	if len(off) > 0 {
		lines = append(lines, fmt.Sprintf("dropout (identity at prediction time): %s", strings.Join(off, ", ")))
	}
	return strings.Join(lines, "\n")
}

// summarisePolicy describes a decision policy in a few lines: its thresholds and, if it was
// calibrated, the target and the held-out result.
func summarisePolicy(p *runtime.Policy) string {
	var th []string
	if p.MinConfidence != nil {
		th = append(th, fmt.Sprintf("confidence ≥ %.6g", *p.MinConfidence))
	}
	if p.MaxMutualInfo != nil {
		th = append(th, fmt.Sprintf("mutual information ≤ %.6g", *p.MaxMutualInfo))
	}
	if p.MaxEpistemicStd != nil {
		th = append(th, fmt.Sprintf("epistemic std ≤ %.6g", *p.MaxEpistemicStd))
	}
	s := "policy: act when " + strings.Join(th, " and ")
	if len(th) == 0 {
		s = "policy: always act (no thresholds)"
	}
	var with []string
	if p.Samples > 0 {
		with = append(with, fmt.Sprintf("%d samples", p.Samples))
	}
	if p.Strategy != "" {
		with = append(with, p.Strategy+" sampling")
	}
	if p.Seed != nil {
		with = append(with, fmt.Sprintf("seed %d", *p.Seed))
	}
	if len(with) > 0 {
		s += " (fitted with " + strings.Join(with, ", ") + ")"
	}
	if c := p.Calibration; c != nil {
		rel := "≤"
		if c.Target == "coverage" {
			rel = "≥"
		}
		on := c.On
		if c.Tolerance > 0 {
			on += fmt.Sprintf(", an error being an output off by more than %g", c.Tolerance)
		}
		s += fmt.Sprintf("\ncalibrated for %s %s %g on %s (%s, seed %d): fit n=%d risk %.2f%% coverage %.2f%%; held out n=%d risk %.2f%% coverage %.2f%%",
			c.Target, rel, c.Value, on, c.Data, c.Seed, c.Fit.N, 100*c.Fit.Risk, 100*c.Fit.Coverage,
			c.Holdout.N, 100*c.Holdout.Risk, 100*c.Holdout.Coverage)
	}
	return s
}

// convertedInfo is the part of the converter's provenance (convert.Info) that inspect prints,
// decoded here so that the board binary does not link the converter.
type convertedInfo struct {
	Converter string `json:"converter"`
	Source    struct {
		Kind   string `json:"kind"`
		SHA256 string `json:"sha256"`
	} `json:"source"`
	DType    string `json:"dtype"`
	Compress string `json:"compress"`
	Prune    *struct {
		Mode     string  `json:"mode"`
		Fraction float64 `json:"fraction"`
	} `json:"prune"`
	Quant *struct {
		Bernstein []schema.BernsteinGate `json:"bernstein"`
	} `json:"quant"`
}

// summariseInfo prints the converter's provenance fields of the meta info, or the raw JSON.
func summariseInfo(raw json.RawMessage) string {
	var info convertedInfo
	if err := json.Unmarshal(raw, &info); err != nil || info.Converter == "" {
		if len(raw) > 200 {
			return string(raw[:200]) + "…"
		}
		return string(raw)
	}
	s := fmt.Sprintf("converted by %s from a %s (sha256 %s), dtype %s, compress %s", info.Converter, info.Source.Kind,
		info.Source.SHA256, info.DType, info.Compress)
	if info.Prune != nil {
		s += fmt.Sprintf(", %s pruning of %.3g of Z", info.Prune.Mode, info.Prune.Fraction)
	}
	if info.Quant != nil {
		for _, g := range info.Quant.Bernstein {
			s += "\n" + describeBernsteinGate(g)
		}
	}
	return s
}

// describePreprocess summarises a model's input transformation in one line.
func describePreprocess(p *runtime.Preprocess) string {
	scale := p.Scale
	if scale == 0 {
		scale = 1
	}
	layout := p.Layout
	if layout == "" {
		layout = runtime.LayoutCHW
	}
	s := fmt.Sprintf("x = (raw · %.6g − mean) / std, mean %v, std %v, layout %s", scale, orDefault(p.Mean, 0), orDefault(p.Std, 1), layout)
	if n := len(p.ClassNames); n > 0 {
		names := p.ClassNames
		if n > 6 {
			names = append(append([]string(nil), names[:5]...), "…")
		}
		s += fmt.Sprintf("; %d classes %q", n, names)
	}
	return s
}

func orDefault(v []float64, d float64) []float64 {
	if len(v) == 0 {
		return []float64{d}
	}
	return v
}

// describeBernsteinGate says in one line how the fp16 gate stored a Bernstein-flow tensor.
func describeBernsteinGate(g schema.BernsteinGate) string {
	if g.F16 {
		return fmt.Sprintf("bernstein %s: fp16 (%d flows; runtime samples within %.3g of the float32 flows in Kolmogorov distance, bound %.3g)",
			g.Name, g.Flows, g.KS, g.Bound)
	}
	return fmt.Sprintf("bernstein %s: kept float32 (%d flows): %s", g.Name, g.Flows, g.Reason)
}
