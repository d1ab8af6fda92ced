#!/usr/bin/env python3
"""The line trainer's glyph bridge (tools/train_line_model.py --bridge) against the sampler it trains
for (src/pipeline/line_sampler.cpp): at sigma = start the bridge's x_sigma is exactly the sampler's
first state, start * noise - (1 - start) * glyph; every x_sigma on it lies on one straight line to the
hand, x_sigma - sigma * v = x0; and Euler steps along the true velocity from the start, on the
sampler's own schedule, land on the hand. --glyph-dropout (blank_glyph_rows) blanks only style-dropped
rows, about the share asked, never a bridge row. And --layers' depth growth (grow_depth) keeps the warm
start's function: the grown model's output equals the shallower one's, while a perturbed identity
block changes it. Exit 0 = pass, 77 = skipped (no torch), 1 = fail.

  python tools/test_train_line_model.py        (CTest runs it as ToolsPython.GlyphBridge)
"""

import sys
from pathlib import Path

try:
    import torch
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from train_line_model import PRESETS, Trainer, blank_glyph_rows, glyph_bridge, grow_depth
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
    failures += check_blank_glyph_rows()
    grow = check_grow_depth()
    for f in grow:
        print("FAIL", f)
    failures += grow
    return 1 if failures else 0


def check_blank_glyph_rows() -> list[str]:
    torch.manual_seed(5)
    n = 4000
    glyph = torch.rand(n, 1, 4, 6) * 2 - 1
    drop = torch.rand(n) < 0.15
    keep = torch.rand(n) < 0.25
    out = blank_glyph_rows(glyph, drop, 2 / 3, keep)
    blank = (out == -1).flatten(1).all(1)
    failures = []
    if (blank & ~drop).any():
        failures.append("glyph dropout blanked a row whose style was kept")
    if (blank & keep).any():
        failures.append("glyph dropout blanked a bridge row")
    if not torch.equal(out[~blank], glyph[~blank]):
        failures.append("glyph dropout changed a row it did not blank")
    share = float(blank.sum()) / float((drop & ~keep).sum())
    if abs(share - 2 / 3) > 0.08:
        failures.append(f"glyph dropout blanked {share:.2f} of the eligible rows, want 2/3")
    print("glyph dropout:", "ok" if not failures else f"{len(failures)} failures")
    return failures


def check_grow_depth() -> list[str]:
    import copy
    torch.manual_seed(5)
    small = copy.deepcopy(PRESETS["cpu-small"])
    small["model"].update(line_height=16, max_line_width=128, num_layers=2, num_attention_heads=2,
                          attention_head_dim=8, style_dim=96)
    old = Trainer(small).eval()
    for p in old.parameters():  # every tensor non-trivial, so a misplaced block shows
        torch.nn.init.normal_(p, std=0.2)
    deep = copy.deepcopy(small)
    deep["model"]["num_layers"] = 4
    grown = Trainer(deep).eval()
    fresh = grow_depth(grown, old.state_dict(), 2)
    failures = [] if fresh == [1, 2] else [f"grow_depth: new blocks {fresh}, expected [1, 2]"]
    b, w = 2, 48
    x = torch.randn(b, 1, 16, w)
    glyph = torch.randn(b, 1, 16, w)
    style = torch.randn(b, 96)
    t = torch.tensor([300.0, 900.0])
    with torch.no_grad():
        want = old.model(x, glyph, style, t)
        got = grown.model(x, glyph, style, t)
        if not torch.allclose(got, want, rtol=1e-5, atol=1e-5):
            failures.append(f"grow_depth: grown output differs by {float((got - want).abs().max()):.3g}")
        torch.nn.init.normal_(grown.model.transformer_blocks[1].norm1.linear.weight, std=0.2)
        if torch.allclose(grown.model(x, glyph, style, t), want, rtol=1e-5, atol=1e-5):
            failures.append("grow_depth: a non-identity new block did not change the output (test is blind)")
    print("grow depth:", "ok" if not failures else f"{len(failures)} failures")
    return failures


if __name__ == "__main__":
    sys.exit(main())
