"""quill.LineStudio: text + a style reference -> a handwritten line (numpy uint8, 255 = paper)."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence, Union

import numpy as np

from . import _quill

# "default": the model's own reference hand; None: no style (the model's average hand); a path to
# a PNG/JPEG; uint8 pixels [H, W] / [H, W, C]; a PIL image; or an embedding from embed_style().
Style = Union[str, os.PathLike, np.ndarray, Any, None]
Progress = Callable[[int, int, int, int], Any]


class MissingGlyphsWarning(UserWarning):
    """The glyph font cannot draw some characters of a line; the line shows a box for each."""


def packaged_model_dir() -> str:
    """The default line model shipped inside the package (empty when this install has none)."""
    here = Path(__file__).resolve().parent / "models" / "quill-line"
    return str(here) if (here / "config.json").is_file() else ""


def _style_arg(style: Style) -> Any:
    if style is None or isinstance(style, str):
        return style
    if isinstance(style, np.ndarray):
        if style.dtype != np.uint8:
            raise _quill.InvalidArgumentError(f"style pixels must be uint8 (0..255), got {style.dtype}")
        return style
    if isinstance(style, os.PathLike):
        return os.fspath(style)
    if type(style).__module__.startswith("PIL."):
        return np.asarray(style.convert("RGB") if style.mode not in ("L", "LA", "RGB", "RGBA") else style)
    if hasattr(style, "__array__") or isinstance(style, (list, tuple)):
        style = np.asarray(style)
        if style.dtype != np.uint8:
            raise _quill.InvalidArgumentError(f"style pixels must be uint8 (0..255), got {style.dtype}")
        return style
    return style  # the engine names what it cannot use


def _warn_missing(text: str, missing: Sequence[int]) -> None:
    if missing:
        chars = ", ".join(f"U+{c:04X}" for c in missing)
        warnings.warn(f"quill: the glyph font cannot draw {chars} in {text!r}; the line shows a box for each",
                      MissingGlyphsWarning, stacklevel=3)


def _as_pil(gray: np.ndarray) -> Any:
    from PIL import Image  # Pillow is optional: only output="pil" needs it

    return Image.fromarray(gray, mode="L")


class LineStudio:
    """A line model opened once; generate() may be called from several threads (calls run one at a
    time on the engine, with the GIL released)."""

    def __init__(self, model_dir: str | os.PathLike[str] | None = None, *, device: str = "auto", threads: int = 0,
                 font: str | os.PathLike[str] | None = None, weights: str = "f32") -> None:
        """model_dir: a line model folder (None: the one shipped in the package, else the embedded
        models/quill-line); device: "auto", "cpu" or "gpu"; threads: 0 = QUILL_THREADS or all
        cores; font: the glyph-line font (must match the model's training font); weights: "f32", or a
        quantized variant ("q8_0", "fp8_e4m3", "tq2_0_g128") that passed the model's quality gate
        (its variants.json), else the call raises saying why."""
        path = os.fspath(model_dir) if model_dir is not None else packaged_model_dir()
        self._engine = _quill.LineStudio(path, device, threads, os.fspath(font) if font is not None else "", weights)

    @property
    def model_dir(self) -> str:
        return self._engine.model_dir

    @property
    def device(self) -> str:
        return self._engine.device

    @property
    def line_height(self) -> int:
        return self._engine.line_height

    @property
    def max_line_width(self) -> int:
        return self._engine.max_line_width

    @property
    def has_style_encoder(self) -> bool:
        return self._engine.has_style_encoder

    @property
    def defaults(self) -> dict[str, float | bool]:
        """The model's sampling settings (sampler.json): steps, cfg, shift, start_sigma, guide_glyph."""
        return self._engine.defaults

    @property
    def last_timing(self) -> dict[str, float]:
        """The engine's own times of the last generate()/generate_many() call, in ms: style_ms,
        render_ms, sample_ms (and lines)."""
        return self._engine.last_timing

    @property
    def plan_builds(self) -> int:
        return self._engine.plan_builds

    @property
    def plan_reuses(self) -> int:
        return self._engine.plan_reuses

    def generate(self, text: str, style: Style = "default", *, seed: int = 0, steps: int | None = None,
                 cfg: float | None = None, shift: float | None = None, start_sigma: float | None = None,
                 clamp_overflow: bool = False, progress: Progress | None = None,
                 cancel: _quill.CancelToken | None = None, output: str = "numpy") -> Any:
        """One line: numpy uint8 [H, W] (255 = paper), or a PIL image with output="pil". The same
        pixels as `quill line --text TEXT --seed SEED` with the same settings.

        progress(lines_done, lines_total, step, steps) is called after every step; returning False
        cancels (quill.Cancelled). A CancelToken cancels from another thread; Ctrl-C stops too."""
        return self.generate_many([text], style, seed=seed, steps=steps, cfg=cfg, shift=shift,
                                  start_sigma=start_sigma, clamp_overflow=clamp_overflow, progress=progress,
                                  cancel=cancel, output=output)[0]

    def generate_many(self, texts: Iterable[str], style: Style = "default", *, seed: int = 0,
                      steps: int | None = None, cfg: float | None = None, shift: float | None = None,
                      start_sigma: float | None = None, clamp_overflow: bool = False, max_batch: int = 8,
                      progress: Progress | None = None, cancel: _quill.CancelToken | None = None,
                      output: str = "numpy") -> list[Any]:
        """Several lines in one request: grouped by width bucket and sampled up to max_batch at a
        time (as `quill line --batch-file`). Same style and seed for the request."""
        if output not in ("numpy", "pil"):
            raise ValueError(f"output must be 'numpy' or 'pil', got {output!r}")
        texts = [texts] if isinstance(texts, str) else list(texts)
        lines = self._engine.generate(texts, _style_arg(style), seed, steps, cfg, shift, start_sigma, clamp_overflow,
                                      max_batch, progress, cancel)
        out = []
        for text, (gray, missing) in zip(texts, lines):
            _warn_missing(text, missing)
            out.append(_as_pil(gray) if output == "pil" else gray)
        return out

    # ---- the row-level API a server batches with (see deploy/ray) ----

    def embed_style(self, style: Style = "default") -> _quill.StyleEmbedding:
        """A style embedded once, for generate_rows()."""
        return self._engine.embed_style(_style_arg(style))

    def bucket_width(self, text: str, clamp_overflow: bool = False) -> int:
        """The canvas width bucket (pixels) of `text`; bad or too-wide text raises here."""
        return self._engine.bucket_width(text, clamp_overflow)

    def bucket_widths(self) -> list[int]:
        return self._engine.bucket_widths()

    def warm_up(self, widths: Sequence[int], plan_batch: int) -> None:
        """Build (and make resident) the plans generate_rows(plan_batch=...) uses for these widths."""
        self._engine.warm_up(list(widths), plan_batch)

    def generate_rows(self, rows: Sequence[tuple[str, _quill.StyleEmbedding | None, int]], *,
                      steps: int | None = None, cfg: float | None = None, shift: float | None = None,
                      start_sigma: float | None = None, clamp_overflow: bool = False, plan_batch: int = 0,
                      ragged: bool = False, pad_to_width: int = 0, progress: Callable[[int, int], Any] | None = None,
                      cancel: _quill.CancelToken | None = None,
                      with_missing: bool = False) -> list[np.ndarray] | list[tuple[np.ndarray, list[int]]]:
        """Rows (text, style embedding or None, seed) sampled together; each row's pixels are those
        of generate(text, that style, seed=seed). ragged=True runs rows of several widths in one
        batch (padding masked out of attention).

        with_missing=True returns (pixels, code points the glyph font cannot draw) per row instead
        of warning about them (MissingGlyphsWarning)."""
        lines = self._engine.generate_rows([(t, s, int(seed)) for t, s, seed in rows], steps, cfg, shift, start_sigma,
                                           clamp_overflow, plan_batch, ragged, pad_to_width, progress, cancel)
        if with_missing:
            return [(gray, list(missing)) for gray, missing in lines]
        for (text, _, _), (_, missing) in zip(rows, lines):
            _warn_missing(text, missing)
        return [gray for gray, _ in lines]

    def op_counts(self) -> str:
        """Ops run per kind and device (line model and style encoder)."""
        return self._engine.op_counts()

    def __repr__(self) -> str:
        return f"quill.LineStudio({self.model_dir!r}, device={self.device!r})"
