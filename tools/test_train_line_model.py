#!/usr/bin/env python3
"""The line trainer's glyph bridge (tools/train_line_model.py --bridge) against the sampler it trains
for (src/pipeline/line_sampler.cpp): at sigma = start the bridge's x_sigma is exactly the sampler's
first state, start * noise - (1 - start) * glyph; every x_sigma on it lies on one straight line to the
hand, x_sigma - sigma * v = x0; and Euler steps along the true velocity from the start, on the
sampler's own schedule, land on the hand. Exit 0 = pass, 77 = skipped (no torch), 1 = fail.

  python tools/test_train_line_model.py        (CTest runs it as ToolsPython.GlyphBridge)
"""

import sys
from pathlib import Path

try:
    import torch
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from train_line_model import glyph_bridge
except ImportError as e:  # CI images without the tools venv
    print(f"skipped: {e}")
    sys.exit(77)


def main() -> int:
    g = torch.Generator().manual_seed(3)
    b, h, w = 3, 32, 48
    x0 = torch.rand(b, 1, h, w, generator=g, dtype=torch.float64) * 2 - 1  # hand, paper +1
    glyph = torch.rand(b, 1, h, w, generator=g, dtype=torch.float64) * 2 - 1  # ink +1
    eps = torch.randn(b, 1, h, w, generator=g, dtype=torch.float64)
    failures = []
    for start in (0.7, 0.8, 0.9):
        x_start, v = glyph_bridge(x0, glyph, eps, torch.full((b,), start, dtype=torch.float64), start)
        sampler_start = start * eps - (1 - start) * glyph
        if not torch.allclose(x_start, sampler_start, atol=1e-12):
            failures.append(f"start {start}: x_start is not the sampler's start")
        for sigma in (0.05, 0.3, start / 2, start):
            xs, vs = glyph_bridge(x0, glyph, eps, torch.full((b,), sigma, dtype=torch.float64), start)
            if not torch.allclose(xs - sigma * vs, x0, atol=1e-12):
                failures.append(f"start {start}, sigma {sigma}: x - sigma v is not the hand")
            if not torch.allclose(vs, v, atol=1e-12):
                failures.append(f"start {start}, sigma {sigma}: velocity is not constant along the path")
        # Euler from the start on 20 equal sigma steps to 0, as the sampler does with shift 1.
        x = sampler_start.clone()
        sigmas = [start * (1 - i / 20) for i in range(21)]
        for s_now, s_next in zip(sigmas, sigmas[1:]):
            _, vel = glyph_bridge(x0, glyph, eps, torch.full((b,), s_now, dtype=torch.float64), start)
            x = x + (s_next - s_now) * vel
        if not torch.allclose(x, x0, atol=1e-10):
            failures.append(f"start {start}: Euler along the bridge ends {float((x - x0).abs().max()):.3g} from the hand")
    for f in failures:
        print("FAIL", f)
    print("glyph bridge:", "ok" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
