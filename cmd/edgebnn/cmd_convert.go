//go:build !device

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/internal/outfile"
)

const convertUsage = `Usage: edgebnn convert --checkpoint PATH [--config CFG.json] [--arch ARCH] --out OUT
                       [--dtype f16|f32] [--prune F] [--snr-keep F] [--compress zstd|none] [--classes N]
                       [--input-shape C,H,W] [--validate DATA] [--allow-clamp]
                       [--preprocess FILE.json] [--input-scale S] [--input-mean M,…]
                       [--input-std S,…] [--input-layout chw|hwc] [--class-names A,B,…]

Converts a trained Bayesian network into an edgebnn model file. The checkpoint
is a bayesianize state_dict (.pt from torch.save, or .safetensors), which needs
the inference config and the architecture, or an edgebnn model file, which
carries both. ARCH is resnet18, resnet34 or resnet50 (bayesianize's
make_network with kernel_size=3, remove_maxpool=True and --classes outputs), a
JSON architecture file, or the printed nn.Sequential (model.txt).

Every tensor of the checkpoint must be used and every tensor the architecture
needs must be present with the right shape. --prune removes that fraction of
the smallest inducing projection (Z) entries; --snr-keep F keeps the fraction
F of the FFG-W (mean-field Gaussian) weights with the largest |μ|/σ (σ =
softplus(ρ), capped at max_sd) and makes the others exactly zero (mean and
variance), storing only the kept weights and their positions; --dtype f16 stores large tensors
as half precision (D, λ, q(U) statistics and BatchNorm statistics stay f32).
The output is written atomically and never over an input. With --validate
DATA (a safetensors with "inputs" and "labels") the unpruned f32 model and the
written file are scored (accuracy, NLL, ECE with 15 bins); the inputs are raw,
as predict's: the model's preprocessing (below) applies to them.

The model file records how raw inputs become the network's inputs,
x = (raw · scale − mean) / std per channel (images) or feature, after
reordering interleaved (hwc) images, and the class names: predict, eval and
serve apply it to raw inputs. An edgebnn checkpoint carries what edgebnn train
recorded (Fashion-MNIST: scale 1/255 and its class names); --preprocess (a
JSON file with the fields version, layout, scale, mean, std, class_names) and
the --input-* and --class-names flags replace it (flags override the file's
fields). A checkpoint's decision policy is not carried over: calibrate the
converted model.

--member FILE (repeatable) combines edgebnn model files or training checkpoints
of one architecture, posterior and preprocessing with --checkpoint into one
model of 1 + the number of --member members: a mixture of posteriors when they
are Bayesian (MultiSWAG-style: sample s of a prediction draws from member
s mod M, each with its own random streams), a deep ensemble (Ensemble-W) when
they are deterministic. Train each member with its own --seed.`

func runConvert(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("convert")
	var o convert.Options
	fs.StringVar(&o.Checkpoint, "checkpoint", "", "the checkpoint `PATH`: .pt, .safetensors or an edgebnn model file (required)")
	fs.StringVar(&o.Config, "config", "", "bayesianize inference config `CFG.json`")
	fs.StringVar(&o.Arch, "arch", "", "architecture: resnet18|resnet34|resnet50, a JSON architecture or a printed nn.Sequential `ARCH`")
	fs.StringVar(&o.Out, "out", "", "write the model file to `OUT` (required)")
	fs.StringVar(&o.Out, "o", "", "")
	fs.Func("member", "combine the edgebnn model `FILE` with --checkpoint (repeat for more members): a mixture of posteriors, or a deep ensemble of deterministic networks", func(v string) error {
		if v == "" {
			return errors.New("empty path")
		}
		o.Members = append(o.Members, v)
		return nil
	})
	fs.StringVar(&o.DType, "dtype", "f32", "storage type `f16|f32`")
	fs.StringVar(&o.F16Policy, "f16-policy", "default", "with --dtype f16, which tensors stay f32: `default` (D, λ, q(U) and BatchNorm statistics, small tensors) or compact (q(U) statistics fp16 too)")
	fs.Float64Var(&o.Prune, "prune", 0, "prune this `fraction` of the Z entries (smallest magnitudes, whole network)")
	fs.BoolVar(&o.PrunePerLayer, "prune-per-layer", false, "apply --prune to each layer separately")
	fs.Float64Var(&o.SNRKeep, "snr-keep", 0, "keep this `fraction` of the FFG weights (largest |μ|/σ, whole network); the rest become exactly zero and are not stored")
	fs.StringVar(&o.Compress, "compress", "none", "section compression `zstd|none`")
	fs.IntVar(&o.Classes, "classes", 0, "number of classes `N` of a built-in ResNet (default: from the checkpoint)")
	shape := fs.String("input-shape", "", "input shape `C,H,W` (or F); default: inferred")
	fs.Func("global-inducing", "for a bayesianize state_dict with global inducing weights (register_global_inducing_weights_), its keyword arguments the state_dict lacks as `JSON`: whitened_u, max_lamda, max_sd_u (default: bayesianize's, whitened and unclamped)", func(v string) error {
		a, err := convert.ParseGlobalInducingArgs([]byte(v))
		o.GlobalInducing = a
		return err
	})
	fs.StringVar(&o.Validate, "validate", "", "score the models on `DATA` (safetensors with inputs and labels)")
	fs.IntVar(&o.ValidateSamples, "samples", 64, "Monte Carlo `K` for --validate")
	fs.BoolVar(&o.AllowClamp, "allow-clamp", false, "clamp values beyond the fp16 range to ±65504 instead of failing")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pre := addPreprocessFlags(fs)
	if err := parseFlagsOnly(fs, convertUsage, args, stdout); err != nil {
		return err
	}
	if o.Checkpoint == "" {
		return usagef("missing --checkpoint PATH")
	}
	if o.Out == "" {
		return usagef("missing --out OUT")
	}
	if err := convert.CheckEncoding(o); err != nil { // --dtype, --compress, --prune, --snr-keep, --f16-policy
		return &usageError{msg: strings.TrimPrefix(err.Error(), "convert: ")}
	}
	var err error
	if o.InputShape, err = parseShape(*shape); err != nil {
		return usagef("%v", err)
	}
	if o.Preprocess, err = pre.build(); err != nil {
		return err
	}
	if err := outfile.Check("--out", o.Out, append([]string{o.Checkpoint, o.Config, fileArg(o.Arch), o.Validate, *pre.file}, o.Members...)...); err != nil {
		return err
	}
	rep, err := convertStaged(ctx, o)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(stdout, rep)
	}
	return writeConvertReport(stdout, rep)
}

// convertStaged converts into a staging file beside o.Out and moves it to
// o.Out only when everything succeeded, --validate included: a failed or
// interrupted conversion leaves o.Out as it was and no temporary file.
func convertStaged(ctx context.Context, o convert.Options) (*convert.Report, error) {
	st, err := outfile.Stage(ctx, o.Out)
	if err != nil {
		return nil, err
	}
	out := o.Out
	o.Out = st.Path()
	rep, err := convert.Convert(o)
	if err != nil {
		st.Discard()
		return nil, &renamedPathError{err: err, from: o.Out, to: out}
	}
	if err := st.Commit(ctx); err != nil {
		return nil, err
	}
	rep.Out = out
	return rep, nil
}

func writeConvertReport(w io.Writer, r *convert.Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "LAYER\tKIND\tPARAMS\tDETERMINISTIC\tBYTES\tPRUNED\tF16 MAX ABS ERR\t")
	for _, l := range r.Layers {
		pr := "-"
		if l.Kind == "inducing" {
			pr = fractionPercent(l.PrunedFraction)
		}
		fe := "-"
		if l.F16MaxAbsErr > 0 {
			fe = fmt.Sprintf("%.2e", l.F16MaxAbsErr)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t\n", l.Name, l.Kind, l.Parameters, l.Deterministic, l.Bytes, pr, fe)
	}
	fmt.Fprintf(tw, "total\t\t%d\t%d\t\t\t\t\n", r.Parameters, r.DeterministicParameters)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nwrote %s: %d bytes (%s), %.2f%% of the deterministic network in fp32 (%d bytes)\n",
		r.Out, r.FileBytes, formatBytes(r.FileBytes), 100*r.Ratio, r.DeterministicFP32Bytes)
	if r.Prune != nil {
		fmt.Fprintf(w, "pruned %d of %d Z entries (%s)\n", r.Prune.Pruned, r.Prune.Entries, r.Prune.Mode)
	}
	if r.PruneSNR != nil {
		fmt.Fprintf(w, "kept %d of %d FFG weights (largest |μ|/σ)\n", r.PruneSNR.Kept, r.PruneSNR.Weights)
	}
	if r.Members > 1 {
		what := "networks (Ensemble-W)"
		if r.Spec != nil && r.Spec.Mixture() {
			what = "posteriors (a mixture: sample s draws from member s mod M)"
		}
		fmt.Fprintf(w, "%d members: %d %s\n", r.Members, r.Members, what)
	}
	for _, g := range r.Bernstein {
		fmt.Fprintln(w, describeBernsteinGate(g))
	}
	fmt.Fprintf(w, "source sha256 %s\n", r.SourceSHA256)
	if v := r.Validation; v != nil {
		fmt.Fprintf(w, "\nvalidation on %s (%d inputs, %d samples):\n", v.Data, v.N, v.Samples)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "MODEL\tACCURACY\tNLL\tECE")
		fmt.Fprintf(tw, "unpruned f32\t%.4f\t%.4f\t%.4f\n", v.F32.Accuracy, v.F32.NLL, v.F32.ECE)
		fmt.Fprintf(tw, "written file\t%.4f\t%.4f\t%.4f\n", v.File.Accuracy, v.File.NLL, v.File.ECE)
		fmt.Fprintf(tw, "difference\t%+.4f\t%+.4f\t%+.4f\n", v.File.Accuracy-v.F32.Accuracy, v.File.NLL-v.F32.NLL, v.File.ECE-v.F32.ECE)
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(w, "max |Δp| %.4g\n", v.MaxProbDiff)
	}
	return nil
}
