"""Quill: handwriting lines and diffusion-transformer images from Python, on Quill's C++ engine.

    import quill
    studio = quill.LineStudio()                       # the packaged default line model
    gray = studio.generate("Kongl. Maj:ts nådiga förordning", seed=7)   # numpy uint8 [H, W]
    open("line.png", "wb").write(quill.encode_png(gray))

Every call that runs the model releases the GIL; errors are QuillError subclasses that also
derive from the matching built-in (ValueError, FileNotFoundError, ...).
"""

from __future__ import annotations

import json
import os
from typing import Any

from . import _quill
from ._quill import (
    CancelToken,
    Cancelled,
    Conditioning,
    DeviceError,
    InvalidArgumentError,
    InvalidFileError,
    NonFiniteError,
    NotFoundError,
    QuillError,
    QuillIOError,
    StyleEmbedding,
    UnsupportedError,
)
from .image_pipeline import ImagePipeline
from .line_studio import LineStudio, MissingGlyphsWarning

__version__: str = _quill.__version__

__all__ = [
    "CancelToken",
    "Cancelled",
    "Conditioning",
    "DeviceError",
    "ImagePipeline",
    "InvalidArgumentError",
    "InvalidFileError",
    "LineStudio",
    "MissingGlyphsWarning",
    "NonFiniteError",
    "NotFoundError",
    "QuillError",
    "QuillIOError",
    "StyleEmbedding",
    "UnsupportedError",
    "encode_png",
    "info",
]


def info(path: str | os.PathLike[str], tensors: bool = False) -> dict[str, Any]:
    """What a model file or folder holds (`quill info --json`): format, architecture, config,
    tensor count, dtype histogram, parameters, bytes; with `tensors`, every tensor."""
    return json.loads(_quill.describe_model_json(os.fspath(path), tensors))


def encode_png(image: Any) -> bytes:
    """PNG bytes of a uint8 image: [H, W] gray or [H, W, C] with C = 1..4 (a PIL image works too)."""
    import numpy as np

    return _quill.encode_png(np.ascontiguousarray(np.asarray(image), dtype=np.uint8))
