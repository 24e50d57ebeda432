//go:build !device

package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/edgebnn/edgebnn/boards"
	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/internal/outfile"
)

const planUsage = `Usage: edgebnn plan --arch ARCH [--config CFG] [--classes N] [--prune F] [--dtype f16|f32]
                    [--compress zstd|none] [--board NAME] [--samples K] [--batch N]
                    [--members K] [--bernstein-last M [--bernstein-table G]] [--keep-f16]
                    [--out FILE] [--json]

Sizes a model before it is trained: its parameters, the exact size of the model
file the converter would write (built in memory from random values of the
right shapes; with zstd or --prune the size depends on the trained values, the
parameter counts do not), and the
memory a predictor needs at run time (the file, what the loaded model holds,
and the predictor's scratch). With --board it says whether that fits the
board's memory budget (see 'edgebnn boards'). --members K plans an ensemble
of K deterministic networks (Ensemble-W): the file holds every member.
--bernstein-last M plans a Bernstein-flow last layer of degree M (as 'edgebnn
train --posterior bernstein_last'): M+5 flow parameters per weight in the file,
and the loaded model's quantile tables (G float32 values per weight).
--keep-f16 sizes the predictor of 'predict --keep-f16' (fp16 deterministic
weights kept as stored, widened per use; with --dtype f16); an fp16 plan that
does not fit --board says whether it would with --keep-f16.
--out FILE also writes that model, random stand-in values and all, to FILE:
a model of the real shape and size for 'edgebnn bench', not a trained one.`

func runPlan(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("plan")
	var o convert.PlanOptions
	fs.StringVar(&o.Arch, "arch", "", "architecture: resnet18|resnet34|resnet50, a JSON architecture or a printed nn.Sequential `ARCH` (required)")
	fs.StringVar(&o.Config, "config", "", "bayesianize inference config `CFG.json`")
	fs.IntVar(&o.Classes, "classes", 0, "number of classes `N` of a built-in ResNet (0: 10); with another architecture, checked against its last layer")
	shape := fs.String("input-shape", "", "input shape `C,H,W` (or F); default: inferred")
	fs.Float64Var(&o.Prune, "prune", 0, "prune this `fraction` of the Z entries")
	fs.StringVar(&o.DType, "dtype", "f32", "storage type `f16|f32`")
	fs.StringVar(&o.Compress, "compress", "none", "section compression `zstd|none`")
	fs.IntVar(&o.Samples, "samples", 32, "Monte Carlo samples `K` per prediction (a deterministic network: 1)")
	fs.IntVar(&o.MaxBatch, "batch", 1, "inputs `N` per predictor call")
	fs.IntVar(&o.BernsteinDegree, "bernstein-last", 0, "give the last Linear layer a Bernstein-flow posterior of degree `M` (as train --posterior bernstein_last)")
	fs.IntVar(&o.BernsteinTable, "bernstein-table", 0, "with --bernstein-last, the runtime quantile table's points `G` per weight (0: 257)")
	fs.BoolVar(&o.KeepF16, "keep-f16", false, "size the model loaded with --keep-f16 (fp16 deterministic weights kept as stored)")
	fs.IntVar(&o.Members, "members", 0, "plan an ensemble of `K` deterministic networks (Ensemble-W; no --config)")
	board := fs.String("board", "", "check the memory budget of board `NAME`")
	dir := fs.String("dir", "", "also load user board profiles (*.json) from `DIR`")
	asJSON := fs.Bool("json", false, "print JSON")
	fs.StringVar(&o.Out, "out", "", "also write the planned model, with random stand-in values, to `FILE` (for benchmarks)")
	if err := parseFlagsOnly(fs, planUsage, args, stdout); err != nil {
		return err
	}
	if o.Arch == "" {
		return usagef("missing --arch ARCH")
	}
	if *dir != "" && *board == "" {
		return usagef("--dir loads board profiles for --board: give --board NAME too")
	}
	if err := convert.CheckEncoding(convert.Options{DType: o.DType, Compress: o.Compress, Prune: o.Prune}); err != nil {
		return &usageError{msg: strings.TrimPrefix(err.Error(), "convert: ")}
	}
	if o.KeepF16 && o.DType != "f16" {
		return usagef("--keep-f16 sizes an fp16 model's weights kept as stored: give --dtype f16")
	}
	if o.Members > 1 && !flagSet(fs, "samples") {
		o.Samples = 0 // the runtime's default for an ensemble: one sample per member
	}
	var err error
	if o.InputShape, err = parseShape(*shape); err != nil {
		return usagef("%v", err)
	}
	var p boards.Profile
	if *board != "" {
		if p, err = lookupBoard(*dir, *board); err != nil {
			return err
		}
		o.BudgetBytes = p.BudgetBytes
	}
	var st *outfile.Staged
	finalOut := o.Out
	if o.Out != "" {
		inputs := []string{fileArg(o.Arch), o.Config}
		if *dir != "" {
			profiles, err := boards.ProfileFiles(*dir)
			if err != nil {
				return fmt.Errorf("--dir: %w", err)
			}
			inputs = append(inputs, profiles...)
		}
		if err := outfile.Check("--out", o.Out, inputs...); err != nil {
			return err
		}
		if st, err = outfile.Stage(ctx, o.Out); err != nil {
			return err
		}
		defer st.Discard()
		o.Out = st.Path()
	}
	rep, err := convert.Plan(o)
	if err != nil {
		if st != nil {
			return &renamedPathError{err: err, from: st.Path(), to: finalOut}
		}
		return err
	}
	if st != nil {
		if err := st.Commit(ctx); err != nil {
			return err
		}
	}
	if *asJSON {
		return writeJSON(stdout, rep)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "parameters\t%d (deterministic network: %d)\n", rep.Parameters, rep.DeterministicParameters)
	if rep.Members > 1 {
		fmt.Fprintf(tw, "ensemble\t%d networks (Ensemble-W), %d parameters each\n", rep.Members, rep.DeterministicParameters)
	}
	fmt.Fprintf(tw, "file\t%d bytes (%s), %.2f%% of the deterministic network in fp32\n", rep.FileBytes, formatBytes(rep.FileBytes), 100*rep.Ratio)
	if rep.MappedBytes != rep.FileBytes {
		fmt.Fprintf(tw, "mapped file\t%d bytes (%s) resident once loaded (the rest decoded, its pages given back)\n", rep.MappedBytes, formatBytes(rep.MappedBytes))
	}
	fmt.Fprintf(tw, "loaded model\t%d bytes (%s) beyond the mapped file\n", rep.ModelBytes, formatBytes(rep.ModelBytes))
	fmt.Fprintf(tw, "predictor scratch\t%d bytes (%s) for %d samples, batch %d\n", rep.ScratchBytes, formatBytes(rep.ScratchBytes), rep.Samples, rep.MaxBatch)
	fmt.Fprintf(tw, "runtime total\t%d bytes (%s)\n", rep.RuntimeBytes, formatBytes(rep.RuntimeBytes))
	if *board != "" {
		verdict := "fits"
		if !rep.Fits {
			verdict = "does NOT fit"
		}
		fmt.Fprintf(tw, "board %s\t%s its budget of %s\n", p.Name, verdict, formatBytes(p.BudgetBytes))
		if !rep.Fits && o.DType == "f16" && !o.KeepF16 {
			// The fp16 weights kept as stored may be what makes it fit: size that too.
			k := o
			k.KeepF16, k.Out = true, ""
			if kr, err := convert.Plan(k); err == nil && kr.RuntimeBytes < rep.RuntimeBytes {
				verdict = "would not fit either"
				if kr.Fits {
					verdict = "would fit"
				}
				fmt.Fprintf(tw, "with --keep-f16\t%s (%s at run time)\n", verdict, formatBytes(kr.RuntimeBytes))
			}
		}
	}
	return tw.Flush()
}
