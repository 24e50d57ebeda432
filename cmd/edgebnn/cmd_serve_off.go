//go:build noserve

package main

// serveCmd is absent from a build with the noserve tag (edgebnn build --no-serve): the HTTP
// server and the net/http code it links are about half of a board binary.
var serveCmd command

func init() {
	absentCommands["serve"] = "a build without the noserve tag (edgebnn build without --no-serve)"
}
