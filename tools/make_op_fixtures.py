#!/usr/bin/env python3
"""Reference values for the CPU op tests, from PyTorch on the CPU in float32.

Writes tests/fixtures/ops/gelu_tanh.txt: one "x y" pair per line (%.9g, exact float32 round
trip), y = torch.nn.functional.gelu(x, approximate="tanh"). Run with the tools venv:
    /work/venv-tools/bin/python tools/make_op_fixtures.py
"""
import os

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def gelu_tanh_fixture(path):
    grid = torch.linspace(-12.0, 12.0, 481, dtype=torch.float32)  # step 0.05
    small = torch.tensor([0.0, -0.0, 1e-6, -1e-6, 1e-3, -1e-3, 1e-20, 30.0, -30.0, 100.0, -100.0])
    gen = torch.Generator().manual_seed(0)
    rand = torch.randn(256, generator=gen, dtype=torch.float32) * 3.0
    x = torch.cat([grid, small, rand])
    y = torch.nn.functional.gelu(x, approximate="tanh")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(f"# torch {torch.__version__}: x, gelu(x, approximate='tanh') in float32\n")
        for a, b in zip(x.tolist(), y.tolist()):
            f.write(f"{a:.9g} {b:.9g}\n")


if __name__ == "__main__":
    torch.set_num_threads(1)
    gelu_tanh_fixture(os.path.join(ROOT, "tests", "fixtures", "ops", "gelu_tanh.txt"))
