package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/edgebnn/edgebnn/boards"
)

const boardsUsage = `Usage: edgebnn boards [--json] [-v] [--dir DIR]

Lists the board profiles edgebnn knows: platform, QEMU CPU model used to test
it, RAM, the memory budget a model and its predictor may use, SIMD features,
and whether the board is part of the emulated test matrix.`

func runBoards(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("boards")
	asJSON := fs.Bool("json", false, "print the profiles as a JSON array")
	verbose := fs.Bool("v", false, "also print each board's description")
	dir := fs.String("dir", "", "also load user profiles (*.json) from `DIR`; they replace built-in profiles of the same name")
	// Hidden: consumed by scripts/test.sh to derive the QEMU test matrix.
	testTargets := fs.Bool("test-targets", false, "")
	if err := parseFlagsOnly(fs, boardsUsage, args, stdout); err != nil {
		return err
	}
	profiles, err := loadProfiles(*dir)
	if err != nil {
		return err
	}
	switch {
	case *testTargets:
		for _, t := range boards.TestTargets(profiles) {
			if _, err := fmt.Fprintln(stdout, t.Line()); err != nil {
				return fmt.Errorf("writing test targets: %w", err)
			}
		}
		return nil
	case *asJSON:
		return writeJSON(stdout, profiles)
	}
	// The table goes through a buffer: with -v each board's description follows its row,
	// indented to the PLATFORM column, outside the table (as a cell it would widen its column
	// to the longest description).
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPLATFORM\tCPU\tRAM\tBUDGET\tSIMD\tTESTED")
	for _, p := range profiles {
		cpu := p.QEMUCPU
		if cpu == "" {
			cpu = "native"
		}
		tested := "no"
		if p.TestTarget {
			tested = "qemu"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, p.Platform(), cpu,
			formatBytes(p.RAMBytes), formatBytes(p.BudgetBytes), simdList(p.SIMD), tested)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing table: %w", err)
	}
	lines := strings.SplitAfter(table.String(), "\n") // the header, a row per profile, ""
	indent := strings.Repeat(" ", strings.Index(lines[0], "PLATFORM"))
	var out strings.Builder
	for i, line := range lines {
		out.WriteString(line)
		if *verbose && i >= 1 && i <= len(profiles) {
			out.WriteString(indent + profiles[i-1].Description + "\n")
		}
	}
	if _, err := io.WriteString(stdout, out.String()); err != nil {
		return fmt.Errorf("writing table: %w", err)
	}
	return nil
}

// loadProfiles returns the built-in profiles, overlaid with the ones in dir
// when dir is not empty.
func loadProfiles(dir string) ([]boards.Profile, error) {
	profiles, err := boards.Embedded()
	if err != nil {
		return nil, fmt.Errorf("loading built-in board profiles: %w", err)
	}
	if dir == "" {
		return profiles, nil
	}
	user, err := boards.LoadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("loading user board profiles: %w", err)
	}
	return boards.Overlay(profiles, user), nil
}

// lookupBoard returns the profile of board name among the built-in profiles and those in dir
// (see loadProfiles); an unknown name is a usage error that lists the known ones.
func lookupBoard(dir, name string) (boards.Profile, error) {
	profiles, err := loadProfiles(dir)
	if err != nil {
		return boards.Profile{}, err
	}
	p, ok := boards.Lookup(profiles, name)
	if !ok {
		return boards.Profile{}, usagef("unknown board %q (known: %s)", name, strings.Join(boards.Names(profiles), ", "))
	}
	return p, nil
}

// simdList names the SIMD features, or "-" when there are none.
func simdList(s boards.SIMD) string {
	var f []string
	if s.NEON {
		f = append(f, "neon")
	}
	if s.FP16 {
		f = append(f, "fp16")
	}
	if s.DotProd {
		f = append(f, "dotprod")
	}
	if len(f) == 0 {
		return "-"
	}
	return strings.Join(f, ",")
}

// formatBytes prints n in the largest binary unit that divides it evenly
// enough to stay short, e.g. "512 MiB", "4 GiB", "1.5 GiB".
func formatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v := float64(n)
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), units[i])
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}
