#!/usr/bin/env python3
"""tools/convert_bonsai.py on synthetic GemLite int2 state dicts: every ternary weight comes out of
the GGUF exactly as (code - 1) * scale, dense tensors byte for byte, and each layout it cannot
represent is refused with the module named. Exit 0 = pass, 77 = skipped (no torch), 1 = fail.

  python tools/test_convert_bonsai.py        (CTest runs it as ToolsPython.ConvertBonsai)
"""

import json
import struct
import sys
import tempfile
from pathlib import Path

try:
    import numpy as np
    import torch
except ImportError as e:  # CI images without the tools venv
    print(f"skipped: {e}")
    sys.exit(77)

sys.path.insert(0, str(Path(__file__).resolve().parent))
import convert_bonsai  # noqa: E402


def read_gguf(path: Path) -> tuple:
    """(metadata {key: str}, {name: (type, shape outer..inner, bytes)}) of a GGUF written by the converter."""
    b = path.read_bytes()
    pos = 4

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from(fmt, b, pos)
        pos += struct.calcsize(fmt)
        return v

    def gstr():
        nonlocal pos
        (n,) = take("<Q")
        s = b[pos:pos + n].decode()
        pos += n
        return s

    version, n_tensors, n_kv = take("<IQQ")
    assert version == 3
    meta = {}
    for _ in range(n_kv):
        key = gstr()
        (vtype,) = take("<I")
        assert vtype == 8
        meta[key] = gstr()
    infos = []
    for _ in range(n_tensors):
        name = gstr()
        (nd,) = take("<I")
        ne = take("<" + "Q" * nd)
        gtype, off = take("<IQ")
        infos.append((name, gtype, list(reversed(ne)), off))
    data = pos + (-pos) % 32
    tensors = {}
    for name, gtype, shape, off in infos:
        n = int(np.prod(shape))
        size = {0: 4 * n, 1: 2 * n, 30: 2 * n, 42: n // 128 * 34}[gtype]
        tensors[name] = (gtype, shape, b[data + off:data + off + size])
    return meta, tensors


def decode_tq2(raw: bytes, shape: list) -> np.ndarray:
    out, k = shape
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(out, k // 128, 34)
    d = blocks[:, :, 32:].copy().view(np.float16).astype(np.float32)[..., 0]  # [out, groups]
    qs = blocks[:, :, :32]
    codes = np.stack([(qs >> (2 * s)) & 3 for s in range(4)], axis=3).reshape(out, k)
    vals = np.where(codes == 0, -1.0, np.where(codes == 2, 1.0, 0.0)).astype(np.float32)
    return vals * np.repeat(d, 128, axis=1)


def gemlite(out: int, k: int, seed: int, with_three=False) -> tuple:
    g = torch.Generator().manual_seed(seed)
    codes = torch.randint(0, 3, (k, out), generator=g)
    if with_three:
        codes[5, 1] = 3
    wq = torch.zeros((k // 4, out), dtype=torch.int64)
    for s in range(4):
        wq |= codes[s::4] << (2 * s)
    scales = (torch.rand((k // 128, out), generator=g) + 0.1).to(torch.float16)
    dense = ((codes - 1).float() * scales.float().repeat_interleave(128, 0)).T.numpy()
    return {"W_q": wq.to(torch.uint8), "scales": scales, "zeros": -scales, "orig_shape": torch.tensor([out, k])}, dense


def convert(sd: dict, qcfg: dict) -> tuple:
    tmp = Path(tempfile.mkdtemp())
    torch.save(sd, tmp / "state_dict.pt")
    (tmp / "quantization_config.json").write_text(json.dumps(qcfg))
    out = tmp / "out.gguf"
    report = convert_bonsai.convert(tmp, out, {"_class_name": "Flux2Transformer2DModel"})
    return report, read_gguf(out)


def expect_error(sd: dict, phrase: str, qcfg=None) -> None:
    try:
        convert(sd, qcfg or {"group_size": 128})
    except convert_bonsai.ConvertError as e:
        assert phrase in str(e), f"{phrase!r} not in {e}"
        return
    raise AssertionError(f"no error; expected {phrase!r}")


def main() -> int:
    q1, dense1 = gemlite(48, 256, 1)
    q2, dense2 = gemlite(16, 128, 2)
    emb = torch.randn(8, 4).to(torch.bfloat16)
    sd = {f"a.{k}": v for k, v in q1.items()} | {f"b.{k}": v for k, v in q2.items()} | {"x_embedder.weight": emb}
    report, (meta, tensors) = convert(sd, {"group_size": 128, "bits": 2})
    assert report["ternary_linears"] == 2 and report["dense_tensors"] == 1, report
    assert "quill.tq2_0_g128.layout" in meta and json.loads(meta["quill.config"])["_class_name"]
    for name, dense in (("a.weight", dense1), ("b.weight", dense2)):
        gtype, shape, raw = tensors[name]
        assert gtype == 42 and shape == list(dense.shape), (name, gtype, shape)
        np.testing.assert_array_equal(decode_tq2(raw, shape), dense)
    gtype, shape, raw = tensors["x_embedder.weight"]
    assert gtype == 30 and shape == [8, 4] and raw == emb.view(torch.int16).numpy().tobytes()

    bad, _ = gemlite(16, 128, 3, with_three=True)
    expect_error({f"m.{k}": v for k, v in bad.items()}, "m: code 3 present")
    shifted = dict(q2)
    shifted["zeros"] = torch.zeros_like(q2["zeros"])
    expect_error({f"m.{k}": v for k, v in shifted.items()}, "m.zeros are not -scales")
    expect_error({f"m.{k}": v for k, v in q2.items()}, "group size 64", {"group_size": 64})
    wrong = dict(q2)
    wrong["orig_shape"] = torch.tensor([128, 16])
    expect_error({f"m.{k}": v for k, v in wrong.items()}, "m.orig_shape")
    print("convert_bonsai: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
