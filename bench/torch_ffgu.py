#!/usr/bin/env python3
"""Training throughput of the FFG-U MLP in plain PyTorch (for docs/RESULTS.md).

The same model and objective as `edgebnn train` with bench/configs/fmnist_ffgu.json, written from
MATH.md §1 (not from bayesianize): an MLP 784-256-256-10 whose Linear layers are inducing-weight
layers (whitened U, diagonal q(U), extended Matheron sampling of one weight matrix per step),
trained with Adam on mean cross-entropy + KL / N, batch 100, one sample per step.

Usage: python3 bench/torch_ffgu.py [--steps 200] [--threads 1] [--data-dir DIR]
Prints steps per second (after 10 warm-up steps). Data: the first 10000 Fashion-MNIST training
images if the IDX files are present, else random inputs (throughput does not depend on them).
"""
import argparse
import gzip
import math
import os
import time

import torch
import torch.nn.functional as F

EPS = 1e-4


def jchol(m):
    j = EPS * m.detach().diagonal().mean()
    return torch.linalg.cholesky(m + j * torch.eye(m.shape[0]))


def isp(y):
    return math.log(math.expm1(y))


class InducingLinear(torch.nn.Module):
    def __init__(self, d_in, d_out, mo, mi, init_lamda=1e-3, max_lamda=0.03, max_sd_u=0.1, prior_sd=1.0):
        super().__init__()
        self.k, self.dout, self.din = d_in, d_out, d_in + 1
        self.mo, self.mi = mo, mi
        self.sigma = prior_sd / math.sqrt(self.din)
        self.max_lamda, self.max_sd_u = max_lamda, max_sd_u
        self.z_row = torch.nn.Parameter(torch.randn(mo, d_out) / math.sqrt(mo))
        self.z_col = torch.nn.Parameter(torch.randn(mi, self.din) / math.sqrt(mi))
        self.inducing_mean = torch.nn.Parameter(torch.randn(mo, mi))
        self._inducing_sd = torch.nn.Parameter(torch.full((mo, mi), isp(1e-3)))
        self._lamda = torch.nn.Parameter(torch.tensor(isp(init_lamda)))
        self._d_row = torch.nn.Parameter(torch.full((mo,), isp(1e-3)))
        self._d_col = torch.nn.Parameter(torch.full((mi,), isp(1e-3)))

    def lamda(self):
        return F.softplus(self._lamda).clamp(0, self.max_lamda)

    def sd_u(self):
        return F.softplus(self._inducing_sd).clamp(0, self.max_sd_u)

    def weight(self):
        dr, dc = F.softplus(self._d_row), F.softplus(self._d_col)
        lr = jchol(self.z_row @ self.z_row.t() + torch.diag(dr ** 2))
        lc = jchol(self.z_col @ self.z_col.t() + torch.diag(dc ** 2))
        lam = self.lamda()
        u = self.inducing_mean + self.sd_u() * torch.randn(self.mo, self.mi)
        u = lr @ u @ lc.t()
        e1 = torch.randn(self.dout, self.din)
        e2, e3, e4 = torch.randn(3, self.mo, self.mi)
        lhr = jchol(self.z_row @ self.z_row.t())
        lhc = jchol(self.z_col @ self.z_col.t())
        ubar = self.z_row @ e1 @ self.z_col.t() + (lhr @ e2) * dc + dr[:, None] * (e3 @ lhc.t()) \
            + dr[:, None] * e4 * dc
        core = torch.cholesky_solve(u - lam * ubar, lr)
        core = torch.cholesky_solve(core.t(), lc).t()
        return self.sigma * (lam * e1 + self.z_row.t() @ core @ self.z_col)

    def forward(self, x):
        w = self.weight()
        return F.linear(x, w[:, :-1], w[:, -1])

    def kl(self):
        lam = self.lamda()
        sd = self.sd_u()
        m = self.inducing_mean
        klu = 0.5 * ((sd ** 2).sum() + (m ** 2).sum() - m.numel() - 2 * sd.log().sum())
        return klu + self.din * self.dout * (0.5 * lam ** 2 - lam.log() - 0.5)


def load_images(d, n):
    p = os.path.join(d, "train-images-idx3-ubyte.gz")
    q = os.path.join(d, "train-labels-idx1-ubyte.gz")
    if not (os.path.exists(p) and os.path.exists(q)):
        return torch.rand(n, 784), torch.randint(0, 10, (n,))
    with gzip.open(p) as f:
        x = torch.frombuffer(bytearray(f.read()[16:16 + n * 784]), dtype=torch.uint8).float().div(255).view(n, 784)
    with gzip.open(q) as f:
        y = torch.frombuffer(bytearray(f.read()[8:8 + n]), dtype=torch.uint8).long()
    return x, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rows", type=int, default=32)
    ap.add_argument("--cols", type=int, default=32)
    ap.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    layers = [InducingLinear(784, 256, a.rows, a.cols), InducingLinear(256, 256, a.rows, a.cols),
              InducingLinear(256, 10, a.rows, a.cols)]
    net = torch.nn.ModuleList(layers)
    opt = torch.optim.Adam(net.parameters(), 3e-3)
    n = 10000
    x, y = load_images(a.data_dir, n)
    N = 60000

    def step(i):
        idx = torch.randint(0, n, (100,))
        h = x[idx]
        for j, l in enumerate(layers):
            h = l(h)
            if j < len(layers) - 1:
                h = F.relu(h)
        loss = F.cross_entropy(h, y[idx]) + sum(l.kl() for l in layers) / N
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    for i in range(10):
        step(i)
    t = time.perf_counter()
    for i in range(a.steps):
        step(i)
    dt = time.perf_counter() - t
    print(f"torch {torch.__version__} threads {a.threads}: {a.steps} steps in {dt:.2f} s = {a.steps / dt:.2f} steps/s")


if __name__ == "__main__":
    main()
