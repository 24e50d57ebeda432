#!/usr/bin/python3
"""Single-threaded SGEMM GFLOP/s of numpy's BLAS at n = 64, 256, 1024 (square, float32).

Prints one line per size: "n GFLOP/s". Run with one BLAS thread (bench/gemm_vs_blas.sh sets
OPENBLAS_NUM_THREADS, OMP_NUM_THREADS and MKL_NUM_THREADS to 1).
"""
import sys
import time

import numpy as np


def gflops(n, min_seconds=0.5):
    rng = np.random.default_rng(n)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    c = np.empty((n, n), dtype=np.float32)
    np.matmul(a, b, out=c)  # warm-up
    reps, start = 0, time.perf_counter()
    while reps == 0 or time.perf_counter() - start < min_seconds:
        np.matmul(a, b, out=c)
        reps += 1
    per = (time.perf_counter() - start) / reps
    return 2.0 * n * n * n / per / 1e9


def main():
    sizes = [int(s) for s in sys.argv[1:]] or [64, 256, 1024]
    for n in sizes:
        print(n, "%.2f" % gflops(n))


if __name__ == "__main__":
    main()
