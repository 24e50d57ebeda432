// Package torcharch reads the architecture of a PyTorch nn.Sequential,
// either from its printed repr or from edgebnn's JSON architecture format,
// and returns an ordered list of leaf modules.
//
// # Printed repr
//
// ParseRepr accepts exactly what print(net) shows for an nn.Sequential:
//
//	Sequential(
//	  (0): InducingConv2d(1, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), inducing_cols=12, inducing_rows=8)
//	  (1): ReLU()
//	  (2): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
//	  (features): Sequential(
//	    (0): Linear(in_features=576, out_features=10, bias=True)
//	  )
//	)
//
// Children are indented by two spaces per level; nested Sequential blocks
// are flattened and their names joined with dots ("features.0"), as in the
// state_dict. Every argument PyTorch prints is parsed; arguments it omits
// take PyTorch's defaults. Supported types and their arguments (positional
// ones first, as PyTorch prints them):
//
//	Linear(in_features=, out_features=, bias=True)
//	Conv2d(in_channels, out_channels, kernel_size=, stride=(1, 1), padding=(0, 0)|same|valid,
//	       dilation=(1, 1), groups=1, bias=True, padding_mode=zeros)
//	ReLU(inplace=False), Tanh(), Sigmoid(), Identity(), GELU(approximate='none')
//	MaxPool2d(kernel_size=, stride=kernel_size, padding=0, dilation=1, ceil_mode=False)
//	AvgPool2d(kernel_size=, stride=kernel_size, padding=0, ceil_mode=False,
//	          count_include_pad=True, divisor_override=None)
//	AdaptiveAvgPool2d(output_size=)       (ints, tuples, None elements)
//	Flatten(start_dim=1, end_dim=-1)
//	BatchNorm1d/BatchNorm2d(num_features, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)
//	Dropout(p=0.5, inplace=False)
//
// and bayesianize's layers (microsoft/bayesianize bnn/nn/modules.py), which
// print the base layer's arguments followed by their extra_repr:
//
//	InducingLinear, InducingDeterministicLinear, InducingConv2d, InducingDeterministicConv2d:
//	    ..., inducing_cols=, inducing_rows=
//	FFGLinear, FCGLinear, FFGConv2d, FCGConv2d:
//	    ..., prior mean=0.00, prior sd=1.00   (each printed only when constant)
//
// Pool sizes given as an int n mean (n, n). Unknown module types, unknown
// or repeated arguments, wrong value types, bad indentation and unbalanced
// parentheses are errors naming the line number and the line.
//
// # JSON architecture format
//
// The same information as JSON, one object per leaf module in order:
//
//	{"layers": [
//	  {"name": "0", "type": "InducingConv2d", "in_channels": 1, "out_channels": 8,
//	   "kernel_size": [3, 3], "stride": [1, 1], "padding": [1, 1], "dilation": [1, 1],
//	   "groups": 1, "bias": true, "padding_mode": "zeros", "inducing_cols": 12, "inducing_rows": 8},
//	  {"name": "1", "type": "ReLU", "inplace": false},
//	  {"name": "6", "type": "Flatten", "start_dim": 1, "end_dim": -1},
//	  {"name": "7", "type": "Linear", "in_features": 576, "out_features": 10, "bias": true}
//	]}
//
// Keys are the PyTorch argument names above (the FFG/FCG prior is
// "prior_mean"/"prior_sd"); "name" and "type" are required, as are the
// arguments without a default. Pair arguments accept an int n or [a, b];
// None is null (AdaptiveAvgPool2d output_size [null, 7], BatchNorm
// momentum null, AvgPool2d divisor_override null); Conv2d padding may be
// "same" or "valid". Unknown keys and wrong JSON types are errors naming
// the layer and field. WriteJSON writes every argument explicitly, in
// PyTorch's order, so its output is deterministic and round-trips through
// ParseJSON.
package torcharch
