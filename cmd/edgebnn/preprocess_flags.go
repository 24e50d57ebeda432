package main

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/edgebnn/edgebnn/internal/readlimit"
	"github.com/edgebnn/edgebnn/internal/strictjson"
	"github.com/edgebnn/edgebnn/runtime"
)

// preprocessFlags are convert's flags for the input transformation a model file records
// (runtime.Preprocess): a JSON sidecar and flags that set or override its fields.
type preprocessFlags struct {
	file, scale, mean, std, layout, names *string
}

func addPreprocessFlags(fs *flag.FlagSet) *preprocessFlags {
	return &preprocessFlags{
		file:   fs.String("preprocess", "", "store the input transformation of `FILE.json` (fields version, layout, scale, mean, std, class_names)"),
		scale:  fs.String("input-scale", "", "multiply raw input values by `S` first (e.g. 0.00392156862745098 = 1/255 for 8-bit pixels)"),
		mean:   fs.String("input-mean", "", "then subtract `M1,M2,…` (one value, or one per channel or feature)"),
		std:    fs.String("input-std", "", "then divide by `S1,S2,…` (one value, or one per channel or feature)"),
		layout: fs.String("input-layout", "", "raw images are `chw` (channel-major, default) or hwc (interleaved channels)"),
		names:  fs.String("class-names", "", "the classes' names, `A,B,…` in output order"),
	}
}

// maxPreprocessFile bounds a --preprocess sidecar.
const maxPreprocessFile = 16 << 20

// build returns the Preprocess the flags describe, or nil when none is given. Field values are
// checked here (the flag is named); their fit to the model is checked by convert.
func (f *preprocessFlags) build() (*runtime.Preprocess, error) {
	if *f.file == "" && *f.scale == "" && *f.mean == "" && *f.std == "" && *f.layout == "" && *f.names == "" {
		return nil, nil
	}
	p := &runtime.Preprocess{Version: runtime.DeployVersion}
	if *f.file != "" {
		b, err := readlimit.ReadFile(*f.file, maxPreprocessFile)
		if err != nil {
			return nil, fmt.Errorf("--preprocess: %w", err)
		}
		if err := strictjson.Decode(b, p); err != nil {
			return nil, fmt.Errorf("--preprocess %s: %w", *f.file, err)
		}
		if p.Version == 0 {
			p.Version = runtime.DeployVersion
		}
	}
	if *f.scale != "" {
		v, err := strconv.ParseFloat(*f.scale, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			return nil, usagef("--input-scale %q is not a finite positive number", *f.scale)
		}
		p.Scale = v
	}
	for _, c := range []struct {
		flag string
		s    *string
		dst  *[]float64
	}{{"--input-mean", f.mean, &p.Mean}, {"--input-std", f.std, &p.Std}} {
		if *c.s == "" {
			continue
		}
		var vals []float64
		for i, part := range strings.Split(*c.s, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, usagef("%s: value %d (%q) is not a finite number", c.flag, i+1, part)
			}
			vals = append(vals, v)
		}
		*c.dst = vals
	}
	if *f.layout != "" {
		p.Layout = runtime.Layout(*f.layout)
		if p.Layout != runtime.LayoutCHW && p.Layout != runtime.LayoutHWC {
			return nil, usagef("--input-layout %q is not chw or hwc", *f.layout)
		}
	}
	if *f.names != "" {
		p.ClassNames = strings.Split(*f.names, ",")
		for i, n := range p.ClassNames {
			if p.ClassNames[i] = strings.TrimSpace(n); p.ClassNames[i] == "" {
				return nil, usagef("--class-names: name %d is empty", i+1)
			}
		}
	}
	if p.Source == "" {
		p.Source = "edgebnn convert flags"
		if *f.file != "" {
			p.Source = "edgebnn convert --preprocess " + *f.file
		}
	}
	return p, nil
}
