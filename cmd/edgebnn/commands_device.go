//go:build device

package main

// hostCommands returns no commands: a device build carries the runtime commands only (demo,
// predict, serve, bench, inspect, posterior, boards, build, version; see hostSet).
func hostCommands() hostSet { return hostSet{} }

func init() {
	for _, name := range []string{"train", "convert", "eval", "calibrate", "plan"} {
		absentCommands[name] = "the host build (go build ./cmd/edgebnn, or edgebnn build --host)"
	}
}
