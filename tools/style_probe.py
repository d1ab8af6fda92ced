"""Can the style encoder tell the hands apart from what it is shown? (issue 20)

Trains the line model's style encoder architecture (the preset's Dinov2Model, from scratch) plus a
linear head to name the font of a style reference, for the same CPU budget per candidate input
layout (`line_data.style_image`: the whole line squashed to a square, or the line wrapped at
writing size into rows), and reports the accuracy on references of other hands (another seed).
If an encoder cannot name the font from its input, the line model cannot write in that font.

    python tools/style_probe.py --quill build/release/quill --cpu-seconds 150 --json /tmp/probe.json

Classes are the evaluation's seen fonts (eval_cer.SEEN + NEW_SEEN); references are the generator's
augmented hands (4 lines per hand, the reference is another line of the same hand, as in training).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import line_data as ld  # noqa: E402
from train_line_model import IMAGENET_MEAN, IMAGENET_STD, PRESETS, make_style_encoder  # noqa: E402

TRAIN_SEED = 7_100_001
TEST_SEED = 7_600_001


def references(quill: str, fonts: list[str], per_font: int, seed: int) -> tuple[list, list]:
    ld.set_line_height(32)
    refs, labels = [], []
    for k, path in enumerate(fonts):
        d = ld.generate(quill, per_font, seed + 1000 * k, [path], 512, 40, 64, lines_per_hand=4, keep_refs=True)
        refs += d["ref"]
        labels += [k] * len(d["ref"])
    return refs, labels


def pixels(refs: list, layout: str, size: int) -> torch.Tensor:
    imgs = np.stack([ld.style_image(r, size, layout, 32) for r in refs]).astype(np.float32) / 255.0
    x = torch.from_numpy(imgs)[:, None].expand(-1, 3, -1, -1)
    mean = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
    return ((x - mean) / std).contiguous()


def probe(x, y, xt, yt, size: int, n_classes: int, cpu_seconds: float, seed: int) -> dict:
    torch.manual_seed(seed)
    cfg = dict(PRESETS["cpu-small"]["style"], image_size=size)
    enc = make_style_encoder(cfg)
    head = torch.nn.Linear(cfg["hidden_size"], n_classes)
    params = list(enc.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)
    rng = np.random.default_rng(seed)
    y, yt = torch.tensor(y), torch.tensor(yt)
    c0, steps, seen = time.process_time(), 0, 0
    while time.process_time() - c0 < cpu_seconds:
        idx = torch.from_numpy(rng.choice(len(x), 64, replace=False))
        loss = torch.nn.functional.cross_entropy(head(enc(pixel_values=x[idx]).pooler_output), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        steps, seen = steps + 1, seen + len(idx)
    with torch.no_grad():
        pred = torch.cat([head(enc(pixel_values=xt[i:i + 128]).pooler_output).argmax(1) for i in range(0, len(xt), 128)])
    return {"steps": steps, "samples": seen, "train_loss_last": float(loss.detach()), "test_accuracy": float((pred == yt).float().mean())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quill", default="build/release/quill")
    ap.add_argument("--per-font", type=int, default=160, help="training references per font")
    ap.add_argument("--test-per-font", type=int, default=40)
    ap.add_argument("--cpu-seconds", type=float, default=150, help="training budget per candidate (process CPU time)")
    ap.add_argument("--candidates", default="squash:64,wrap:64,wrap:128", help="layout:size, comma-separated")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    import eval_cer
    names = eval_cer.SEEN + eval_cer.NEW_SEEN
    fonts = [ld.font_path(n) for n in names]
    refs, labels = references(a.quill, fonts, a.per_font, TRAIN_SEED)
    trefs, tlabels = references(a.quill, fonts, a.test_per_font, TEST_SEED)
    print(f"{len(refs)} training / {len(trefs)} test references, {len(names)} fonts (chance {1 / len(names):.3f})",
          flush=True)
    out = {"fonts": names, "per_font": a.per_font, "test_per_font": a.test_per_font, "cpu_seconds": a.cpu_seconds,
           "threads": a.threads, "results": {}}
    for cand in a.candidates.split(","):
        layout, size = cand.split(":")
        r = probe(pixels(refs, layout, int(size)), labels, pixels(trefs, layout, int(size)), tlabels, int(size),
                  len(names), a.cpu_seconds, 1)
        out["results"][cand] = r
        print(f"{cand:12s} steps {r['steps']:5d}  train loss {r['train_loss_last']:.3f}  "
              f"test accuracy {r['test_accuracy']:.3f}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
