// Package quickflag applies a bench program's -quick settings: the smaller sizes of a run that shows
// the shape of the program's tables in seconds, each where the command line does not give it.
package quickflag

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Set sets each integer flag of the parsed command line (flag.CommandLine) named in sizes to its
// value, unless the command line gave the flag. A key "a|b" names a flag a and its alias b (one
// variable): when neither was given, a is set. A name the program does not define panics.
func Set(sizes map[string]int) {
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for key, v := range sizes {
		names := strings.Split(key, "|")
		if slices.ContainsFunc(names, func(n string) bool { return given[n] }) {
			continue
		}
		if err := flag.Set(names[0], strconv.Itoa(v)); err != nil {
			panic(fmt.Sprintf("quickflag: -%s: %v", names[0], err))
		}
	}
}
