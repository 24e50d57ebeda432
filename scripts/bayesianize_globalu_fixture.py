#!/usr/bin/env python3
"""Makes testdata/bayesianize/mlp_globalu: a network with global inducing weights built by
microsoft/bayesianize itself (bnn.bayesianize_ then register_global_inducing_weights_, paper 003
appendix H), its parameters moved away from their initial values at random (no training), and
reference outputs computed by bayesianize (see testdata/bayesianize/README.md).

Usage: /usr/bin/python3 scripts/bayesianize_globalu_fixture.py BAYESIANIZE_DIR OUT_DIR
Needs Debian's python3-torch. Nothing of bayesianize is part of this repository.
"""
import json
import math
import struct
import sys

import torch
import torch.nn as nn

sys.path.insert(0, sys.argv[1])
try:
    import torchvision  # noqa: F401
except ImportError:
    # bayesianize imports torchvision only to build its ResNets by name; Debian's python3-torch
    # has no torchvision, and this fixture needs none.
    import types
    tv = types.ModuleType("torchvision")
    tv.models = types.ModuleType("torchvision.models")
    sys.modules["torchvision"], sys.modules["torchvision.models"] = tv, tv.models
import bnn  # noqa: E402
from bnn.nn.mixins.variational.inducing import register_global_inducing_weights_  # noqa: E402

out = sys.argv[2]
torch.manual_seed(20261125)
torch.set_default_dtype(torch.float64)

net = nn.Sequential(nn.Linear(12, 16), nn.Tanh(), nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 5))
layer_cfg = dict(inducing_rows=4, inducing_cols=6, prior_sd=1.0, sqrt_width_scaling=True, init_lamda=0.1,
                 max_lamda=0.5, q_inducing="diagonal", whitened_u=True, max_sd_u=0.5)
bnn.bayesianize_(net, inference="inducing", **layer_cfg)
global_cfg = dict(q_inducing="diagonal", whitened_u=True, init_lamda=0.3, max_lamda=1.0, max_sd_u=0.8)
register_global_inducing_weights_(net, inducing_rows=3, inducing_cols=5, cat_dim=0, **global_cfg)

# Generic values: perturb everything, then set moderate scales (softplus⁻¹ of the target).
def isp(y):
    return math.log(math.expm1(y))

with torch.no_grad():
    for name, p in net.named_parameters():
        p.add_(0.3 * torch.randn_like(p))
        if name.endswith("_lamda"):
            p.fill_(isp(0.3 if name.startswith("_global") else 0.2))
        elif name.endswith("_inducing_sd"):
            p.copy_(torch.log(torch.expm1(0.2 + 0.4 * torch.rand_like(p))))
        elif name.endswith("_d_row") or name.endswith("_d_col"):
            p.copy_(torch.log(torch.expm1(0.2 + 0.3 * torch.rand_like(p))))
    for p in net.parameters():  # the stored float32 values are the model
        p.copy_(p.float().double())

inducing = [(n, m) for n, m in net.named_modules() if hasattr(m, "kl_divergence")]
ref = {}
for n, m in inducing:
    ref[n + ".kl"] = m.kl_divergence().detach().reshape(1)
    ref[n + ".lamda"] = m.lamda.detach().reshape(1)
    ref[n + ".prior_sd"] = torch.tensor([float(m.prior_sd)])

# Conditional-mean weights: E[U_{1:L}] = σ_g R_g E[G] C_g (whitened G first), then each layer's
# slice, whitened, through σ R u C.
g = net._global_inducing_module
with torch.no_grad():
    rc, cc = g.prior_inducing_row_scale_tril, g.prior_inducing_col_scale_tril
    u = g.inducing_mean
    if g.whitened_u:
        u = rc @ u @ cc.t()
    mean_u, _ = g.conditional_mean_and_noise(u, rc, cc)
    mean_u = g.prior_sd * mean_u
    ref["_global_inducing_module.weight_mean"] = mean_u
    off = 0
    for n, m in inducing:
        if m is g:
            continue
        ul = mean_u[off:off + m.inducing_rows]
        off += m.inducing_rows
        r, c = m.prior_inducing_row_scale_tril, m.prior_inducing_col_scale_tril
        w, _ = m.conditional_mean_and_noise(r @ ul @ c.t(), r, c)
        ref[n + ".weight_mean"] = m.prior_sd * w

# Predictive moments of the outputs over S forward passes (one U_{1:L} and one weight sample per
# pass, shared by the batch, as bayesianize samples).
S = 16384
x = torch.randn(32, 12)
with torch.no_grad():
    s1 = torch.zeros(32, 5)
    s2 = torch.zeros(32, 5)
    for _ in range(S):
        y = net(x)
        s1 += y
        s2 += y * y
mean = s1 / S
var = s2 / S - mean * mean
ref["inputs"] = x
ref["outputs_mean"] = mean
ref["outputs_var"] = var * S / (S - 1)


def write_safetensors(path, tensors, dtype, meta=None):
    header, blobs, off = {}, [], 0
    if meta:
        header["__metadata__"] = meta
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous()
        t = t.to(torch.float32 if dtype == "F32" else torch.float64)
        b = t.numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


write_safetensors(out + "/state_dict.safetensors", net.state_dict(), "F32")
write_safetensors(out + "/reference.safetensors", ref, "F64", {"samples": str(S), "seed": "20261125"})
with open(out + "/config.json", "w") as f:
    json.dump({"layers": layer_cfg, "global": dict(global_cfg, inducing_rows=3, inducing_cols=5, cat_dim=0),
               "architecture": "Sequential(Linear(12, 16), Tanh(), Linear(16, 8), Tanh(), Linear(8, 5))"}, f, indent=1)
    f.write("\n")
with open(out + "/model.txt", "w") as f:
    f.write(str(net) + "\n")
print("state_dict:", {k: list(v.shape) for k, v in net.state_dict().items()})
