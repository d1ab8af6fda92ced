#!/usr/bin/env python3
"""Time PyTorch CPU ops at the shapes of bench/attention_bench.cpp and bench/linear_bench.cpp,
so Quill's kernels can be compared with the same thread count.

  /work/venv-tools/bin/python tools/bench_torch_ops.py --threads 2 [--seq 1024 4096] [--runs 5]

Attention: scaled_dot_product_attention on q, k, v laid out as Quill's [B, S, H, Dh] and viewed
as [B, H, S, Dh] with transpose(1, 2), as diffusers' attention processors do (batch 1, 24 heads
x 64). Linear: F.linear at M = 1024 with K = N = 1536 / 3072, f32 (x and W) and bf16 (x and W,
torch's native bf16 path). Prints one JSON line per measurement (best and median of --runs after
one warm-up).
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F


def timeit(fn, runs):
    fn()  # warm-up
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)


def bench_attention(seq, runs, heads=24, dh=64):
    gen = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(1, seq, heads, dh, generator=gen) for _ in range(3))
    qh, kh, vh = (t.transpose(1, 2) for t in (q, k, v))
    with torch.no_grad():
        best, med = timeit(lambda: F.scaled_dot_product_attention(qh, kh, vh), runs)
    flops = 4.0 * seq * seq * heads * dh
    return {"op": "sdpa", "seq": seq, "heads": heads, "head_dim": dh, "best_ms": best * 1e3,
            "median_ms": med * 1e3, "gflops": flops / best * 1e-9}


def bench_linear(m, n, k, dtype, runs):
    gen = torch.Generator().manual_seed(2)
    x = (torch.randn(m, k, generator=gen) * 0.05).to(dtype)
    w = (torch.randn(n, k, generator=gen) * 0.05).to(dtype)
    b = (torch.randn(n, generator=gen) * 0.05).to(dtype)
    with torch.no_grad():
        best, med = timeit(lambda: F.linear(x, w, b), runs)
    return {"op": "linear", "M": m, "N": n, "K": k, "dtype": str(dtype).replace("torch.", ""),
            "best_ms": best * 1e3, "median_ms": med * 1e3, "gflops": 2.0 * m * n * k / best * 1e-9}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--seq", type=int, nargs="+", default=[1024, 4096])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-linear", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    common = {"threads": args.threads, "torch": torch.__version__}
    for s in args.seq:
        print(json.dumps({**bench_attention(s, args.runs), **common}), flush=True)
    if not args.no_linear:
        for n in (1536, 3072):
            for dt in (torch.float32, torch.bfloat16):
                print(json.dumps({**bench_linear(1024, n, n, dt, args.runs), **common}), flush=True)


if __name__ == "__main__":
    main()
