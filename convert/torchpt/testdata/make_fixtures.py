#!/usr/bin/env python3
"""Makes the small torch.save fixtures of convert/torchpt's tests.

Run with PyTorch installed (made with Debian's python3-torch 1.13.1):
    /usr/bin/python3 make_fixtures.py
Writes:
  views.pt             state_dict whose tensors are views sharing storages
                       (transposed, sliced with offsets, expanded, scalars)
                       of several dtypes
  views_expected.json  for every key: dtype, shape and the logical values
                       (t.contiguous().flatten().tolist()) computed by torch
  module.pt            torch.save of a whole nn.Sequential (must be refused)
  legacy.pt            the same state_dict in the legacy non-zip format
"""
import collections
import json

import torch
import torch.nn as nn

torch.manual_seed(0)
base = torch.arange(24, dtype=torch.float32).reshape(4, 6) / 8 - 1
sd = collections.OrderedDict()
sd["plain"] = base.clone()
sd["transposed"] = base.t()                      # stride (1, 6)
sd["row_slice"] = base[1:3]                      # storage offset 6
sd["col_slice"] = base[:, 2:5]                   # offset 2, stride (6, 1)
sd["every_other"] = base[::2, 1::2]              # offset 1, stride (12, 2)
sd["scalar_view"] = base[2, 3]                   # 0-d, offset 15
sd["expanded"] = base[0, :3].unsqueeze(0).expand(2, 3)  # stride (0, 1)
sd["permuted3d"] = base.reshape(2, 3, 4).permute(2, 0, 1)
sd["empty"] = base[:0]
d = torch.randn(3, 5, dtype=torch.float64)
sd["f64_t"] = d.t()
sd["f16"] = torch.tensor([[1.0, -2.5, 65504.0], [0.1, 6e-8, -0.0]], dtype=torch.float16)[:, 1:]
sd["bf16"] = torch.tensor([1.0, 3.14159, -7.5], dtype=torch.bfloat16)
sd["i64"] = torch.tensor([[1, -2, 2**40], [3, 4, -5]], dtype=torch.int64).t()
sd["bool"] = torch.tensor([True, False, True])
sd["num_batches_tracked"] = torch.tensor(7)
sd["param"] = nn.Parameter(torch.ones(2, 2))     # saved as a Parameter
torch.save(sd, "views.pt")

expected = collections.OrderedDict()
for k, t in sd.items():
    t = t.detach()
    vals = t.contiguous().flatten()
    if t.dtype in (torch.float16, torch.bfloat16):
        vals = vals.float()
    elif t.dtype == torch.bool:
        vals = vals.long()
    expected[k] = {"dtype": str(t.dtype), "shape": list(t.shape), "values": vals.tolist()}
with open("views_expected.json", "w") as f:
    json.dump(expected, f, indent=1)

net = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
torch.save(net, "module.pt")
torch.save(collections.OrderedDict(w=torch.ones(2)), "legacy.pt", _use_new_zipfile_serialization=False)
