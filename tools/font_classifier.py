"""A small CNN that tells which font (hand) wrote a line: the line model's style metric (issue 20).

Copying the plain glyph line (DejaVu Sans) cannot fool it: it is trained on ground-truth lines only,
written by tools/line_data.py in every evaluation font (tools/eval_cer.py's list, seen and held-out),
with the generator's per-hand augmentation (size, weight, slant, tone, noise, elastic warp, width /
pressure / size variation along the line, letter-boundary jitter) and a share without it (as the
evaluation's ground truth is written). A generated line counts as "in style" when the classifier
names the font of its style reference. Chance is 1 / number of fonts.

Lines are read tone-free (paper -> 0, ink -> 1 from the line's own median and dark percentile) at
32 px height (taller lines are resized), so the classifier sees letter shapes, not ink or paper tone.

    python tools/font_classifier.py train --quill build/release/quill --out /tmp/font_classifier.pt
    python tools/eval_cer.py ... --classifier /tmp/font_classifier.pt

`train` writes the weights and the list of fonts (classes) into one file, and reports its accuracy
on separately generated ground-truth lines (another seed), augmented and plain.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import line_data as ld  # noqa: E402

HEIGHT = 32
TRAIN_SEED = 7_000_001  # neither a training shard's seed (100003 k) nor eval_cer's (9000001)
TEST_SEED = 7_500_001


def normalise(gray: np.ndarray) -> np.ndarray:
    """uint8 line [H, W] -> float32 [32, W'] with paper 0 and ink 1 (tone-free), height 32."""
    g = gray.astype(np.float32)
    if g.shape[0] != HEIGHT:
        w = max(1, int(round(g.shape[1] * HEIGHT / g.shape[0])))
        g = np.asarray(Image.fromarray(gray).resize((w, HEIGHT), Image.BILINEAR), np.float32)
    paper = float(np.median(g))
    ink = float(np.percentile(g, 2))
    x = (paper - g) / max(paper - ink, 20.0)
    return np.clip(x, -0.5, 1.5)


class FontNet(torch.nn.Module):
    def __init__(self, n_classes: int, width: int = 48):
        super().__init__()
        c = [1, width, 2 * width, 3 * width, 4 * width]
        layers = []
        for i in range(4):
            layers += [torch.nn.Conv2d(c[i], c[i + 1], 3, padding=1), torch.nn.BatchNorm2d(c[i + 1]), torch.nn.ReLU()]
            if i < 3:
                layers.append(torch.nn.MaxPool2d(2))
        self.features = torch.nn.Sequential(*layers)
        self.head = torch.nn.Linear(c[-1], n_classes)

    def forward(self, x, mask=None):
        """x [B, 1, 32, W]; mask [B, W] (1 = real columns) or None -> logits [B, classes]."""
        f = self.features(x)  # [B, C, 4, W/8]
        if mask is None:
            pooled = f.mean(dim=(2, 3))
        else:
            m = F.max_pool1d(mask[:, None].float(), 8, 8, ceil_mode=True)[:, :, None, : f.shape[3]]
            pooled = (f * m).sum(dim=(2, 3)) / (m.sum(dim=(2, 3)) * f.shape[2]).clamp_min(1)
        return self.head(pooled)


def batchify(lines: list[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
    W = max(l.shape[1] for l in lines)
    W = (W + 7) // 8 * 8
    x = np.zeros((len(lines), 1, HEIGHT, W), np.float32)
    m = np.zeros((len(lines), W), np.float32)
    for i, l in enumerate(lines):
        x[i, 0, :, : l.shape[1]] = l
        m[i, : l.shape[1]] = 1
    return torch.from_numpy(x), torch.from_numpy(m)


def ground_truth(quill: str, fonts: list[str], per_font: int, seed: int, plain_share: float) -> tuple[list, list]:
    """Lines (normalised) and labels: per font, augmented hands (4 lines each) plus a plain share."""
    ld.set_line_height(HEIGHT)
    lines, labels = [], []
    for k, path in enumerate(fonts):
        n_plain = int(round(per_font * plain_share))
        for n, augment, s in ((per_font - n_plain, True, seed + 1000 * k), (n_plain, False, seed + 1000 * k + 500)):
            if n <= 0:
                continue
            d = ld.generate(quill, n, s, [path], 512, 40, 64, lines_per_hand=4, augment=augment)
            lines += [normalise(t) for t in d["target"]]
            labels += [k] * len(d["target"])
    return lines, labels


def accuracy(model: FontNet, lines: list[np.ndarray], labels: list[int], n_classes: int) -> dict:
    pred = predict(model, lines)
    per = {}
    for c in range(n_classes):
        idx = [i for i, l in enumerate(labels) if l == c]
        if idx:
            per[c] = float(np.mean([pred[i] == c for i in idx]))
    return {"pooled": float(np.mean([p == l for p, l in zip(pred, labels)])), "per_class": per}


@torch.no_grad()
def predict(model: FontNet, lines: list[np.ndarray], batch: int = 64) -> list[int]:
    model.eval()
    out = []
    order = np.argsort([l.shape[1] for l in lines])
    pred = np.zeros(len(lines), np.int64)
    for i in range(0, len(lines), batch):
        idx = order[i:i + batch]
        x, m = batchify([lines[j] for j in idx])
        pred[idx] = model(x, m).argmax(1).numpy()
    out = pred.tolist()
    return out


class Classifier:
    """A trained classifier from its file: `predict_gray(uint8 lines)` -> font file names."""

    def __init__(self, path: str):
        state = torch.load(path, map_location="cpu", weights_only=False)
        self.fonts = state["fonts"]
        self.model = FontNet(len(self.fonts), state.get("width", 48))
        self.model.load_state_dict(state["model"])
        self.model.eval()
        self.info = state.get("info", {})

    def predict_gray(self, grays: list[np.ndarray]) -> list[str]:
        return [self.fonts[i] for i in predict(self.model, [normalise(g) for g in grays])]


def eval_fonts() -> list[str]:
    import eval_cer
    return eval_cer.SEEN + eval_cer.UNSEEN + eval_cer.NEW_SEEN


def train(a) -> None:
    torch.manual_seed(0)
    rng = random.Random(0)
    names = eval_fonts()
    fonts = [ld.font_path(n) for n in names]
    t0 = time.time()
    lines, labels = ground_truth(a.quill, fonts, a.per_font, TRAIN_SEED, 0.2)
    test_lines, test_labels = ground_truth(a.quill, fonts, a.test_per_font, TEST_SEED, 0.5)
    print(f"data: {len(lines)} training lines, {len(test_lines)} test lines, {len(names)} fonts, "
          f"{time.time() - t0:.0f} s", flush=True)
    model = FontNet(len(names), a.width)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)
    steps = a.epochs * len(lines) // a.batch
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=steps, pct_start=0.1)
    c0 = time.process_time()
    for step in range(steps):
        model.train()
        idx = [rng.randrange(len(lines)) for _ in range(a.batch)]
        crops = []
        for i in idx:
            l = lines[i]
            w = min(l.shape[1], a.crop)
            x0 = rng.randrange(0, l.shape[1] - w + 1)
            crops.append(l[:, x0:x0 + w])
        x, m = batchify(crops)
        loss = F.cross_entropy(model(x, m), torch.tensor([labels[i] for i in idx]), label_smoothing=0.05)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if (step + 1) % 100 == 0:
            print(f"step {step + 1}/{steps} loss {loss.item():.3f} cpu {time.process_time() - c0:.0f} s", flush=True)
    acc = accuracy(model, test_lines, test_labels, len(names))
    info = {"test_accuracy": acc["pooled"], "test_per_font": {names[c]: v for c, v in acc["per_class"].items()},
            "train_lines": len(lines), "test_lines": len(test_lines), "steps": steps,
            "cpu_seconds": round(time.process_time() - c0, 1)}
    print(f"test accuracy (ground truth, another seed, half plain): {acc['pooled']:.3f}")
    for n, v in info["test_per_font"].items():
        print(f"  {n:28s} {v:.2f}")
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    torch.save({"model": model.state_dict(), "fonts": names, "width": a.width, "info": info}, a.out)
    print(f"wrote {a.out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("--quill", default="build/release/quill")
    t.add_argument("--out", required=True)
    t.add_argument("--per-font", type=int, default=400)
    t.add_argument("--test-per-font", type=int, default=40)
    t.add_argument("--epochs", type=int, default=6)
    t.add_argument("--batch", type=int, default=32)
    t.add_argument("--crop", type=int, default=256, help="training crop width (px at 32 px height)")
    t.add_argument("--width", type=int, default=48)
    t.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    if a.cmd == "train":
        train(a)


if __name__ == "__main__":
    main()
