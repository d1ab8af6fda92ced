"""The README figure (docs/images/lines.png): the default hand, the main job's line, and held-out
texts in a few fonts with their ground truth, from the files `tools/eval_cer.py --out DIR` wrote.

    python tools/eval_cer.py --quill build/cpu/quill --texts 25 --out /tmp/quill-eval ...
    python tools/make_lines_figure.py --quill build/cpu/quill --eval /tmp/quill-eval --out docs/images/lines.png
"""
from __future__ import annotations

import argparse
import os
import subprocess
import tempfile

import numpy as np
from PIL import Image, ImageDraw, ImageFont

FONTS = [("dkg", "seen"), ("DancingScript-Regular", "seen"), ("KleeOne-Regular", "seen"), ("Humor-Sans", "unseen")]
MAIN_TEXT = "Kongl. Maj:ts nådiga förordning"
LABEL_FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def gray(path: str) -> np.ndarray:
    return np.asarray(Image.open(path).convert("L"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quill", default="build/release/quill")
    ap.add_argument("--model", default="models/quill-line")
    ap.add_argument("--eval", required=True, help="the --out folder of tools/eval_cer.py")
    ap.add_argument("--out", default="docs/images/lines.png")
    ap.add_argument("--scale", type=int, default=2)
    a = ap.parse_args()
    rows: list[tuple[np.ndarray, str]] = [(gray(os.path.join(a.model, "style_reference.png")),
                                           "default style reference (dkg)")]
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "main.png")
        subprocess.run([a.quill, "line", "--model", a.model, "--text", MAIN_TEXT, "--seed", "0", "-o", out],
                       check=True, capture_output=True)
        rows.append((gray(out), "quill line (defaults, seed 0)"))
    for stem, kind in FONTS:
        base = os.path.join(a.eval, stem)
        # gt_0000 is the first text's ground truth; its generated line is gen_0000, or gen_0001 where
        # quill numbers batch outputs by line number from 1 (as eval_cer.py pairs them).
        first = 0 if os.path.exists(f"{base}_gen_0000.png") else 1
        rows.append((gray(f"{base}_gt_0000.png"), f"{stem}: ground truth ({kind} font)"))
        rows.append((gray(f"{base}_gen_{first:04d}.png"), f"{stem}: generated, style ref = another {stem} line"))
    s = a.scale
    line_w = max(r.shape[1] for r, _ in rows) * s
    label_w = 430
    h = sum(r.shape[0] * s + 4 for r, _ in rows)
    canvas = Image.new("L", (line_w + label_w, h), 255)
    draw = ImageDraw.Draw(canvas)
    font = ImageFont.truetype(LABEL_FONT, 12)
    y = 0
    for img, label in rows:
        im = Image.fromarray(img).resize((img.shape[1] * s, img.shape[0] * s), Image.NEAREST)
        canvas.paste(im, (0, y))
        draw.text((line_w + 10, y + im.height // 2), label, fill=0, font=font, anchor="lm")
        y += im.height + 4
    canvas.save(a.out, optimize=True)
    print(f"wrote {a.out} ({canvas.width} x {canvas.height})")


if __name__ == "__main__":
    main()
