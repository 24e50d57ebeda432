// Command armprof attributes the instruction counts of the armprof QEMU plugin (armprof.c) to
// the functions of a Go binary: it reads the plugin's "armprof VADDR NINSNS EXECUTIONS" lines,
// looks each block's address up in the binary's symbol table (debug/elf), and prints the
// functions by instructions executed, with their share of the total, and the share of the
// functions whose names match -group patterns (for example the GEMM kernels).
//
// Usage:
//
//	go run ./bench/armprof -bin BINARY -prof PROFILE [-base PROFILE -per N] [-top 30] [-group name=regexp ...] [-lines regexp]
//
// With -base, the counts of a second run (the same program doing less work, for example R
// predictions against R+N) are subtracted and the difference divided by -per: start-up, loading
// and warm-up cancel, leaving the instructions of one unit of work.
//
// With -lines, the instructions of the functions whose names match the regexp are also listed by
// source line (from the binary's DWARF line table; ARM instructions are 4 bytes, so each block's
// instructions are attributed one by one).
//
// bench/armprof.sh runs the plugin and this command together.
package main

import (
	"bufio"
	"debug/dwarf"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

type groupFlag []string

func (g *groupFlag) String() string     { return strings.Join(*g, ",") }
func (g *groupFlag) Set(s string) error { *g = append(*g, s); return nil }

func main() {
	bin := flag.String("bin", "", "the guest binary (ELF)")
	prof := flag.String("prof", "", "the plugin's output file")
	base := flag.String("base", "", "profile of a baseline run to subtract")
	per := flag.Float64("per", 1, "divide the counts (after -base) by this")
	top := flag.Int("top", 30, "functions to list")
	var groups groupFlag
	flag.Var(&groups, "group", "name=regexp: report the share of the functions matching regexp (repeatable)")
	lines := flag.String("lines", "", "regexp: list the matching functions' instructions by source line")
	flag.Parse()
	if *bin == "" || *prof == "" {
		fmt.Fprintln(os.Stderr, "armprof: -bin and -prof are required")
		os.Exit(2)
	}
	if !(*per > 0) {
		fmt.Fprintln(os.Stderr, "armprof: -per must be positive")
		os.Exit(2)
	}
	if err := run(os.Stdout, *bin, *prof, *base, *per, *top, groups, *lines); err != nil {
		fmt.Fprintln(os.Stderr, "armprof:", err)
		os.Exit(1)
	}
}

type symbol struct {
	name       string
	start, end uint64
}

func symbols(path string) ([]symbol, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []symbol
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 {
			continue
		}
		out = append(out, symbol{name: s.Name, start: s.Value, end: s.Value + s.Size})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no function symbols (built with -ldflags=-s?)", path)
	}
	return out, nil
}

// lookup returns the function containing addr, or "?".
func lookup(syms []symbol, addr uint64) string {
	i := sort.Search(len(syms), func(i int) bool { return syms[i].start > addr }) - 1
	if i < 0 || (syms[i].end > syms[i].start && addr >= syms[i].end) {
		return "?"
	}
	return syms[i].name
}

// readProfile adds up the plugin's blocks by function, and when byAddr is not nil the executions
// of each instruction of the functions matching linesRE by its address.
func readProfile(syms []symbol, prof string, linesRE *regexp.Regexp, byAddr map[uint64]float64, sign float64) (map[string]float64, error) {
	f, err := os.Open(prof)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	byFunc := map[string]float64{}
	sc := bufio.NewScanner(f)
	line, blocks := 0, 0
	for sc.Scan() {
		line++
		fields := strings.Fields(sc.Text())
		if len(fields) != 4 || fields[0] != "armprof" {
			continue
		}
		addr, err1 := strconv.ParseUint(fields[1], 16, 64)
		n, err2 := strconv.ParseUint(fields[2], 10, 64)
		execs, err3 := strconv.ParseUint(fields[3], 10, 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", prof, line, err)
		}
		fn := lookup(syms, addr)
		byFunc[fn] += float64(n * execs)
		if linesRE != nil && linesRE.MatchString(fn) {
			for i := uint64(0); i < n; i++ {
				byAddr[addr+4*i] += sign * float64(execs)
			}
		}
		blocks++
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", prof, err)
	}
	if blocks == 0 {
		return nil, fmt.Errorf("%s: no armprof lines", prof)
	}
	return byFunc, nil
}

func run(w io.Writer, bin, prof, base string, per float64, top int, groups []string, lines string) error {
	syms, err := symbols(bin)
	if err != nil {
		return err
	}
	type group struct {
		name string
		re   *regexp.Regexp
		n    float64
	}
	var gs []*group
	for _, g := range groups {
		name, expr, ok := strings.Cut(g, "=")
		if !ok {
			return fmt.Errorf("-group %q: want name=regexp", g)
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return fmt.Errorf("-group %q: %w", g, err)
		}
		gs = append(gs, &group{name: name, re: re})
	}
	var (
		linesRE *regexp.Regexp
		byAddr  map[uint64]float64
	)
	if lines != "" {
		if linesRE, err = regexp.Compile(lines); err != nil {
			return fmt.Errorf("-lines: %w", err)
		}
		byAddr = map[uint64]float64{}
	}
	byFunc, err := readProfile(syms, prof, linesRE, byAddr, 1)
	if err != nil {
		return err
	}
	if base != "" {
		b, err := readProfile(syms, base, linesRE, byAddr, -1)
		if err != nil {
			return err
		}
		for n, c := range b {
			byFunc[n] -= c
		}
	}
	var total float64
	for n := range byFunc {
		byFunc[n] /= per
		total += byFunc[n]
	}
	if !(total > 0) {
		return fmt.Errorf("%s: no instructions left after subtracting %s", prof, base)
	}
	names := make([]string, 0, len(byFunc))
	for n := range byFunc {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return byFunc[names[i]] > byFunc[names[j]] })
	fmt.Fprintf(w, "total %.0f instructions\n", total)
	for _, g := range gs {
		for n, c := range byFunc {
			if g.re.MatchString(n) {
				g.n += c
			}
		}
		fmt.Fprintf(w, "group %s: %.0f instructions, %.1f%%\n", g.name, g.n, 100*g.n/total)
	}
	for i, n := range names {
		if i == top {
			break
		}
		fmt.Fprintf(w, "%14.0f %5.1f%%  %s\n", byFunc[n], 100*byFunc[n]/total, n)
	}
	if linesRE != nil {
		return printLines(w, bin, byAddr, per, total)
	}
	return nil
}

// printLines lists the per-instruction counts of byAddr by source line, most first.
func printLines(w io.Writer, bin string, byAddr map[uint64]float64, per, total float64) error {
	f, err := elf.Open(bin)
	if err != nil {
		return err
	}
	defer f.Close()
	d, err := f.DWARF()
	if err != nil {
		return fmt.Errorf("%s: no DWARF line table (built with -ldflags=-w?): %w", bin, err)
	}
	// The line table's rows, sorted by address: each covers [row.Address, next row's).
	type row struct {
		addr uint64
		pos  string
	}
	var rows []row
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return fmt.Errorf("%s: %w", bin, err)
		}
		if e == nil {
			break
		}
		if e.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
			continue
		}
		lr, err := d.LineReader(e)
		if err != nil || lr == nil {
			continue
		}
		var le dwarf.LineEntry
		for lr.Next(&le) == nil {
			pos := "?"
			if le.File != nil {
				pos = fmt.Sprintf("%s:%d", le.File.Name, le.Line)
			}
			rows = append(rows, row{le.Address, pos})
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].addr < rows[j].addr })
	byLine := map[string]float64{}
	for a, c := range byAddr {
		i := sort.Search(len(rows), func(i int) bool { return rows[i].addr > a }) - 1
		pos := "?"
		if i >= 0 {
			pos = rows[i].pos
		}
		byLine[pos] += c / per
	}
	names := make([]string, 0, len(byLine))
	for n, c := range byLine {
		if c >= 0.5 {
			names = append(names, n)
		}
	}
	sort.Slice(names, func(i, j int) bool { return byLine[names[i]] > byLine[names[j]] })
	fmt.Fprintf(w, "\nby source line:\n")
	for _, n := range names {
		fmt.Fprintf(w, "%14.0f %5.1f%%  %s\n", byLine[n], 100*byLine[n]/total, n)
	}
	return nil
}
