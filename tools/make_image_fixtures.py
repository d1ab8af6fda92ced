#!/usr/bin/env python3
"""Image I/O fixtures for tests/image/image_test.cpp (tests/fixtures/image/).

Small PNG/JPEG inputs written by Pillow, and expected.json with what Pillow decodes from them,
PIL `resize(..., BILINEAR)` outputs, `convert("L")` luma and the ImageNet-normalised style
reference (torchvision-style: x/255, then (x - mean) / std in float32).
Deterministic: running it twice gives identical files.  Usage: python tools/make_image_fixtures.py
"""

import json
import struct
import zlib
from pathlib import Path

import sys

import numpy as np
import PIL
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))
from line_data import style_image  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "image"
MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)


def pattern(h, w, c, seed):
    """Smooth gradients plus noise and a few hard edges: exercises both filter regimes."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    chans = []
    for k in range(c):
        base = 127 + 100 * np.sin(x / (2.5 + k) + y / (3.5 + k) + k)
        base += rng.normal(0, 25, size=(h, w))
        base[(x.astype(int) + k) % 7 == 0] = 255 if k % 2 == 0 else 0
        chans.append(base)
    a = np.clip(np.stack(chans, axis=-1), 0, 255).round().astype(np.uint8)
    return a[..., 0] if c == 1 else a


def ink_line(h, w, seed):
    """RGB paper (tone ~235, noise) with dark strokes in the middle columns: a stand-in for a written line."""
    rng = np.random.default_rng(seed)
    a = rng.normal(235, 6, size=(h, w, 3))
    y, x = np.mgrid[0:h, 0:w]
    strokes = (np.sin(x / 1.7) * np.cos(y / 2.3) > 0.55) & (x >= 9) & (x < 58) & (y >= 4) & (y < h - 3)
    a[strokes] = rng.normal(40, 15, size=(int(strokes.sum()), 3))
    return np.clip(a, 0, 255).round().astype(np.uint8)


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def flat(a):
    return [int(v) for v in np.asarray(a).reshape(-1)]


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    exp = {"pillow": PIL.__version__}

    rgb = pattern(17, 23, 3, seed=1)
    Image.fromarray(rgb).save(OUT / "src_rgb.png")
    gray = pattern(13, 19, 1, seed=2)
    Image.fromarray(gray).save(OUT / "src_gray.png")
    exp["src_rgb"] = flat(rgb)
    exp["src_gray"] = flat(gray)

    resizes = []
    for name, arr in (("src_rgb.png", rgb), ("src_gray.png", gray)):
        im = Image.fromarray(arr)
        for w, h in ((8, 6), (37, 29), (8, 29), (23, 5), (5, 17), (1, 1), (3, 40), (11, 9), (20, 3), (30, 2)):
            r = im.resize((w, h), Image.BILINEAR)
            resizes.append({"src": name, "w": w, "h": h, "pixels": flat(np.asarray(r))})
    exp["resize"] = resizes
    exp["luma_rgb"] = flat(np.asarray(Image.fromarray(rgb).convert("L")))

    size = 8
    r = np.asarray(Image.fromarray(rgb).resize((size, size), Image.BILINEAR)).astype(np.float32)
    t = ((r / np.float32(255.0) - MEAN) / STD).transpose(2, 0, 1)
    exp["style_size"] = size
    exp["style_ref"] = [float(v) for v in t.reshape(-1)]

    # Wrapped style layout (line_data.style_image, mirrored by wrap_style_line): a line of dark strokes
    # on noisy paper, converted to gray as Pillow's "L", at a few square / row sizes.
    line = ink_line(24, 70, seed=11)
    Image.fromarray(line).save(OUT / "style_line.png")
    line_l = np.asarray(Image.fromarray(line).convert("L"))
    blank = np.full((9, 13), 231, np.uint8)
    Image.fromarray(blank).save(OUT / "style_blank.png")
    wraps = []
    for src, arr, size, rh in (("style_line.png", line_l, 32, 16), ("style_line.png", line_l, 48, 24),
                               ("style_line.png", line_l, 20, 10), ("style_blank.png", blank, 16, 8)):
        wraps.append({"src": src, "size": size, "row_height": rh, "pixels": flat(style_image(arr, size, "wrap", rh))})
    exp["style_wrap"] = wraps

    # PNG variants read through libpng's conversions.
    ga = np.stack([pattern(5, 7, 1, seed=3), pattern(5, 7, 1, seed=4)], axis=-1)
    Image.fromarray(ga).save(OUT / "gray_alpha.png")
    exp["gray_alpha"] = flat(ga)
    rgba = pattern(6, 5, 4, seed=5)
    Image.fromarray(rgba).save(OUT / "rgba.png")
    exp["rgba"] = flat(rgba)
    pal = Image.fromarray(pattern(5, 7, 3, seed=6)).quantize(colors=6)
    pal.info["transparency"] = 2
    pal.save(OUT / "palette_trns.png", transparency=2)
    exp["palette_trns"] = flat(np.asarray(Image.open(OUT / "palette_trns.png").convert("RGBA")))
    g16 = (np.arange(6 * 4, dtype=np.uint32).reshape(4, 6) * 2851 + 7).astype(np.uint16)
    Image.fromarray(g16).save(OUT / "gray16.png")
    exp["gray16_raw"] = flat(np.asarray(Image.open(OUT / "gray16.png")))
    bits = pattern(3, 10, 1, seed=7) > 127
    Image.fromarray(bits).convert("1").save(OUT / "bilevel.png")
    exp["bilevel"] = flat(np.asarray(Image.open(OUT / "bilevel.png").convert("L")))

    # JPEGs: decoded by Pillow's bundled libjpeg-turbo (islow DCT, fancy upsampling, the defaults).
    Image.fromarray(pattern(12, 16, 3, seed=8)).save(OUT / "rgb.jpg", quality=90)
    exp["rgb_jpg"] = flat(np.asarray(Image.open(OUT / "rgb.jpg")))
    Image.fromarray(pattern(9, 11, 1, seed=9)).save(OUT / "gray.jpg", quality=90)
    exp["gray_jpg"] = flat(np.asarray(Image.open(OUT / "gray.jpg")))
    Image.frombytes("CMYK", (8, 8), pattern(8, 8, 4, seed=10).tobytes()).save(OUT / "cmyk.jpg", quality=90)

    # Absurd dimensions: a PNG header for 100000 x 1 (too little image data), and rgb.jpg with its
    # SOF frame size patched to 60000 x 60000. Decoders must refuse both before allocating.
    ihdr = struct.pack(">IIBBBBB", 100000, 1, 8, 2, 0, 0, 0)
    huge = b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + png_chunk(b"IDAT", zlib.compress(b"\0" * 64)) + png_chunk(b"IEND", b"")
    (OUT / "huge.png").write_bytes(huge)
    jpg = bytearray((OUT / "rgb.jpg").read_bytes())
    i = 2
    while i < len(jpg):
        marker, length = jpg[i + 1], struct.unpack(">H", jpg[i + 2:i + 4])[0]
        if marker in (0xC0, 0xC1, 0xC2):
            jpg[i + 5:i + 9] = struct.pack(">HH", 60000, 60000)
            break
        i += 2 + length
    (OUT / "huge.jpg").write_bytes(bytes(jpg))

    (OUT / "expected.json").write_text(json.dumps(exp, separators=(",", ":")) + "\n")
    total = sum(p.stat().st_size for p in OUT.iterdir())
    print(f"wrote {OUT} ({total} bytes, Pillow {PIL.__version__})")


if __name__ == "__main__":
    main()
