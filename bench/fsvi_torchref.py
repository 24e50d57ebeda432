#!/usr/bin/env python3
"""timrudner/FSVI's Fashion-MNIST recipe, written again in PyTorch, as a check on our trainer.

Paper 004's Table 1 gives FSVI on Fashion-MNIST an ECE of 0.014; `edgebnn train --preset
paper004-fmnist-fsvi`, which follows the public reference code (timrudner/FSVI at 4882ece,
`trainer.py` with `configs/fsvi-cnn-fmnist.json`; docs/results/fsvi_reference.md), ends its 200
epochs at 0.040. The reference code needs JAX, which this machine cannot install, so this script
is an independent implementation of what that code does, read from it and written here from
scratch in PyTorch, including the parts our trainer does not reproduce: the input standardisation
(x/255 - mean)/std, flax's initialisation (convolutions variance-scaling 1/20 fan-in uniform,
dense LeCun normal, zero biases), the log-variance parametrisation with its initial values
(hidden -20 plus a second initialisation draw, output weights U[-50, -49.9], output biases
U[-8, -7.9]), the separate output weight and bias variances, the doubled weight term of the
KL's covariances, solarisation in the context transform and the fixed 10 000-image context subset.

One step: a training batch of 128 (no augmentation, drop_last) and 32 context images (the fixed
subset through RandomCrop(28, padding 4), horizontal flip, GaussianBlur(3, sigma 0.1) - the
identity on 8-bit images -, RandomSolarize(threshold 0.5, p 0.5), ColorJitter(brightness 0.5,
contrast 0.5) in a random order); the likelihood uses one whole-weight sample, the KL another
draw of the hidden weights for q and the same draw around the initial network for the prior:

    KL = sum_j KL(N(f_q[:, j], 2 Phi_q diag(var_W[j]) Phi_q^T + var_b[j] + 1e-6 I)
                || N(f_0[:, j], 2 Phi_0 Phi_0^T + 1 + 1e-6 I)),

f_q the context logits at the sampled hidden weights and the output layer's mean, f_0 and Phi_0
the initial network's; loss = mean NLL + KL / 60000; gradients clipped element-wise to [-1, 1],
SGD lr 0.005 momentum 0.9, cosine decay over all 200 x 468 steps to 0.005 x lr. Evaluation: 10
weight samples, the mean of their softmax; accuracy, NLL, and ECE both as the reference computes
it (10 bins [lo, hi)) and as `edgebnn eval` does (15 bins (lo, hi]).

Usage: python3 bench/fsvi_torchref.py --seed S --out DIR [--epochs 200] [--stop-after E] [--eval-every 10]
           [--threads 1] [--train-limit N] [--test-limit N] [--data-dir DIR]
       python3 bench/fsvi_torchref.py --self-test
       python3 bench/fsvi_torchref.py --summarize DIR   (the table: mean ± s.e. over DIR's seeds)
Resumable: DIR/torchref_sS.pt holds the state after each epoch (a rerun continues from it);
--stop-after E ends the run after epoch E of the --epochs schedule (evaluated there), so that
several seeds can be compared part-way and continued later with a larger E;
DIR/torchref_sS.jsonl gets one line per evaluation. Needs python3-torch and python3-numpy
(Debian), and the Fashion-MNIST IDX files (Debian's dataset-fashion-mnist).
"""
import argparse
import gzip
import json
import math
import os
import time

import numpy as np
import torch
import torch.nn.functional as F

N_TRAIN = 60000
BATCH, CONTEXT, CONTEXT_SUBSET = 128, 32, 10000
LR, ALPHA, MOMENTUM, CLIP, JITTER = 0.005, 0.005, 0.9, 1.0, 1e-6
HIDDEN_LOGVAR, OUT_W_LOGVAR, OUT_B_LOGVAR, PRIOR_FEATURE_LOGVAR = -20.0, -50.0, -8.0, -20.0
EVAL_SAMPLES = 10
# name, shape (out first, PyTorch's layout), fan-in
LAYERS = [("conv1", (32, 1, 3, 3), 9), ("conv2", (64, 32, 3, 3), 288),
          ("fc1", (256, 3136), 3136), ("fc2", (10, 256), 256)]


def idx(path, offset):
    with gzip.open(path) as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)


def load(data_dir, part):
    x = idx(os.path.join(data_dir, f"{part}-images-idx3-ubyte.gz"), 16).reshape(-1, 28, 28)
    y = idx(os.path.join(data_dir, f"{part}-labels-idx1-ubyte.gz"), 8)
    if len(x) != len(y):
        raise SystemExit(f"{data_dir}: {part} has {len(x)} images and {len(y)} labels")
    return x, y.astype(np.int64)


def flax_init(gen):
    """Weights as flax initialises the reference's CNN; biases zero."""
    ps = {}
    for name, shape, fan in LAYERS:
        if name.startswith("conv"):  # variance_scaling(1/20, fan_in, uniform)
            lim = math.sqrt(3 * (1 / 20) / fan)
            w = (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1) * lim
        else:  # lecun_normal: truncated normal on [-2, 2], sd sqrt(1/fan) / 0.8796...
            sd = math.sqrt(1 / fan) / 0.87962566103423978
            w = torch.empty(shape, dtype=torch.float64)
            flat = w.view(-1)
            filled = 0
            while filled < flat.numel():
                z = torch.randn(flat.numel(), generator=gen, dtype=torch.float64)
                z = z[z.abs() <= 2][: flat.numel() - filled]
                flat[filled:filled + len(z)] = z
                filled += len(z)
            w *= sd
        ps[name + ".w"] = w.float()
        ps[name + ".b"] = torch.zeros(shape[0])
    return ps


def features(ps, x):
    h = F.max_pool2d(F.relu(F.conv2d(x, ps["conv1.w"], ps["conv1.b"], padding=1)), 2)
    h = F.max_pool2d(F.relu(F.conv2d(h, ps["conv2.w"], ps["conv2.b"], padding=1)), 2)
    return F.relu(F.linear(h.flatten(1), ps["fc1.w"], ps["fc1.b"]))


def sample(mean, logvar, gen, names):
    return {k: mean[k] + torch.exp(logvar[k] / 2) * torch.randn(mean[k].shape, generator=gen)
            if k in names else mean[k] for k in mean}


def logits(ps, x):
    return F.linear(features(ps, x), ps["fc2.w"], ps["fc2.b"])


def kl_mvn(mq, cq, mp, cp):
    """KL(N(mq, cq) || N(mp, cp)) in float64, batched over the leading (class) axis."""
    lp = torch.linalg.cholesky(cp)
    lq = torch.linalg.cholesky(cq)
    d = mq.shape[-1]
    a = torch.linalg.solve_triangular(lp, lq, upper=False)
    diff = torch.linalg.solve_triangular(lp, (mp - mq).unsqueeze(-1), upper=False).squeeze(-1)
    logdet = 2 * (torch.log(torch.diagonal(lp, dim1=-2, dim2=-1)).sum(-1)
                  - torch.log(torch.diagonal(lq, dim1=-2, dim2=-1)).sum(-1))
    return 0.5 * ((a ** 2).sum((-2, -1)) + (diff ** 2).sum(-1) - d + logdet)


class Context:
    """The reference's context stream: a fixed subset of training images, reshuffled each pass,
    through its corruptions (on 8-bit images, as torchvision's PIL transforms)."""

    def __init__(self, images, rng):
        self.n = min(CONTEXT_SUBSET, len(images))
        self.images = images[rng.choice(len(images), self.n, replace=False)]
        self.rng = rng
        self.order, self.pos = rng.permutation(self.n), 0

    def batch(self):
        if self.pos + CONTEXT > self.n:
            self.order, self.pos = self.rng.permutation(self.n), 0
        ix = self.order[self.pos:self.pos + CONTEXT]
        self.pos += CONTEXT
        return np.stack([self.corrupt(self.images[i]) for i in ix])

    def corrupt(self, img):
        r = self.rng
        p = np.zeros((36, 36), np.uint8)
        p[4:32, 4:32] = img
        i, j = r.integers(0, 9, size=2)
        x = p[i:i + 28, j:j + 28]
        if r.random() < 0.5:
            x = x[:, ::-1]
        # GaussianBlur((3, 3), sigma=0.1): off-centre weights e^-50, the identity on uint8.
        if r.random() < 0.5:  # RandomSolarize(threshold=0.5): every pixel >= 1 inverted
            x = np.where(x >= 1, 255 - x, x).astype(np.uint8)
        b, c = r.uniform(0.5, 1.5, size=2)
        for op in r.permutation(2):  # ColorJitter applies its enhancements in a random order
            xf = x.astype(np.float64)
            if op == 0:  # ImageEnhance.Brightness: blend with black
                xf = xf * b
            else:  # ImageEnhance.Contrast: blend with the image's rounded mean grey
                m = int(xf.mean() + 0.5)
                xf = m + c * (xf - m)
            x = np.clip(np.floor(xf + 0.5), 0, 255).astype(np.uint8)
        return x


def standardise(x, mean, std):
    return torch.from_numpy(((x.astype(np.float32) / 255 - mean) / std)[:, None])


def evaluate(mean, logvar, x, y, gen, names):
    probs = torch.zeros(len(x), 10, dtype=torch.float64)
    with torch.no_grad():
        for _ in range(EVAL_SAMPLES):
            ps = sample(mean, logvar, gen, names)
            for s in range(0, len(x), 1000):
                probs[s:s + 1000] += F.softmax(logits(ps, x[s:s + 1000]), -1).double()
    probs /= EVAL_SAMPLES
    conf, pred = probs.max(1)
    right = (pred == y).double()
    nll = -torch.log(probs[torch.arange(len(y)), y].clamp_min(1e-300)).mean().item()

    def ece(bins, left_closed):
        e = 0.0
        edges = torch.linspace(0, 1, bins + 1, dtype=torch.float64)
        for lo, hi in zip(edges[:-1], edges[1:]):
            sel = (conf >= lo) & (conf < hi) if left_closed else (conf > lo) & (conf <= hi)
            if sel.any():
                e += sel.double().mean().item() * abs(right[sel].mean().item() - conf[sel].mean().item())
        return e

    return {"acc": 100 * right.mean().item(), "nll": nll, "ece_ref10": ece(10, True), "ece15": ece(15, False)}


def self_test():
    """Checks the pieces against independent forms: the KL against torch.distributions, the
    initialisation's variances against flax's, the context corruptions' invariants."""
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(3, 5, 5, generator=gen, dtype=torch.float64)
    b = torch.randn(3, 5, 5, generator=gen, dtype=torch.float64)
    cq, cp = a @ a.transpose(1, 2) + 0.1 * torch.eye(5), b @ b.transpose(1, 2) + 0.1 * torch.eye(5)
    mq, mp = torch.randn(3, 5, generator=gen, dtype=torch.float64), torch.randn(3, 5, generator=gen, dtype=torch.float64)
    want = torch.distributions.kl_divergence(torch.distributions.MultivariateNormal(mq, cq),
                                             torch.distributions.MultivariateNormal(mp, cp))
    got = kl_mvn(mq, cq, mp, cp)
    if not torch.allclose(got, want, rtol=1e-9, atol=1e-9):
        raise SystemExit(f"self-test: KL {got.tolist()}, torch.distributions {want.tolist()}")
    ps = flax_init(torch.Generator().manual_seed(1))
    for name, shape, fan in LAYERS:
        want_var = (1 / 20) / fan if name.startswith("conv") else 1 / fan
        got_var = ps[name + ".w"].double().var().item()
        n = ps[name + ".w"].numel()
        if abs(got_var / want_var - 1) > 6 * math.sqrt(2 / n) + 0.01:  # sampling error of a variance
            raise SystemExit(f"self-test: {name} weight variance {got_var:.3g}, flax's {want_var:.3g}")
        if ps[name + ".b"].abs().max() != 0:
            raise SystemExit(f"self-test: {name} bias not zero")
    img = (np.arange(784) % 256).astype(np.uint8).reshape(28, 28)
    ctx = Context(np.stack([img] * 40), np.random.default_rng(2))
    for x in ctx.batch():
        if x.shape != (28, 28) or x.dtype != np.uint8:
            raise SystemExit(f"self-test: context image {x.shape} {x.dtype}")
    print("self-test passed")


def summarize(out):
    """Prints a Markdown table of DIR's evaluations, one row per evaluated epoch: accuracy, NLL and
    both ECEs as mean ± standard error over the seeds that reached that epoch."""
    runs = {}
    for name in sorted(os.listdir(out)):
        if name.startswith("torchref_s") and name.endswith(".jsonl"):
            with open(os.path.join(out, name)) as f:
                runs[name[len("torchref_s"):-len(".jsonl")]] = {d["epoch"]: d for d in map(json.loads, filter(str.strip, f))}
    if not runs:
        raise SystemExit(f"{out}: no torchref_sS.jsonl files")

    def cell(vals, scale, digits):
        m = sum(vals) / len(vals)
        if len(vals) < 2:
            return f"{scale * m:.{digits}f}"
        se = math.sqrt(sum((v - m) ** 2 for v in vals) / (len(vals) - 1) / len(vals))
        return f"{scale * m:.{digits}f} ± {scale * se:.{digits}f}"

    print(f"seeds: {', '.join(runs)} ({out})\n")
    print("| epoch | seeds | accuracy % | NLL | ECE (15 bins, ours) | ECE (10 bins, the code's) |")
    print("|---:|---:|---|---|---|---|")
    for e in sorted({e for r in runs.values() for e in r}):
        rows = [r[e] for r in runs.values() if e in r]
        print(f"| {e} | {len(rows)} | {cell([d['acc'] for d in rows], 1, 2)} | {cell([d['nll'] for d in rows], 1, 3)} | "
              f"{cell([d['ece15'] for d in rows], 1, 3)} | {cell([d['ece_ref10'] for d in rows], 1, 3)} |")
    print("| paper 004, Table 1 (10 seeds) | | 92.52 ± 0.13 | | 0.014 ± 0.002 | |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--summarize", metavar="DIR", help="print the evaluations in DIR as a table (mean ± s.e. over seeds), then exit")
    ap.add_argument("--self-test", action="store_true", help="check the KL, the initialisation and the corruptions, then exit")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--out")
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--stop-after", type=int, default=0, metavar="E",
                    help="stop after epoch E of the --epochs schedule (evaluated there; a later run continues)")
    ap.add_argument("--eval-every", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--train-limit", type=int, default=0, help="use only the first N training images (a quick check)")
    ap.add_argument("--test-limit", type=int, default=0, help="evaluate on the first N test images only (a quick check)")
    ap.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    a = ap.parse_args()
    if a.self_test:
        self_test()
        return
    if a.summarize:
        summarize(a.summarize)
        return
    if a.seed is None or not a.out:
        raise SystemExit("--seed and --out are required")
    if a.epochs < 1 or a.eval_every < 1 or a.threads < 1 or a.train_limit < 0 or a.test_limit < 0:
        raise SystemExit("--epochs, --eval-every and --threads must be at least 1, --train-limit and --test-limit at least 0")
    if not 0 <= a.stop_after <= a.epochs:
        raise SystemExit(f"--stop-after {a.stop_after}: must be between 1 and --epochs {a.epochs} (0: run to the end)")
    last = a.stop_after or a.epochs
    torch.set_num_threads(a.threads)
    os.makedirs(a.out, exist_ok=True)
    state_path = os.path.join(a.out, f"torchref_s{a.seed}.pt")
    log_path = os.path.join(a.out, f"torchref_s{a.seed}.jsonl")

    xtr, ytr = load(a.data_dir, "train")
    xte, yte = load(a.data_dir, "t10k")
    mean, std = float((xtr / 255.0).mean()), float((xtr / 255.0).std())  # over all 60 000, as the code
    if a.train_limit:
        xtr, ytr = xtr[:a.train_limit], ytr[:a.train_limit]
    if a.test_limit:
        xte, yte = xte[:a.test_limit], yte[:a.test_limit]
    steps_per_epoch = len(xtr) // BATCH
    if steps_per_epoch == 0:
        raise SystemExit(f"--train-limit {a.train_limit}: fewer images than one batch of {BATCH}")
    total = steps_per_epoch * a.epochs
    hidden = [k for k in (n + s for n, _, _ in LAYERS[:3] for s in (".w", ".b"))]
    every = hidden + ["fc2.w", "fc2.b"]
    x_test, y_test = standardise(xte, mean, std), torch.from_numpy(yte)

    if os.path.exists(state_path):
        st = torch.load(state_path, weights_only=False)
        mu, lv, mom, init = st["mu"], st["lv"], st["mom"], st["init"]
        gen, rng, epoch0 = torch.Generator(), st["rng"], st["epoch"]
        gen.set_state(st["gen"])
        ctx = st["ctx"]
        ctx.rng = rng
        print(f"resuming after epoch {epoch0}")
    else:
        gen = torch.Generator().manual_seed(a.seed)
        rng = np.random.default_rng(a.seed)
        init = flax_init(gen)
        mu = {k: v.clone().requires_grad_() for k, v in init.items()}
        draw = flax_init(gen)  # the code's second initialisation, for the log-variances
        lv = {k: (draw[k] + HIDDEN_LOGVAR) for k in hidden}
        lv["fc2.w"] = OUT_W_LOGVAR + 0.1 * torch.rand(LAYERS[3][1], generator=gen)
        lv["fc2.b"] = OUT_B_LOGVAR + 0.1 * torch.rand(10, generator=gen)
        lv = {k: v.clone().requires_grad_() for k, v in lv.items()}
        mom = {("mu", k): torch.zeros_like(v) for k, v in mu.items()}
        mom.update({("lv", k): torch.zeros_like(v) for k, v in lv.items()})
        ctx, epoch0 = Context(xtr, rng), 0

    prior_lv = {k: torch.full_like(init[k], PRIOR_FEATURE_LOGVAR) for k in hidden}
    if epoch0 >= last:
        print(f"{state_path}: has reached epoch {epoch0}, at or past --stop-after {last}; nothing to do")
        return
    for epoch in range(epoch0 + 1, last + 1):
        t0 = time.time()
        perm = rng.permutation(len(xtr))
        tot_nll = tot_kl = 0.0
        for s in range(steps_per_epoch):
            step = (epoch - 1) * steps_per_epoch + s
            lr = LR * ((1 - ALPHA) * 0.5 * (1 + math.cos(math.pi * min(step, total) / total)) + ALPHA)
            ix = perm[s * BATCH:(s + 1) * BATCH]
            xb, yb = standardise(xtr[ix], mean, std), torch.from_numpy(ytr[ix])
            xc = standardise(ctx.batch(), mean, std)
            nll = F.cross_entropy(logits(sample(mu, lv, gen, every), xb), yb)
            eps = {k: torch.randn(mu[k].shape, generator=gen) for k in hidden}
            q_ps = {k: mu[k] + torch.exp(lv[k] / 2) * eps[k] for k in hidden}
            phi_q = features(q_ps, xc).double()
            f_q = (phi_q @ mu["fc2.w"].double().T + mu["fc2.b"].double()).T  # class × context
            with torch.no_grad():
                p_ps = {k: init[k] + torch.exp(prior_lv[k] / 2) * eps[k] for k in hidden}
                phi_0 = features(p_ps, xc).double()
                f_0 = (phi_0 @ init["fc2.w"].double().T + init["fc2.b"].double()).T
                eye = torch.eye(CONTEXT, dtype=torch.float64)
                cov_0 = (2 * phi_0 @ phi_0.T + 1.0 + JITTER * eye).expand(10, CONTEXT, CONTEXT)
            var_w, var_b = torch.exp(lv["fc2.w"]).double(), torch.exp(lv["fc2.b"]).double()
            cov_q = 2 * torch.einsum("cf,jf,df->jcd", phi_q, var_w, phi_q) + var_b[:, None, None] + JITTER * eye
            kl = kl_mvn(f_q, cov_q, f_0, cov_0).sum()
            loss = nll + kl.float() / N_TRAIN
            params = list(mu.values()) + list(lv.values())
            grads = torch.autograd.grad(loss, params)
            with torch.no_grad():
                for key, g in zip([("mu", k) for k in mu] + [("lv", k) for k in lv], grads):
                    m = mom[key]
                    m.mul_(MOMENTUM).add_(g.clamp(-CLIP, CLIP))
                    (mu if key[0] == "mu" else lv)[key[1]].sub_(lr * m)
            tot_nll += nll.item()
            tot_kl += kl.item()
            if not math.isfinite(loss.item()):
                raise SystemExit(f"epoch {epoch} step {s}: loss {loss.item()} (nll {nll.item()}, KL {kl.item()})")
        line = {"epoch": epoch, "nll_train": tot_nll / steps_per_epoch, "kl": tot_kl / steps_per_epoch,
                "lr": lr, "seconds": time.time() - t0}
        if epoch % a.eval_every == 0 or epoch == last:
            line.update(evaluate({k: v.detach() for k, v in mu.items()}, {k: v.detach() for k, v in lv.items()},
                                 x_test, y_test, gen, every))
        print(json.dumps(line), flush=True)
        if "acc" in line:
            with open(log_path, "a") as f:
                f.write(json.dumps(line) + "\n")
        tmp = state_path + ".tmp"
        torch.save({"mu": mu, "lv": lv, "mom": mom, "init": init, "gen": gen.get_state(), "rng": rng,
                    "ctx": ctx, "epoch": epoch}, tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, state_path)


if __name__ == "__main__":
    main()
