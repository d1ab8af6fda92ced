"""Synthetic handwriting-line data for Quill's line model (nothing is downloaded).

A *hand* is a handwriting font from a Debian package plus augmentation drawn once per hand:
stroke weight, slant, ink and paper tone, noise, size. Every sample is

* text      -- words from Debian's Swedish word list (wswedish) with capitals, digits, punctuation;
* glyph     -- the text's glyph line, rendered by `quill render-line` itself, so the pixels are
               exactly what `quill line` conditions on at inference (tests/cli checks this);
* target    -- the same text written in the hand on the same canvas, warped horizontally so that
               each character's advance lands on that character's span in the glyph line (a
               piecewise-linear map through the character boundaries: joins and strokes stay
               continuous). The model then learns a local map from a glyph to the hand's letter at
               the same place; with --align line the hand is only stretched onto the glyph line's
               ink extent, and characters drift off their glyphs along the line;
* style     -- a different line written by the same hand, as the style encoder sees it
               (`style_image`, --style-layout: squashed or wrapped to style_size x style_size; uint8,
               the trainer normalises).

    python tools/line_data.py --quill build/cpu/quill --out /tmp/linedata --samples 40000 [--line-height 64]
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import random
import subprocess
import tempfile

import numpy as np
from fontTools.ttLib import TTFont
from PIL import Image, ImageDraw, ImageFilter, ImageFont

LINE_HEIGHT = 32
BASELINE = 24           # glyph renderer: baseline at 0.75 h
GLYPH_CAP_HEIGHT = 15   # DejaVu Sans at 0.625 h = 20 px: "H" is 15 px tall
SUPERSAMPLE = 4
GLYPH_FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"  # what src/text/glyph_line.cpp uses
GLYPH_EM = 0.625 * LINE_HEIGHT


def set_line_height(h: int) -> None:
    """Canvas height in pixels (the model's line_height). Every size scales with it, as Quill's glyph
    layout does (src/text/glyph_line.cpp: font 0.625 h, baseline 0.75 h); 32 gives the values above."""
    global LINE_HEIGHT, BASELINE, GLYPH_CAP_HEIGHT, GLYPH_EM, _GLYPH_FONT, SUPERSAMPLE
    LINE_HEIGHT, BASELINE = h, round(0.75 * h)
    SUPERSAMPLE = max(1, 128 // h)  # hands are drawn 128 px tall (4x at 32 px, 2x at 64 px)
    GLYPH_CAP_HEIGHT = round(15 * h / 32)
    GLYPH_EM = 0.625 * h
    _GLYPH_FONT = None


# (package folder under /usr/share/fonts/*/, file glob): Debian's handwriting-like fonts. Each must cover the
# basic Latin letters; those without å ä ö (bwht, ecolier-court) only get texts their character set covers.
FONT_GLOBS = [("bwht", "*"), ("fifthhorseman", "*"), ("femkeklaver", "*"), ("ecolier-court", "*"), ("breip", "*"),
              ("dancingscript", "*"), ("kristi", "*"), ("klee", "*"), ("joscelyn", "*"), ("humor-sans", "*"),
              # added in the line campaign (issue 20); all have å ä ö Å Ä Ö
              ("comic-neue", "*"), ("kaushanscript", "*"), ("leckerli-one", "*"), ("lobster", "*"),
              ("tomsontalks", "*"), ("sjfonts", "*"), ("yusei-magic", "*"), ("urw-base35", "Z003-*")]
# Whole packages held out of training: styles the model has never seen.
HELD_OUT = {"Humor-Sans.ttf", "Breip.ttf", "breipfont.ttf"}
PUNCT = ".,:;-!?'\"()"


def handwriting_fonts() -> list[str]:
    out = []
    for d, pat in FONT_GLOBS:
        out += sorted(glob.glob(f"/usr/share/fonts/*/{d}/{pat}.[ot]tf"))
    return out


def font_path(name: str) -> str:
    """The installed file of a handwriting font, by its file name (as evaluations list them)."""
    for f in handwriting_fonts():
        if os.path.basename(f) == name:
            return f
    raise SystemExit(f"font {name} is not installed (bash scripts/setup-debian.sh --line-training)")


def font_charset(path: str) -> set[str]:
    return {chr(c) for c in TTFont(path, fontNumber=0).getBestCmap()}


def load_words(path: str = "/usr/share/dict/swedish") -> list[str]:
    with open(path, encoding="iso-8859-1") as f:
        words = [w.strip() for w in f]
    return [w for w in words if w and 2 <= len(w) <= 14 and w.isalpha()]


def make_text(rng: random.Random, words: list[str], max_chars: int) -> str:
    parts = []
    n = rng.choice([1, 2, 2, 3, 3, 4, 5, 6])
    for i in range(n):
        r = rng.random()
        if r < 0.08:
            w = str(rng.choice([rng.randint(0, 99), rng.randint(100, 2099)]))
        else:
            w = rng.choice(words)
            if r < 0.13:
                w = w.upper()
            elif (i == 0 and rng.random() < 0.6) or rng.random() < 0.15:
                w = w[:1].upper() + w[1:]
        if rng.random() < 0.12:
            w = rng.choice("(\"'") + w + rng.choice(")\"'")
        if rng.random() < 0.2:
            w += rng.choice(PUNCT[:6])
        parts.append(w)
    text = " ".join(parts)
    return text[:max_chars].strip() or "a"


class Hand:
    """One font plus its augmentation; `write` renders text onto a canvas of a given ink extent."""

    def __init__(self, font_path: str, rng: random.Random, augment: bool = True):
        self.font_path = font_path
        self.font_name = os.path.basename(font_path)
        a = augment
        k = LINE_HEIGHT / 32  # sizes below are given for a 32-px line
        self.augment = a
        self.size_jitter = rng.uniform(0.9, 1.1) if a else 1.0
        self.stroke = rng.choice([0, 0, 0, 1, 1, 2]) if a else 0  # at SUPERSAMPLE resolution (128 px per line)
        self.slant = rng.uniform(-0.25, 0.25) if a else 0.0
        self.ink = rng.randint(0, 90) if a else 0
        self.paper = rng.randint(215, 255) if a else 255
        self.noise = rng.uniform(0.0, 5.0) if a else 0.0
        self.baseline_jitter = int(round(2 * k)) if a else 0
        if a:
            # Per-hand tendencies of the per-line random fields (`distort`), drawn after the draws above so
            # that a hand's font, size, weight, slant and tones are those the older generator gave it.
            self.elastic = rng.uniform(0.0, 1.2)        # stroke warp amplitude, output px (32-px line)
            self.elastic_scale = rng.uniform(3.0, 8.0)  # its wavelength, output px (32-px line)
            self.width_var = rng.uniform(0.0, 1.0)      # stroke width variation along the line (0..1)
            self.pressure = rng.uniform(0.0, 0.45)      # ink pressure variation along the line
            self.size_var = rng.uniform(0.0, 0.10)      # letter size variation along the line
            self.slant_var = rng.uniform(0.0, 0.08)     # slant variation along the line
            self.spacing = rng.uniform(0.0, 0.18)       # letter-boundary jitter, share of an advance
        self.font = self._calibrated_font()

    def _calibrated_font(self) -> ImageFont.FreeTypeFont:
        probe = ImageFont.truetype(self.font_path, 100 * SUPERSAMPLE)
        cap = -probe.getbbox("H", anchor="ls")[1]
        size = 100 * SUPERSAMPLE * GLYPH_CAP_HEIGHT * SUPERSAMPLE / max(cap, 1) * self.size_jitter
        return ImageFont.truetype(self.font_path, max(8, int(round(size))))

    def coverage(self, text: str) -> np.ndarray:
        """Ink coverage in [0, 1] at SUPERSAMPLE scale, LINE_HEIGHT*S tall, cropped to the ink columns."""
        s = SUPERSAMPLE
        h = LINE_HEIGHT * s
        bbox = self.font.getbbox(text, anchor="ls", stroke_width=self.stroke)
        pad = 8 * s + int(abs(self.slant) * h)
        w = bbox[2] - bbox[0] + 2 * pad
        img = Image.new("L", (max(w, 1), h), 0)
        ImageDraw.Draw(img).text((pad - bbox[0], BASELINE * s + self._jitter * s), text, font=self.font, fill=255,
                                 anchor="ls", stroke_width=self.stroke, stroke_fill=255)
        if self.slant:
            # x' = x + slant * (y - baseline): shear about the baseline.
            img = img.transform(img.size, Image.AFFINE, (1, self.slant, -self.slant * BASELINE * s, 0, 1, 0),
                                resample=Image.BILINEAR)
        a = np.asarray(img, dtype=np.float32) / 255.0
        self._origin = pad - bbox[0]  # x of the pen's start in `a`
        cols = np.nonzero(a.max(axis=0) > 0.02)[0]
        if cols.size == 0:
            self._origin = 0
            return np.zeros((h, 1), np.float32)
        self._origin -= cols[0]
        return a[:, cols[0]:cols[-1] + 1]

    def boundaries(self, text: str) -> np.ndarray:
        """Pen x (SUPERSAMPLE px, in the cropped coverage) before each character and after the last."""
        return self._origin + np.array([self.font.getlength(text[:k]) for k in range(len(text) + 1)])

    def write(self, text: str, canvas_w: int, x0: int, x1: int, rng: random.Random,
              glyph_bounds: np.ndarray | None = None) -> np.ndarray:
        """uint8 [LINE_HEIGHT, canvas_w]: `text` in this hand, its ink spanning columns [x0, x1).

        With `glyph_bounds` (canvas x before each character and after the last, from
        `glyph_boundaries`) the hand is warped so its character boundaries land there instead.
        An augmented hand also distorts each line (`distort`) and jitters the letter boundaries.
        """
        self._jitter = rng.randint(-self.baseline_jitter, self.baseline_jitter)
        cov = self.coverage(text)
        if self.augment:
            cov = self.distort(cov, rng)
        a = np.zeros((LINE_HEIGHT, canvas_w), np.float32)
        if glyph_bounds is None:
            width = max(1, x1 - x0)
            small = Image.fromarray((cov * 255).astype(np.uint8)).resize((width, LINE_HEIGHT), Image.LANCZOS)
            a[:, x0:x0 + width] = np.asarray(small, np.float32)[:, : max(0, min(width, canvas_w - x0))] / 255.0
        else:
            if self.augment and self.spacing and len(glyph_bounds) > 2:
                glyph_bounds = jitter_bounds(glyph_bounds, self.spacing, rng)
            a = warp_columns(cov, self.boundaries(text), glyph_bounds, canvas_w)
        img = self.paper - (self.paper - self.ink) * a
        if self.noise:
            img = img + np.random.default_rng(rng.randrange(1 << 30)).normal(0, self.noise, img.shape)
        return np.clip(np.rint(img), 0, 255).astype(np.uint8)

    def distort(self, cov: np.ndarray, rng: random.Random) -> np.ndarray:
        """One line's variation of this hand, on the supersampled coverage [H*S, w]:

        * elastic stroke warp: a smooth random displacement field (x and y);
        * letter size and slant varying smoothly along the line (scaled / sheared about the baseline);
        * stroke width varying along the line (blend of eroded, plain and dilated coverage);
        * pen pressure: ink coverage scaled by a smooth factor along the line.
        """
        s = SUPERSAMPLE
        k = LINE_HEIGHT / 32
        h, w = cov.shape
        g = np.random.default_rng(rng.randrange(1 << 30))

        def smooth(n: int, period: float, shape=()) -> np.ndarray:
            """Smooth noise in [-1, 1] over n samples, with a wavelength of about `period` samples."""
            knots = max(2, int(np.ceil(n / max(period, 1.0))) + 2)
            v = g.uniform(-1, 1, shape + (knots,))
            x = np.linspace(0, knots - 1, n)
            if v.ndim == 1:
                return np.interp(x, np.arange(knots), v)
            return np.stack([np.interp(x, np.arange(knots), r) for r in v.reshape(-1, knots)]).reshape(shape + (n,))

        ys = np.arange(h, dtype=np.float32)[:, None]  # float32 throughout: this is the generator's hot loop
        xs = np.arange(w, dtype=np.float32)[None, :]
        base = BASELINE * s
        # Along-line fields (per column), then a coarse 2D elastic field bilinearly upsampled.
        size = (1.0 + self.size_var * smooth(w, 40 * k * s)).astype(np.float32)
        shear = (self.slant_var * smooth(w, 60 * k * s)).astype(np.float32)
        per = self.elastic_scale * k * s
        amp = self.elastic * k * s
        gh, gw = max(2, int(np.ceil(h / per)) + 2), max(2, int(np.ceil(w / per)) + 2)
        coarse = g.uniform(-1, 1, (2, gh, gw)).astype(np.float32)
        wy, wx = interp_matrix(h, gh), interp_matrix(w, gw)
        dx = wy @ coarse[0] @ wx.T
        dy = wy @ coarse[1] @ wx.T
        # Output pixel (y, x) samples the source at:
        src_y = base + (ys - base) / size[None, :] + np.float32(amp) * dy
        src_x = xs + shear[None, :] * (ys - base) + np.float32(amp) * dx
        out = bilinear(cov, src_y, src_x)
        if self.width_var > 0:
            r = max(1, int(round(k * s / 2)))  # about one output pixel of stroke
            thick, thin = rank2d(out, r, np.maximum), rank2d(out, r, np.minimum)
            t = (self.width_var * smooth(w, 30 * k * s)[None, :]).astype(np.float32)
            out = np.where(t > 0, out + t * (thick - out), out - t * (thin - out))
        if self.pressure > 0:
            out = out * (1.0 - self.pressure * 0.5 * (1 + smooth(w, 50 * k * s))).astype(np.float32)[None, :]
        return np.clip(out, 0.0, 1.0).astype(np.float32)


def interp_matrix(n: int, knots: int) -> np.ndarray:
    """[n, knots] weights of linear interpolation from `knots` evenly spread values to n samples."""
    x = np.linspace(0, knots - 1, n)
    i = np.minimum(np.floor(x).astype(np.int64), knots - 2)
    f = (x - i).astype(np.float32)
    m = np.zeros((n, knots), np.float32)
    m[np.arange(n), i] = 1 - f
    m[np.arange(n), i + 1] = f
    return m


def rank2d(a: np.ndarray, r: int, op) -> np.ndarray:
    """Separable max (dilation) or min (erosion) filter over a (2r+1) square, edges padded with 0."""
    for axis in (0, 1):
        p = np.pad(a, [(r, r) if ax == axis else (0, 0) for ax in (0, 1)])
        n = a.shape[axis]
        out = p.take(np.arange(n), axis=axis)
        for d in range(1, 2 * r + 1):
            out = op(out, p.take(np.arange(d, d + n), axis=axis))
        a = out
    return a


def bilinear(a: np.ndarray, y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """a sampled at float coordinates (y, x), zero outside."""
    h, w = a.shape
    p = np.pad(a, 1)
    y = np.clip(y + 1, 0, h + 0.999)
    x = np.clip(x + 1, 0, w + 0.999)
    y0, x0 = np.floor(y).astype(np.int64), np.floor(x).astype(np.int64)
    fy, fx = (y - y0).astype(np.float32), (x - x0).astype(np.float32)
    y1, x1 = np.minimum(y0 + 1, h + 1), np.minimum(x0 + 1, w + 1)
    return ((p[y0, x0] * (1 - fx) + p[y0, x1] * fx) * (1 - fy) + (p[y1, x0] * (1 - fx) + p[y1, x1] * fx) * fy)


def jitter_bounds(bounds: np.ndarray, amount: float, rng: random.Random) -> np.ndarray:
    """Interior character boundaries moved by up to `amount` of the neighbouring advances (order kept):
    letter widths and spacing vary around the glyph line's while the line's ends stay put."""
    b = bounds.astype(np.float64).copy()
    adv = np.diff(b)
    for i in range(1, len(b) - 1):
        d = rng.uniform(-amount, amount)
        b[i] += d * (adv[i - 1] if d < 0 else adv[i])
    return np.maximum.accumulate(b)


def warp_columns(cov: np.ndarray, src_bounds: np.ndarray, dst_bounds: np.ndarray, canvas_w: int) -> np.ndarray:
    """Coverage [LINE_HEIGHT*S, w] resampled onto [LINE_HEIGHT, canvas_w]: source x src_bounds[k]
    (supersampled px) goes to canvas x dst_bounds[k]; piecewise linear between, a shift outside."""
    s = SUPERSAMPLE
    xs = (np.arange(canvas_w * s) + 0.5) / s  # canvas x of each supersampled column centre
    src = np.interp(xs, dst_bounds, src_bounds)
    src = np.where(xs < dst_bounds[0], src_bounds[0] + (xs - dst_bounds[0]) * s, src)
    src = np.where(xs > dst_bounds[-1], src_bounds[-1] + (xs - dst_bounds[-1]) * s, src)
    src = src - 0.5
    i0 = np.floor(src).astype(np.int64)
    f = (src - i0).astype(np.float32)
    w = cov.shape[1]
    padded = np.concatenate([np.zeros((cov.shape[0], 1), np.float32), cov, np.zeros((cov.shape[0], 1), np.float32)],
                            axis=1)
    left = padded[:, np.clip(i0 + 1, 0, w + 1)]
    right = padded[:, np.clip(i0 + 2, 0, w + 1)]
    fine = left * (1 - f) + right * f
    return fine.reshape(LINE_HEIGHT, s, canvas_w, s).mean(axis=(1, 3))


_GLYPH_FONT: ImageFont.FreeTypeFont | None = None


def glyph_boundaries(text: str, x0: int, x1: int) -> np.ndarray:
    """Canvas x before each character and after the last in the glyph line whose ink spans
    [x0, x1): DejaVu Sans advances (as Quill renders the line) fitted onto that ink extent."""
    global _GLYPH_FONT
    if _GLYPH_FONT is None:
        _GLYPH_FONT = ImageFont.truetype(GLYPH_FONT, int(round(GLYPH_EM * SUPERSAMPLE)))
    f = _GLYPH_FONT
    adv = np.array([f.getlength(text[:k]) for k in range(len(text) + 1)])
    bbox = f.getbbox(text, anchor="ls")
    ink0, ink1 = bbox[0], max(bbox[2], bbox[0] + 1)
    return x0 + (adv - ink0) * (x1 - x0) / (ink1 - ink0)


def ink_extent(gray: np.ndarray) -> tuple[int, int]:
    cols = np.nonzero((gray < 250).any(axis=0))[0]
    if cols.size == 0:
        return 0, 1
    return int(cols[0]), int(cols[-1]) + 1


STYLE_LAYOUTS = ("squash", "wrap")


def style_image(line: np.ndarray, size: int, layout: str = "squash", row_height: int = 32) -> np.ndarray:
    """What Quill's style encoder sees of a line image (uint8 [size, size]; the three RGB channels are equal).

    squash: the whole line, Pillow bicubic to size x size (the shipped model's input: a 512-px line
            is squeezed 8x across, so letter shapes are mostly lost).
    wrap:   letter shapes kept at writing size (src/io/style_reference.cpp mirrors this exactly): the line
            is resized to `row_height` (Pillow bilinear, aspect kept, width rounded half up), cut to its ink columns (darker than
            the median paper by more than 48), and written into size / row_height rows of `size` pixels
            like text wrapped onto a page; a short line repeats after a paper gap of row_height / 4.
    """
    if layout == "squash":
        rgb = Image.fromarray(line, "L").convert("RGB").resize((size, size), Image.BICUBIC)
        return np.asarray(rgb, np.uint8)[..., 0].copy()
    if layout != "wrap":
        raise ValueError(f"style layout {layout!r}: expected one of {STYLE_LAYOUTS}")
    if size % row_height:
        raise ValueError(f"style size {size} is not a multiple of the row height {row_height}")
    g = line
    if g.shape[0] != row_height:
        w = max(1, (g.shape[1] * row_height + g.shape[0] // 2) // g.shape[0])  # integer rounding, as in C++
        g = np.asarray(Image.fromarray(g, "L").resize((w, row_height), Image.BILINEAR), np.uint8)
    flat = np.sort(g.ravel())
    paper = int(flat[(flat.size - 1) // 2])
    ink = np.nonzero((g.astype(np.int32) < paper - 48).any(axis=0))[0]
    if ink.size:
        g = g[:, ink[0]:ink[-1] + 1]
    period = g.shape[1] + row_height // 4
    strip = np.full((row_height, period), paper, np.uint8)
    strip[:, :g.shape[1]] = g
    rows = size // row_height
    cols = np.arange(rows * size) % period
    out = strip[:, cols].reshape(row_height, rows, size).transpose(1, 0, 2).reshape(size, size)
    return np.ascontiguousarray(out)


def render_glyph_lines(quill: str, texts: list[str], max_width: int) -> list[tuple[dict, np.ndarray | None]]:
    """Glyph lines from Quill's own renderer (`quill render-line --batch-file`)."""
    with tempfile.TemporaryDirectory() as d:
        listing = os.path.join(d, "texts.txt")
        with open(listing, "w", encoding="utf-8") as f:
            f.write("\n".join(texts) + "\n")
        r = subprocess.run([quill, "render-line", "--batch-file", listing, "--output-dir", d, "--line-height",
                            str(LINE_HEIGHT), "--max-width", str(max_width), "--downscale", "1", "--patch", "1"],
                           capture_output=True, text=True)
        out = []
        for line in r.stdout.splitlines():
            j = json.loads(line)
            out.append((j, np.asarray(Image.open(j["png"]), np.uint8) if "png" in j else None))
        if len(out) != len(texts):
            raise RuntimeError(f"quill render-line returned {len(out)} of {len(texts)} lines: {r.stderr[-500:]}")
        return out


def generate(quill: str, n: int, seed: int, fonts: list[str], max_width: int, max_chars: int, style_size: int,
             lines_per_hand: int = 8, augment: bool = True, align: str = "char", style_layout: str = "squash",
             keep_refs: bool = False) -> dict:
    rng = random.Random(seed)
    words = load_words()
    charsets = {f: font_charset(f) for f in fonts}
    hands, texts = [], []
    while len(texts) < n:
        font = rng.choice(fonts)
        cs = charsets[font]
        hand = Hand(font, rng, augment)
        for _ in range(lines_per_hand):
            t = ""
            while not t or any(c not in cs for c in t if c != " "):
                t = make_text(rng, words, max_chars)
            hands.append(hand)
            texts.append(t)
    glyphs = render_glyph_lines(quill, texts, max_width)
    keep = [i for i, (j, g) in enumerate(glyphs) if g is not None]
    data = {"text": [], "font": [], "glyph": [], "target": [], "style": [], "hand": []}
    targets = {}
    for i in keep:
        j, g = glyphs[i]
        x0, x1 = ink_extent(g)
        bounds = glyph_boundaries(texts[i], x0, x1) if align == "char" else None
        targets[i] = hands[i].write(texts[i], g.shape[1], x0, x1, rng, bounds)
    for i in keep:
        base = i - i % lines_per_hand
        mates = [k for k in range(base, base + lines_per_hand) if k != i and k in targets]
        ref = targets[rng.choice(mates)] if mates else targets[i]
        data["text"].append(texts[i])
        data["font"].append(hands[i].font_name)
        data["glyph"].append(glyphs[i][1])
        data["target"].append(targets[i])
        data["style"].append(style_image(ref, style_size, style_layout, LINE_HEIGHT))
        if keep_refs:
            data.setdefault("ref", []).append(ref)
        data["hand"].append(i // lines_per_hand)
    return data


def save(data: dict, path: str) -> None:
    widths = np.array([g.shape[1] for g in data["glyph"]], np.int32)
    np.savez_compressed(path, text=np.array(data["text"]), font=np.array(data["font"]), widths=widths,
                        glyph=np.concatenate([g.ravel() for g in data["glyph"]]),
                        target=np.concatenate([t.ravel() for t in data["target"]]),
                        style=np.stack(data["style"]), hand=np.array(data["hand"], np.int32),
                        line_height=np.int32(LINE_HEIGHT), style_layout=np.array(data.get("style_layout", "squash")))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quill", default="build/release/quill")
    ap.add_argument("--out", required=True, help="folder for shard_NNN.npz")
    ap.add_argument("--samples", type=int, default=40000)
    ap.add_argument("--shard", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-width", type=int, default=512)
    ap.add_argument("--max-chars", type=int, default=40)
    ap.add_argument("--style-size", type=int, default=64)
    ap.add_argument("--style-layout", choices=STYLE_LAYOUTS, default="squash",
                    help="how the style reference is laid out for the style encoder (see style_image)")
    ap.add_argument("--line-height", type=int, default=32, help="canvas height in pixels (the model's line_height)")
    ap.add_argument("--first-shard", type=int, default=0, help="start at this shard (to split a run over processes)")
    ap.add_argument("--shards", type=int, default=0, help="write at most this many shards (0: all)")
    ap.add_argument("--held-out", action="store_true", help="use only the held-out fonts")
    ap.add_argument("--align", choices=["char", "line"], default="char",
                    help="char: each hand character over its glyph (default); line: whole line stretched")
    a = ap.parse_args()
    set_line_height(a.line_height)
    fonts = [f for f in handwriting_fonts() if (os.path.basename(f) in HELD_OUT) == a.held_out]
    os.makedirs(a.out, exist_ok=True)
    ks = list(range(0, a.samples, a.shard))[a.first_shard:]
    for k in ks[:a.shards] if a.shards else ks:
        d = generate(a.quill, min(a.shard, a.samples - k), a.seed * 100003 + k, fonts, a.max_width, a.max_chars,
                     a.style_size, align=a.align, style_layout=a.style_layout)
        d["style_layout"] = a.style_layout
        save(d, os.path.join(a.out, f"shard_{k // a.shard:03d}.npz"))
        print(f"shard {k // a.shard}: {len(d['text'])} samples", flush=True)


if __name__ == "__main__":
    main()
