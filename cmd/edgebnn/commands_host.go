//go:build !device

package main

// hostCommands returns the host-only commands (see hostSet).
func hostCommands() hostSet {
	return hostSet{
		train:     command{name: "train", summary: "train a Bayesian network on the host (VI, baselines)", usage: trainUsage, run: runTrain, grace: trainGrace},
		convert:   command{name: "convert", summary: "turn a bayesianize checkpoint + JSON config into a model file", usage: convertUsage, run: runConvert},
		eval:      command{name: "eval", summary: "evaluate accuracy, NLL and calibration on a data set", usage: evalUsage, run: runEval},
		calibrate: command{name: "calibrate", summary: "fit a model's act/abstain thresholds on labelled data and store them in the file", usage: calibrateUsage, run: runCalibrate},
		plan:      command{name: "plan", summary: "fit a model and its predictor into a board's memory budget", usage: planUsage, run: runPlan},
		build:     command{name: "build", summary: "cross-compile a static edgebnn binary for a board", usage: buildUsage, run: runBuild},
	}
}
