// Command armprof attributes the instruction counts of the armprof QEMU plugin (armprof.c) to
// the functions of a Go binary: it reads the plugin's "armprof VADDR NINSNS EXECUTIONS" lines,
// looks each block's address up in the binary's symbol table (debug/elf), and prints the
// functions by instructions executed, with their share of the total, and the share of the
// functions whose names match -group patterns (for example the GEMM kernels).
//
// Usage:
//
//	go run ./bench/armprof -bin BINARY -prof PROFILE [-base PROFILE -per N] [-top 30] [-group name=regexp ...]
//
// With -base, the counts of a second run (the same program doing less work, for example R
// predictions against R+N) are subtracted and the difference divided by -per: start-up, loading
// and warm-up cancel, leaving the instructions of one unit of work.
//
// bench/armprof.sh runs the plugin and this command together.
package main

import (
	"bufio"
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
	flag.Parse()
	if *bin == "" || *prof == "" {
		fmt.Fprintln(os.Stderr, "armprof: -bin and -prof are required")
		os.Exit(2)
	}
	if !(*per > 0) {
		fmt.Fprintln(os.Stderr, "armprof: -per must be positive")
		os.Exit(2)
	}
	if err := run(os.Stdout, *bin, *prof, *base, *per, *top, groups); err != nil {
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

// readProfile adds up the plugin's blocks by function.
func readProfile(syms []symbol, prof string) (map[string]float64, error) {
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
		byFunc[lookup(syms, addr)] += float64(n * execs)
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

func run(w io.Writer, bin, prof, base string, per float64, top int, groups []string) error {
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
	byFunc, err := readProfile(syms, prof)
	if err != nil {
		return err
	}
	if base != "" {
		b, err := readProfile(syms, base)
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
	return nil
}
