#!/usr/bin/env python3
"""PyTorch timings on the shapes bench/cuda_bench.cpp times, as the baseline for Quill's kernels.

  bf16 GEMM      torch.nn.functional.linear, x [M, K] bf16, W [N, K] bf16 (M = 4096 and 256, K = N = 3072)
  attention      scaled_dot_product_attention, bf16 [B, H, S, Dh], S = 4096, Dh 64 and 128, 24 heads
  DiT MLP block  layer norm + modulate, fc1, GELU(tanh), fc2, gated residual at M = 256, D = 1536:
                 eager, and replayed from a torch.cuda.CUDAGraph

Prints a table, then lines "CSV,torch,<op>,<shape>,<ms>,<rate>,<unit>" that scripts/device-check.sh
merges with Quill's. Without a CUDA device it says so and exits 0.
"""
import sys


def time_ms(fn, warmup=3, iters=20):
    import torch

    for _ in range(warmup):
        fn()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(iters):
        fn()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) / iters


def main():
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("torch is not installed: no baseline")
        return 0
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to time (torch %s)" % torch.__version__)
        return 0
    dev = torch.device("cuda")
    print("torch %s on %s" % (torch.__version__, torch.cuda.get_device_name(0)))
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []

    def add(op, shape, ms, rate, unit):
        rows.append((op, shape, ms, rate, unit))
        print("  %-34s %-28s %9.4f ms  %9.1f %s" % (op, shape, ms, rate, unit))

    g = torch.Generator(device=dev).manual_seed(0)
    for M, K, N in ((4096, 3072, 3072), (256, 3072, 3072)):
        x = torch.randn(M, K, device=dev, dtype=torch.bfloat16, generator=g)
        w = torch.randn(N, K, device=dev, dtype=torch.bfloat16, generator=g) * 0.02
        ms = time_ms(lambda: F.linear(x, w), iters=20 if M >= 1024 else 200)
        add("torch_bf16_linear", "M%d K%d N%d" % (M, K, N), ms, 2.0 * M * N * K / ms / 1e9, "TFLOP/s")

    B, H, S = 1, 24, 4096
    for Dh in (64, 128):
        q, k, v = (torch.randn(B, H, S, Dh, device=dev, dtype=torch.bfloat16, generator=g) for _ in range(3))
        ms = time_ms(lambda: F.scaled_dot_product_attention(q, k, v))
        add("torch_sdpa_bf16", "B%d H%d S%d Dh%d" % (B, H, S, Dh), ms, 4.0 * B * H * S * S * Dh / ms / 1e9, "TFLOP/s")

    M, D = 256, 1536
    x = torch.full((M, D), 0.5, device=dev)
    mod = torch.full((6, D), 0.1, device=dev)
    w1 = (torch.randn(4 * D, D, device=dev, generator=g) * 0.02).to(torch.bfloat16)
    w2 = (torch.randn(D, 4 * D, device=dev, generator=g) * 0.02).to(torch.bfloat16)

    def block():
        h = F.layer_norm(x, (D,), eps=1e-6) * (1 + mod[1]) + mod[0]
        a = F.gelu(F.linear(h.to(torch.bfloat16), w1).float(), approximate="tanh")
        y = F.linear(a.to(torch.bfloat16), w2).float()
        x.add_(mod[2] * y)

    shape = "M%d D%d" % (M, D)
    eager = time_ms(block, iters=100)
    add("torch_dit_mlp_eager", shape, eager, 0.0, "-")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            block()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        block()
    replay = time_ms(graph.replay, iters=100)
    add("torch_dit_mlp_graph_replay", shape, replay, eager / replay, "x faster")

    for op, shape, ms, rate, unit in rows:
        print("CSV,torch,%s,%s,%.5f,%.2f,%s" % (op, shape, ms, rate, unit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
