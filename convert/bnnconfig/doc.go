// Package bnnconfig parses bayesianize inference configs (the JSON files
// of microsoft/bayesianize's configs/ directory, passed as
// bnn.bayesianize_(net, **config)) and resolves the effective settings of
// every module exactly as bayesianize_ does: see Config.Resolve.
//
// A config has an "inference" key, either one inference name for every
// layer or an object whose keys are module names ("0", "features.3") or
// class names ("Linear", "Conv2d") and whose values are an inference name
// or an object of layer arguments with an "inference" key. All other
// top-level keys are defaults added to every matched layer's arguments
// where that layer's entry does not set them.
//
// Every key must be an argument of some bayesianize layer (see Keys) with
// a value of the right JSON type, or Parse fails naming the key; Resolve
// fails, naming the layer and key, when a key is not an argument of the
// layer type it ends up in (where bayesianize would raise a TypeError).
// Absent arguments take the defaults of bayesianize's constructors
// (_InducingBase.__init__, FFGMixin.__init__, FCGMixin.__init__).
package bnnconfig
