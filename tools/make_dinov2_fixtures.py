#!/usr/bin/env python3
"""Reference fixtures for Quill's DINOv2 style encoder (src/models/dinov2.*), from HF transformers.

For each tiny config a random `Dinov2Model` is built, every parameter is re-drawn from a normal
distribution (layer-scale lambdas, CLS token, position table and the norm weights included, so
nothing is trivially 0 or 1) and saved with `save_pretrained` under tests/fixtures/dinov2/<case>/.
The model is then run (eval, float32, CPU) at the config's image size and at another size, where
transformers interpolates the position table bicubically; for each size HxW:
    inputs_HxW.safetensors    pixel_values [2, C, H, W]
    expected_HxW.safetensors  pooler_output [2, D], last_hidden_state [2, 1 + (H/p)(W/p), D]
Also tests/fixtures/dinov2/bicubic.safetensors: F.interpolate(mode="bicubic",
align_corners=False) of a random [1, C, h, w] to a few sizes (up, down and mixed), the resize
the position interpolation uses.

Run with the tools venv:  /work/venv-tools/bin/python tools/make_dinov2_fixtures.py
"""
import json
import os

import torch
import transformers
from safetensors.torch import save_file
from transformers import Dinov2Config, Dinov2Model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "dinov2")

CASES = {
    # MLP with exact-erf GELU; evaluated at 16x16 (table used as is) and 24x20 (4x4 -> 6x5).
    "gelu": dict(
        config=dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, mlp_ratio=4, patch_size=4,
                    image_size=16, hidden_act="gelu", layer_norm_eps=1e-6),
        sizes=[(16, 16), (24, 20)],
        seed=1,
    ),
    # SwiGLU FFN, no q/k/v bias, other eps; 5x5 table evaluated at 15x15 and at 10x22
    # (3x7: shrinks one axis, grows the other; 1 leftover pixel row and column the conv drops).
    "swiglu": dict(
        config=dict(hidden_size=24, num_hidden_layers=2, num_attention_heads=2, mlp_ratio=4, patch_size=3,
                    image_size=15, use_swiglu_ffn=True, qkv_bias=False, layer_norm_eps=1e-5),
        sizes=[(15, 15), (10, 22)],
        seed=2,
    ),
}


def randomize(model, gen):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("lambda1"):
                v = 0.5 + 0.5 * torch.randn(p.shape, generator=gen)
            elif "norm" in name and name.endswith("weight"):
                v = 1.0 + 0.3 * torch.randn(p.shape, generator=gen)
            elif name.endswith("bias"):
                v = 0.2 * torch.randn(p.shape, generator=gen)
            elif p.dim() >= 2 and "embeddings." in name and "patch_embeddings" not in name:
                v = 0.5 * torch.randn(p.shape, generator=gen)  # cls token, mask token, position table
            else:
                fan_in = p[0].numel()
                v = torch.randn(p.shape, generator=gen) / fan_in ** 0.5
            p.copy_(v.to(p.dtype))


def make_case(name, spec):
    gen = torch.Generator().manual_seed(spec["seed"])
    config = Dinov2Config(**spec["config"])
    config._attn_implementation = "eager"
    model = Dinov2Model(config).eval()
    randomize(model, gen)
    out_dir = os.path.join(OUT, name)
    os.makedirs(out_dir, exist_ok=True)
    model.save_pretrained(out_dir)
    for h, w in spec["sizes"]:
        pixels = torch.randn(2, config.num_channels, h, w, generator=gen)
        with torch.no_grad():
            out = model(pixel_values=pixels)
        save_file({"pixel_values": pixels.contiguous()}, os.path.join(out_dir, f"inputs_{h}x{w}.safetensors"))
        save_file({"pooler_output": out.pooler_output.contiguous(),
                   "last_hidden_state": out.last_hidden_state.contiguous()},
                  os.path.join(out_dir, f"expected_{h}x{w}.safetensors"))
        print(f"{name} {h}x{w}: last_hidden_state {tuple(out.last_hidden_state.shape)}")


def make_bicubic():
    gen = torch.Generator().manual_seed(3)
    src = torch.randn(1, 5, 4, 6, generator=gen)
    tensors = {"src": src}
    for oh, ow in [(4, 6), (7, 9), (2, 3), (3, 11), (1, 1), (8, 2)]:
        tensors[f"out_{oh}x{ow}"] = torch.nn.functional.interpolate(
            src, size=(oh, ow), mode="bicubic", align_corners=False).contiguous()
    save_file(tensors, os.path.join(OUT, "bicubic.safetensors"))


if __name__ == "__main__":
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    for case_name, case_spec in CASES.items():
        make_case(case_name, case_spec)
    make_bicubic()
    with open(os.path.join(OUT, "VERSIONS.json"), "w") as f:
        json.dump({"torch": torch.__version__, "transformers": transformers.__version__}, f, indent=1)
        f.write("\n")
