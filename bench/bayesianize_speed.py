#!/usr/bin/python3
"""Times microsoft/bayesianize on the mlp_ffgu fixture: K = 32 predictions (one weight sample per
forward pass, as bayesianize predicts) of one input and of a batch of 256, one thread.

Usage: bayesianize_speed.py BAYESIANIZE_DIR FIXTURE_DIR
Prints one line per case: "<case> <seconds per input>".
"""
import json
import sys
import time

import torch
import torch.nn as nn


def main():
    bnz, fx = sys.argv[1], sys.argv[2]
    sys.path.insert(0, bnz)
    try:
        import torchvision  # noqa: F401
    except ImportError:
        # bayesianize imports torchvision only to build torchvision's ResNets by name; Debian's
        # torch comes without it, and this benchmark does not need those networks.
        import types
        tv = types.ModuleType("torchvision")
        tv.models = types.ModuleType("torchvision.models")
        sys.modules["torchvision"], sys.modules["torchvision.models"] = tv, tv.models
    import bnn  # noqa: E402 (bayesianize, from the directory given)

    torch.set_num_threads(1)
    torch.manual_seed(0)
    with open(fx + "/inference_config.json") as f:
        cfg = json.load(f)
    net = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    inference = cfg.pop("inference")
    bnn.bayesianize_(net, inference=inference, **cfg)
    net.load_state_dict(torch.load(fx + "/state_dict.pt", map_location="cpu"))
    net.eval()
    x = torch.rand(256, 784)
    for name, batch in (("k32_batch1", 1), ("k32_batch256", 256)):
        xb = x[:batch]
        with torch.no_grad():
            for _ in range(3):  # warm-up
                torch.stack([net(xb).softmax(-1) for _ in range(32)]).mean(0)
            reps, start = 0, time.perf_counter()
            while reps == 0 or time.perf_counter() - start < 2.0:
                torch.stack([net(xb).softmax(-1) for _ in range(32)]).mean(0)
                reps += 1
        per = (time.perf_counter() - start) / reps / batch
        print(name, "%.9f" % per)


if __name__ == "__main__":
    main()
