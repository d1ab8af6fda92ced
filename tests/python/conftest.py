"""Shared set-up for the package's tests: the `quill` CLI they compare against (QUILL_CLI, set by
CTest), the source tree, and small helpers."""

from __future__ import annotations

import json
import os
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

SOURCE_DIR = Path(os.environ.get("QUILL_SOURCE_DIR", Path(__file__).resolve().parents[2]))
FIXTURES = SOURCE_DIR / "tests" / "fixtures"
MODEL_DIR = SOURCE_DIR / "models" / "quill-line"


@pytest.fixture(scope="session")
def cli() -> Path:
    path = Path(os.environ.get("QUILL_CLI", SOURCE_DIR / "build" / "release" / "quill"))
    if not path.is_file():
        pytest.skip(f"the quill CLI is not built ({path}); CTest passes QUILL_CLI")
    return path


def run_cli(cli: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    r = subprocess.run([str(cli), *args], capture_output=True, text=True, cwd=cwd, timeout=600,
                       env={**os.environ, "QUILL_THREADS": os.environ.get("QUILL_THREADS", "2")})
    assert r.returncode == 0, f"quill {' '.join(args)} failed ({r.returncode}):\n{r.stderr}"
    return r


def read_png(path: Path) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as im:
        return np.asarray(im)


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """f32/f16 safetensors without torch (the fixtures are small)."""
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    out = {}
    kinds = {"F32": np.float32, "F16": np.float16}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        a, b = meta["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + a : 8 + n + b], dtype=kinds[meta["dtype"]]).reshape(meta["shape"])
    return out
