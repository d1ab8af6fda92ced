#!/usr/bin/env python3
"""Convert PrismML's Bonsai Image ternary transformer (GemLite int2 layout) to a Quill GGUF.

  python tools/convert_bonsai.py BONSAI_DIR OUT.gguf [--config CONFIG.json]

BONSAI_DIR is the `transformer-gemlite-int2/` folder of prism-ml/bonsai-image-ternary-4B-gemlite-2bit:
`state_dict.pt` and `quantization_config.json` (its `group_size`, 128). What is known of the layout
comes from PrismML-Eng/Bonsai-Image-Demo's CPU decoder (`decode_gemlite_weight` in
scripts/generate_cpu_experimental.py, commit 3c63a93) and GemLite's `pack_weights_over_rows`:

  <module>.W_q     uint8 [in / 4, out]: input k of output o is (W_q[k // 4, o] >> 2 (k % 4)) & 3
  <module>.scales  [in / group, out] (or [in, out], repeated per group): one scale per group of inputs
  weight[o, k] = (code - 1) * scale[k // group, o]         (codes 0, 1, 2; 3 never used)
  <module>.zeros / .bias / .metadata / .orig_shape: zeros must be -scale (the older
  `code * scale + zero` form of the same values), biases zero, orig_shape [out, in].

Every other tensor (embedders, modulation, final layer) is dense and copied in its dtype. A group
of 128 maps one to one onto Quill's tq2_0_g128 block (the 32 code bytes of a group are W_q[32 b :
32 b + 32, o] as they are; the f16 scale follows), so the conversion is lossless. Anything outside
that layout (code 3, another group size, zero points that are not -scale, non-zero biases) is an
error naming the module, never a guess.
Without --config the transformer config is FLUX.2 [klein] 4B's (Bonsai Image 4B is klein-4B).
"""

import argparse
import json
import struct
import sys
from pathlib import Path

import numpy as np

KLEIN_4B_CONFIG = {
    "_class_name": "Flux2Transformer2DModel", "patch_size": 1, "in_channels": 128, "out_channels": None,
    "num_layers": 5, "num_single_layers": 20, "attention_head_dim": 128, "num_attention_heads": 24,
    "joint_attention_dim": 7680, "timestep_guidance_channels": 256, "mlp_ratio": 3.0,
    "axes_dims_rope": [32, 32, 32, 32], "rope_theta": 2000, "eps": 1e-6, "guidance_embeds": False,
}

GGUF_ALIGN = 32
GGML_F32, GGML_F16, GGML_BF16, GGML_TQ2_0_G128 = 0, 1, 30, 42
GGUF_STRING, GGUF_U32 = 8, 4
TQ2_LAYOUT = ("128 weights per 34-byte block: u8 qs[32] (2-bit codes, LSB first; 0 = -1, 1 = 0, 2 = +1) "
              "then f16 d")


class ConvertError(Exception):
    pass


def to_numpy(t):
    import torch
    if t.dtype == torch.bfloat16:  # numpy has no bf16: keep the bits
        return t.contiguous().view(torch.int16).numpy().view(np.uint16), GGML_BF16
    a = t.contiguous().numpy()
    if a.dtype == np.float16:
        return a, GGML_F16
    if a.dtype == np.float32:
        return a, GGML_F32
    if a.dtype == np.float64:
        return a.astype(np.float32), GGML_F32
    return a, None


def ternary_blocks(module: str, sd: dict, group: int) -> tuple:
    """(bytes of the tq2_0_g128 rows, [out, in]) for one GemLite int2 module."""
    wq = sd[module + ".W_q"].contiguous().numpy()
    if wq.dtype != np.uint8:
        wq = wq.astype(np.int64)
        if wq.min() < 0 or wq.max() > 255:
            raise ConvertError(f"{module}.W_q: values outside a byte")
        wq = wq.astype(np.uint8)
    if wq.ndim != 2:
        raise ConvertError(f"{module}.W_q: expected [in / 4, out], got {list(wq.shape)}")
    k4, out = wq.shape
    k = 4 * k4
    if group != 128:
        raise ConvertError(f"{module}: group size {group}; tq2_0_g128 needs 128")
    if k % 128:
        raise ConvertError(f"{module}: {k} inputs are not whole groups of 128")
    if module + ".orig_shape" in sd:
        shape = [int(v) for v in np.asarray(sd[module + ".orig_shape"]).reshape(-1)]
        if shape != [out, k]:
            raise ConvertError(f"{module}.orig_shape {shape} does not match W_q's [out, in] = {[out, k]}")
    codes = np.stack([(wq >> (2 * s)) & 3 for s in range(4)], axis=1).reshape(k, out)  # [in, out]
    if (codes == 3).any():
        raise ConvertError(f"{module}: code 3 present; Bonsai ternary uses 0, 1, 2 only")
    scales = sd[module + ".scales"].float().numpy()
    if scales.shape == (k, out):  # stored repeated per input
        scales = scales[::group]
    if scales.shape != (k // group, out):
        raise ConvertError(f"{module}.scales: expected [{k // group}, {out}] (or [{k}, {out}]), got {list(scales.shape)}")
    if module + ".zeros" in sd:
        zeros = sd[module + ".zeros"].float().numpy()
        if zeros.shape == (k, out):
            zeros = zeros[::group]
        if zeros.shape != scales.shape or not np.allclose(zeros, -scales, rtol=1e-3, atol=1e-6):
            raise ConvertError(f"{module}.zeros are not -scales: weights would not be (code - 1) * scale")
    if module + ".bias" in sd and sd[module + ".bias"] is not None:
        b = sd[module + ".bias"]
        if hasattr(b, "float") and b.numel() and float(b.float().abs().max()) != 0.0:
            raise ConvertError(f"{module}.bias is not zero; FLUX.2 linears have no bias")
    d = scales.astype(np.float16)  # [groups, out]
    qs = np.ascontiguousarray(wq.T).reshape(out, k // 128, 32)
    blocks = np.concatenate([qs, d.T.reshape(out, k // 128, 1).view(np.uint8).reshape(out, k // 128, 2)], axis=2)
    return blocks.tobytes(), [out, k]


def write_gguf(path: Path, metadata: dict, tensors: list) -> None:
    """tensors: (name, ggml_type, shape [outer..inner], bytes)."""
    def gstr(s: str) -> bytes:
        b = s.encode()
        return struct.pack("<Q", len(b)) + b

    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata))
    for key, value in metadata.items():
        head += gstr(key) + struct.pack("<I", GGUF_STRING) + gstr(value)
    offset, data = 0, []
    for name, gtype, shape, raw in tensors:
        head += gstr(name) + struct.pack("<I", len(shape))
        for dim in reversed(shape):  # GGUF stores the innermost dimension first
            head += struct.pack("<Q", dim)
        head += struct.pack("<IQ", gtype, offset)
        pad = (-len(raw)) % GGUF_ALIGN
        data.append(raw + b"\0" * pad)
        offset += len(raw) + pad
    head += b"\0" * ((-len(head)) % GGUF_ALIGN)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(head)
        for chunk in data:
            f.write(chunk)
    tmp.replace(path)


def convert(src: Path, out: Path, config: dict) -> dict:
    import torch
    qcfg_path = src / "quantization_config.json"
    qcfg = json.loads(qcfg_path.read_text()) if qcfg_path.exists() else {}
    group = int(qcfg.get("group_size", 128))
    pts = sorted(src.glob("*.pt"))
    if len(pts) != 1:
        raise ConvertError(f"{src}: expected one state_dict .pt file, found {[p.name for p in pts]}")
    sd = torch.load(pts[0], map_location="cpu", weights_only=True)
    if not isinstance(sd, dict):
        raise ConvertError(f"{pts[0]}: not a state dict")
    modules = sorted(k[: -len(".W_q")] for k in sd if k.endswith(".W_q"))
    owned = {m + suffix for m in modules for suffix in (".W_q", ".scales", ".zeros", ".bias", ".metadata", ".orig_shape")}
    tensors, ternary = [], 0
    for m in modules:
        raw, shape = ternary_blocks(m, sd, group)
        tensors.append((m + ".weight", GGML_TQ2_0_G128, shape, raw))
        ternary += 1
    for name in sorted(k for k in sd if k not in owned):
        t = sd[name]
        if not hasattr(t, "numpy"):
            continue
        a, gtype = to_numpy(t)
        if gtype is None:
            raise ConvertError(f"{name}: dtype {t.dtype} is not a weight dtype")
        tensors.append((name, gtype, list(a.shape), a.tobytes()))
    meta = {"general.architecture": "flux2", "quill.config": json.dumps(config),
            "quill.tq2_0_g128.layout": TQ2_LAYOUT, "quill.converted_from": f"bonsai gemlite int2 group {group}"}
    write_gguf(out, meta, tensors)
    return {"ternary_linears": ternary, "dense_tensors": len(tensors) - ternary, "out": str(out)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src", type=Path, help="folder with state_dict.pt and quantization_config.json")
    ap.add_argument("out", type=Path, help="the GGUF to write")
    ap.add_argument("--config", type=Path, help="Flux2Transformer2DModel config.json (default: klein-4B's)")
    args = ap.parse_args()
    config = json.loads(args.config.read_text()) if args.config else KLEIN_4B_CONFIG
    try:
        print(json.dumps(convert(args.src, args.out, config)))
    except ConvertError as e:
        print(f"convert_bonsai: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
