#!/usr/bin/env python3
"""FLUX.2 transformer reference fixtures under tests/fixtures/flux2/<case>/ (CPU, f32, deterministic).

  python tools/make_flux2_fixtures.py            # every case
  python tools/make_flux2_fixtures.py --case double_single

Each case: a random tiny Flux2Transformer2DModel (every parameter redrawn, tools/sd3_random.py's
init), saved with save_pretrained; inputs.safetensors (hidden_states [B, N, C] packed latents,
encoder_hidden_states [B, L, J], timestep [B] as sigmas in (0, 1], img_ids [N, 4], txt_ids [L, 4],
guidance [B] when the config has guidance embeddings) and expected.safetensors ('sample' [B, N, C_out])
from diffusers' own forward.
"""

import argparse
import json
import shutil
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import diffusers  # noqa: E402
from diffusers import Flux2Transformer2DModel  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

from sd3_random import INIT_DESCRIPTION, reinit_parameters  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "flux2"

CASES = {
    "double_single": dict(
        description=("2 double-stream + 3 single-stream blocks, 2 heads x 16, 4-axis RoPE (4,4,4,4), "
                     "text length 5 != 4x6 image tokens, batch 2, no guidance embeddings (klein)"),
        config=dict(patch_size=1, in_channels=8, num_layers=2, num_single_layers=3, attention_head_dim=16,
                    num_attention_heads=2, joint_attention_dim=24, timestep_guidance_channels=32,
                    mlp_ratio=3.0, axes_dims_rope=(4, 4, 4, 4), rope_theta=2000, guidance_embeds=False),
        batch=2, latent_hw=(4, 6), text_len=5, sigmas=[0.8, 0.35], refs=[], init_seed=3001, input_seed=4001,
    ),
    "reference": dict(
        description=("edit mode: the 3x4 latent's tokens followed by a 2x3 reference image's tokens at "
                     "T = 10 (ids (10, h, w, 0)); guidance embeddings on, out_channels != in_channels, "
                     "mlp_ratio 2.5, 3 heads x 8, RoPE axes (2,2,2,2), text length 7"),
        config=dict(patch_size=1, in_channels=6, out_channels=4, num_layers=1, num_single_layers=2,
                    attention_head_dim=8, num_attention_heads=3, joint_attention_dim=16,
                    timestep_guidance_channels=16, mlp_ratio=2.5, axes_dims_rope=(2, 2, 2, 2),
                    rope_theta=2000, guidance_embeds=True),
        batch=1, latent_hw=(3, 4), text_len=7, sigmas=[0.6], refs=[(2, 3)], guidance=[4.0],
        init_seed=3002, input_seed=4002,
    ),
}


def setup_torch() -> None:
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float32)


def cartesian_ids(t, h, w, l_len=1, l_range=None) -> torch.Tensor:
    """(t, h, w, l) position ids, row-major over h, w (as the klein pipeline builds them)."""
    ts = torch.tensor([t])
    ls = torch.arange(l_len) if l_range is None else l_range
    return torch.cartesian_prod(ts, torch.arange(h), torch.arange(w), ls).to(torch.float32)


def make_case(name: str) -> None:
    case = CASES[name]
    folder = FIXTURES / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    cfg = dict(case["config"])
    torch.manual_seed(case["init_seed"])
    model = Flux2Transformer2DModel(**cfg)
    reinit_parameters(model, case["init_seed"])
    model.eval()
    model.save_pretrained(folder, safe_serialization=True)

    gen = torch.Generator(device="cpu").manual_seed(case["input_seed"])
    B, (h, w), L = case["batch"], case["latent_hw"], case["text_len"]
    img_ids = [cartesian_ids(0, h, w)]
    for i, (rh, rw) in enumerate(case["refs"]):
        img_ids.append(cartesian_ids(10 + 10 * i, rh, rw))
    img_ids = torch.cat(img_ids, dim=0)
    txt_ids = torch.cartesian_prod(torch.tensor([0]), torch.tensor([0]), torch.tensor([0]),
                                   torch.arange(L)).to(torch.float32)
    N = img_ids.shape[0]
    inputs = {
        "hidden_states": torch.randn((B, N, cfg["in_channels"]), generator=gen),
        "encoder_hidden_states": torch.randn((B, L, cfg["joint_attention_dim"]), generator=gen),
        "timestep": torch.tensor(case["sigmas"], dtype=torch.float32),
        "img_ids": img_ids,
        "txt_ids": txt_ids,
    }
    if cfg.get("guidance_embeds"):
        inputs["guidance"] = torch.tensor(case["guidance"], dtype=torch.float32)
    with torch.no_grad():
        sample = model(**inputs, return_dict=False)[0]

    # No input path is dead: redrawing each changes the output.
    sensitivity = {}
    for key in ("hidden_states", "encoder_hidden_states"):
        pert = dict(inputs)
        pert[key] = torch.randn(inputs[key].shape, generator=gen)
        with torch.no_grad():
            other = model(**pert, return_dict=False)[0]
        sensitivity[key + " redrawn"] = ((other - sample).norm() / sample.norm()).item()

    save_file({k: v.contiguous() for k, v in inputs.items()}, folder / "inputs.safetensors")
    save_file({"sample": sample.contiguous()}, folder / "expected.safetensors")
    meta = {
        "case": name,
        "description": case["description"],
        "model_class": "Flux2Transformer2DModel",
        "config": {k: list(v) if isinstance(v, tuple) else v for k, v in cfg.items()},
        "init": INIT_DESCRIPTION,
        "init_seed": case["init_seed"],
        "input_seed": case["input_seed"],
        "sample": {"shape": list(sample.shape), "std": sample.std().item()},
        "sensitivity_rel_change": sensitivity,
        "versions": {"torch": torch.__version__, "diffusers": diffusers.__version__},
        "generator": "tools/make_flux2_fixtures.py --case " + name,
    }
    (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"flux2/{name}: sample {tuple(sample.shape)} std {meta['sample']['std']:.4f} sensitivity {sensitivity}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", nargs="*", choices=sorted(CASES), help="cases to write (default: all)")
    args = ap.parse_args()
    setup_torch()
    for name in args.case or sorted(CASES):
        make_case(name)


if __name__ == "__main__":
    main()
