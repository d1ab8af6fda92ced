"""Line requests for the Ray Serve app: the same fields, checks, error codes and messages as
`quill serve` (src/serve/line_request.cpp), so a client sees one API whichever server answers.

Pure Python (no Ray, no quill): the ingress reads the body (quill_ray_body.py) and range-checks
here; the checks that need the model (text width, style image) run on a LineStudioWorker with
`decode_style_image`.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import re
from dataclasses import dataclass
from typing import Any, Optional

MAX_SEED = (1 << 53) - 1  # exact in a JSON number (and JavaScript)
# Setting ranges of include/quill/line_studio.h (steps is capped by Limits.max_steps).
CFG_RANGE = (0.0, 50.0)
START_SIGMA_RANGE = (0.01, 1.0)
SHIFT_RANGE = (0.01, 100.0)

STRING, INTEGER, NUMBER, BOOL = "a string", "an integer", "a number", "a boolean"
LINE_FIELDS = {
    "text": STRING, "style": STRING, "style_id": STRING, "seed": INTEGER, "steps": INTEGER,
    "cfg": NUMBER, "start_sigma": NUMBER, "shift": NUMBER, "clamp_overflow": BOOL,
    "response_format": STRING, "timeout_s": NUMBER,
}
BUILTIN_STYLES = ("default", "none")


@dataclass
class Limits:
    """The limits of `quill serve` (its defaults); the app builder's `limits` arg overrides them."""
    max_body_bytes: int = 8 << 20
    max_text_chars: int = 300
    max_steps: int = 100
    timeout_s: float = 300.0
    max_style_pixels: int = 4096 * 4096

    @classmethod
    def from_dict(cls, d: Optional[dict]) -> "Limits":
        d = dict(d or {})
        unknown = set(d) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown limits: {sorted(unknown)}")
        return cls(**d)


class ApiError(Exception):
    """An HTTP error as the API reports it: {"error": {"code", "message", "field"}} with its status."""

    def __init__(self, status: int, code: str, message: str, field: Optional[str] = None,
                 headers: Optional[dict] = None):
        super().__init__(message)
        self.status, self.code, self.message, self.field = status, code, message, field or None  # "" -> null
        self.headers = headers or {}

    def body(self) -> dict:
        return {"error": {"code": self.code, "message": self.message, "field": self.field}}

    def to_dict(self) -> dict:
        """Plain data, to cross a Ray call as a value (errors are results, never lost exceptions)."""
        return {"status": self.status, **self.body()["error"], "headers": self.headers}

    @classmethod
    def from_dict(cls, d: dict) -> "ApiError":
        return cls(d["status"], d["code"], d["message"], d.get("field"), d.get("headers"))


@dataclass
class LineSpec:
    """A checked line request: what a worker needs to write it (pickled across Ray calls)."""
    text: str
    seed: int
    style_id: str = "default"          # "default", "none" or "inline"
    style_id_given: bool = False       # an explicit "default" on a model without one is a 404
    style_bytes: Optional[bytes] = None
    steps: Optional[int] = None        # None: the model's sampler.json
    cfg: Optional[float] = None
    shift: Optional[float] = None
    start_sigma: Optional[float] = None
    clamp_overflow: bool = False
    json_response: bool = False
    timeout_s: float = 300.0

    def settings(self) -> tuple:
        """Lines batch together only when these agree (one generate_rows call takes one setting)."""
        return (self.steps, self.cfg, self.shift, self.start_sigma, self.clamp_overflow)


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    return {str: "string", dict: "object", list: "array"}.get(type(v), type(v).__name__)


def _has_type(v: Any, kind: str) -> bool:
    if kind == STRING:
        return isinstance(v, str)
    if kind == BOOL:
        return isinstance(v, bool)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return kind == NUMBER or isinstance(v, int) or float(v).is_integer()


def _fmt(x: float) -> str:
    return f"{x:g}"  # as C++ streams print a double (6 significant digits)


def _range_error(name: str, lo: float, hi: float, got: Any) -> ApiError:
    return ApiError(422, "out_of_range", f"{name} must be in [{_fmt(lo)}, {_fmt(hi)}], got {json.dumps(got)}", name)


_B64_CHARS = re.compile(r"[A-Za-z0-9+/]*")


def decode_base64(text: str) -> Optional[bytes]:
    """Lenient as quill serve's decoder: whitespace skipped, padding optional; None when invalid."""
    s = re.sub(r"[ \t\r\n]", "", text)
    stripped = s.rstrip("=")
    if not _B64_CHARS.fullmatch(stripped) or len(stripped) % 4 == 1:
        return None
    try:
        return base64.b64decode(stripped + "=" * (-len(stripped) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def _decode_style_text(s: str, name: str) -> bytes:
    if s.startswith("data:"):
        comma = s.find(",")
        if comma < 0 or ";base64" not in s[:comma]:
            raise ApiError(422, "invalid_image", "a data: URL style must be base64 (data:image/png;base64,...)", name)
        s = s[comma + 1:]
    data = decode_base64(s)
    if data is None:
        raise ApiError(422, "invalid_base64", "the style is not valid base64", name)
    return data


def parse_line_request(body: dict, limits: Limits, random_seed: int, style_file: Optional[bytes] = None) -> LineSpec:
    """Checks a /v1/lines or /v1/jobs body (with a multipart form's style file part, if any) in
    quill serve's order; raises ApiError."""
    for key, value in sorted(body.items()):  # quill serve's JSON objects are sorted maps: the same first error
        kind = LINE_FIELDS.get(key)
        if kind is None:
            raise ApiError(422, "unknown_field", f"unknown field '{key[:60]}'", key[:60])
        if value is not None and not _has_type(value, kind):
            raise ApiError(422, "invalid_type", f"{key} must be {kind}, got {_json_type(value)}", key)
    get = body.get

    text = get("text")
    if text is None:
        raise ApiError(422, "missing_field", "text is required", "text")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ApiError(422, "invalid_text", "the text is not valid UTF-8", "text") from None
    if len(text) == 0:
        raise ApiError(422, "invalid_text", "the text is empty", "text")
    if len(text) > limits.max_text_chars:
        raise ApiError(422, "text_too_long",
                       f"the text has {len(text)} characters; the limit is {limits.max_text_chars}", "text")
    spec = LineSpec(text=text, seed=random_seed & MAX_SEED, timeout_s=limits.timeout_s)

    if (v := get("steps")) is not None:
        if not 1 <= v <= limits.max_steps:
            raise _range_error("steps", 1, limits.max_steps, v)
        spec.steps = int(v)
    for name, (lo, hi) in (("cfg", CFG_RANGE), ("start_sigma", START_SIGMA_RANGE), ("shift", SHIFT_RANGE)):
        if (v := get(name)) is not None:
            if not lo <= v <= hi:
                raise _range_error(name, lo, hi, v)
            setattr(spec, name, float(v))
    if (v := get("seed")) is not None:
        if not 0 <= v <= MAX_SEED:
            raise _range_error("seed", 0, MAX_SEED, v)
        spec.seed = int(v)
    if (v := get("clamp_overflow")) is not None:
        spec.clamp_overflow = v
    if (v := get("timeout_s")) is not None:
        if not 1 <= v <= limits.timeout_s:
            raise _range_error("timeout_s", 1, limits.timeout_s, v)
        spec.timeout_s = float(v)
    if (v := get("response_format")) is not None:
        if v not in ("png", "json"):
            raise ApiError(422, "invalid_value", 'response_format must be "png" or "json"', "response_format")
        spec.json_response = v == "json"

    inline, style_id = get("style"), get("style_id")
    if (inline is not None or style_file is not None) and style_id is not None:
        raise ApiError(422, "conflicting_fields", "give either style or style_id, not both", "style_id")
    if style_file is not None:
        spec.style_bytes = style_file
        spec.style_id = "inline"
    elif inline is not None:
        spec.style_bytes = _decode_style_text(inline, "style")
        spec.style_id = "inline"
    elif style_id is not None:
        if style_id not in BUILTIN_STYLES:
            raise ApiError(404, "unknown_style",
                           f"no style with id '{style_id[:60]}' (this deployment knows 'default' and 'none')",
                           "style_id")
        spec.style_id, spec.style_id_given = style_id, True
    return spec


def decode_style_image(data: bytes, max_pixels: int, name: str = "style"):
    """A style image's bytes -> uint8 array [H, W] or [H, W, 3], size checked from the header first."""
    import numpy as np
    from PIL import Image, UnidentifiedImageError

    if not data:
        raise ApiError(422, "invalid_image", "the style image is empty", name)
    try:
        img = Image.open(io.BytesIO(data))  # reads the header only
        w, h = img.size
        if img.format not in ("PNG", "JPEG"):
            raise ApiError(422, "invalid_image", f"{name}: not a PNG or JPEG image ({img.format})", name)
        if w <= 0 or h <= 0 or w * h > max_pixels:
            raise ApiError(413, "image_too_large",
                           f"the style image is {w}x{h} pixels; the limit is {max_pixels} pixels", name)
        img.load()
    except ApiError:
        raise
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as e:
        raise ApiError(422, "invalid_image", f"{name}: {e}"[:300], name) from None
    if img.mode not in ("L", "RGB"):
        img = img.convert("RGB")
    return np.asarray(img, dtype=np.uint8)


def missing_glyphs_json(code_points) -> list[str]:
    """"U+4E2D" for each character the glyph font could not draw (the line shows a box for it)."""
    return [f"U+{cp:04X}" for cp in code_points]
