package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// version is the edgebnn release this source tree builds.
const version = "0.1.0-dev"

const versionUsage = `Usage: edgebnn version

Prints the edgebnn version, the source revision it was built from (when the
build recorded it), the Go version and the platform (GOOS/GOARCH, and GOARM
on 32-bit ARM).`

func runVersion(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("version")
	if err := parseFlagsOnly(fs, versionUsage, args, stdout); err != nil {
		return err
	}
	bi, _ := debug.ReadBuildInfo()
	_, err := io.WriteString(stdout, versionText(bi, runtime.Version(), runtime.GOOS, runtime.GOARCH))
	if err != nil {
		return fmt.Errorf("writing version: %w", err)
	}
	return nil
}

// versionText formats the version report from the build information (bi
// may be nil) and the runtime's Go version and platform.
func versionText(bi *debug.BuildInfo, goVersion, goos, goarch string) string {
	settings := map[string]string{}
	if bi != nil {
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "edgebnn %s\n", version)
	if rev := settings["vcs.revision"]; rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if settings["vcs.modified"] == "true" {
			rev += " (modified)"
		}
		if t := settings["vcs.time"]; t != "" {
			rev += " " + t
		}
		fmt.Fprintf(&b, "commit:   %s\n", rev)
	}
	fmt.Fprintf(&b, "go:       %s\n", goVersion)
	platform := goos + "/" + goarch
	if goarch == "arm" && settings["GOARM"] != "" {
		platform += " (GOARM=" + settings["GOARM"] + ")"
	}
	fmt.Fprintf(&b, "platform: %s\n", platform)
	if tags := settings["-tags"]; tags != "" {
		fmt.Fprintf(&b, "tags:     %s\n", tags)
	}
	return b.String()
}
