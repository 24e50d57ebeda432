//go:build device

package main

// hostCommands returns no commands: a device build carries load, predict, bench, inspect, plan
// and the demo only (see hostSet).
func hostCommands() hostSet { return hostSet{} }
