//go:build device

package main

// hostCommands returns no commands: a device build carries the runtime commands only (demo,
// predict, serve, bench, inspect, posterior, boards, version; see hostSet).
func hostCommands() hostSet { return hostSet{} }

func init() {
	for _, name := range []string{"train", "convert", "eval", "calibrate", "plan", "build"} {
		absentCommands[name] = "the host build (go build ./cmd/edgebnn, or edgebnn build --host)"
	}
}
