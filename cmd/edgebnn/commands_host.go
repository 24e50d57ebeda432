//go:build !device

package main

// hostCommands returns the host-only commands (see hostSet).
func hostCommands() hostSet {
	return hostSet{train: trainCmd, convert: convertCmd, eval: evalCmd, calibrate: calibrateCmd, plan: planCmd}
}
