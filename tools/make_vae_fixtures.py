#!/usr/bin/env python3
"""Fixtures for the AutoencoderKL tests (tests/vae/), made with diffusers' own model.

Run with the tools venv (torch, diffusers, safetensors, numpy):
    /work/venv-tools/bin/python tools/make_vae_fixtures.py [--out tests/fixtures/vae]

Writes, deterministically (fixed seeds, CPU, f32):
  tiny/        AutoencoderKL block_out_channels (8, 16), layers_per_block 1, latent 4, norm groups 4,
               sample_size 16, quant convs on, scaling 0.5 / shift 0.1; f32 weights, encoder included.
  tiny_io.safetensors
               decode:  latents [2,4,5,7] -> vae.decode(latents / sf + shift)         ("decode_*")
               tiled:   latents [1,4,13,21] with enable_tiling() (tile 16 px / 8 latent) ("tiled_*")
               encode:  image [1,3,17,22] -> encode(image).latent_dist.mean          ("encode_*")
               rgb8:    VaeImageProcessor.postprocess(x, "pil") of a ramp over [-1.2, 1.2] ("rgb_*")
  sd3_layout/  the SD3 VAE's layout (4 blocks, layers_per_block 2, latent 16, norm groups 32, no
               quant convs, scaling 1.5305, shift 0.0609) with channels (32, 32, 64, 64) instead of
               (128, 256, 512, 512); decoder weights only, stored in f16. The reference is computed
               in f32 from the f16-rounded weights.
  sd3_layout_io.safetensors
               latents [1,16,4,5] -> image [1,3,32,40].

Every parameter is re-initialised with random normals (weights N(0, 1/fan_in), biases N(0, 0.1),
norm scales N(1, 0.1)), so nothing is trivially zero or one.
"""
import argparse
import json
import os

import numpy as np
import torch
from diffusers import AutoencoderKL
from diffusers.image_processor import VaeImageProcessor
from safetensors.torch import save_file

torch.set_grad_enabled(False)


def reinit(model: torch.nn.Module, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    for name, p in model.named_parameters():
        if p.ndim >= 2:
            fan_in = p[0].numel()
            p.copy_(torch.randn(p.shape, generator=g) / fan_in**0.5)
        elif name.endswith("bias"):
            p.copy_(torch.randn(p.shape, generator=g) * 0.1)
        else:  # GroupNorm scale
            p.copy_(1.0 + torch.randn(p.shape, generator=g) * 0.1)


def save_model(model: AutoencoderKL, folder: str, dtype: torch.dtype, prefixes=None) -> None:
    os.makedirs(folder, exist_ok=True)
    sd = {k: v.to(dtype).contiguous() for k, v in model.state_dict().items()
          if prefixes is None or k.startswith(prefixes)}
    save_file(sd, os.path.join(folder, "diffusion_pytorch_model.safetensors"))
    cfg = dict(model.config)
    cfg = {k: v for k, v in cfg.items() if not k.startswith("_")}
    cfg["_class_name"] = "AutoencoderKL"
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)


def scaled(vae: AutoencoderKL, z: torch.Tensor) -> torch.Tensor:
    # StableDiffusion3Pipeline: latents / scaling_factor + shift_factor before vae.decode.
    return z / vae.config.scaling_factor + vae.config.shift_factor


def tiny(out: str) -> None:
    vae = AutoencoderKL(
        in_channels=3, out_channels=3,
        down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
        block_out_channels=(8, 16), layers_per_block=1, latent_channels=4, norm_num_groups=4,
        sample_size=16, scaling_factor=0.5, shift_factor=0.1,
        use_quant_conv=True, use_post_quant_conv=True, mid_block_add_attention=True,
    ).eval()
    reinit(vae, 1234)
    save_model(vae, os.path.join(out, "tiny"), torch.float32)

    g = torch.Generator().manual_seed(99)
    io = {}
    z = torch.randn(2, 4, 5, 7, generator=g)
    io["decode_latents"] = z
    io["decode_image"] = vae.decode(scaled(vae, z)).sample

    zt = torch.randn(1, 4, 13, 21, generator=g)
    vae.enable_tiling()
    assert vae.tile_latent_min_size == 8 and vae.tile_sample_min_size == 16
    io["tiled_latents"] = zt
    io["tiled_image"] = vae.decode(scaled(vae, zt)).sample
    vae.disable_tiling()
    io["tiled_untiled_image"] = vae.decode(scaled(vae, zt)).sample  # to show tiling changed something

    x = torch.rand(1, 3, 17, 22, generator=g) * 2 - 1
    io["encode_image"] = x
    io["encode_mean"] = vae.encode(x).latent_dist.mean

    ramp = torch.linspace(-1.2, 1.2, 3 * 16 * 256).reshape(1, 3, 16, 256)
    ramp = ramp + torch.randn(ramp.shape, generator=g) * 1e-3
    pil = VaeImageProcessor(vae_scale_factor=2).postprocess(ramp, output_type="pil")[0]
    io["rgb_image"] = ramp
    io["rgb_u8"] = torch.from_numpy(np.array(pil)).unsqueeze(0)  # [1, H, W, 3] uint8
    for k, v in io.items():
        print(f"tiny {k}: {tuple(v.shape)} {v.dtype} std {v.float().std():.4f}")
    save_file({k: v.contiguous() for k, v in io.items()}, os.path.join(out, "tiny_io.safetensors"))


def sd3_layout(out: str) -> None:
    vae = AutoencoderKL(
        in_channels=3, out_channels=3,
        down_block_types=("DownEncoderBlock2D",) * 4, up_block_types=("UpDecoderBlock2D",) * 4,
        block_out_channels=(32, 32, 64, 64), layers_per_block=2, latent_channels=16, norm_num_groups=32,
        sample_size=1024, scaling_factor=1.5305, shift_factor=0.0609,
        use_quant_conv=False, use_post_quant_conv=False, mid_block_add_attention=True,
    ).eval()
    reinit(vae, 4321)
    # The stored weights are f16; the reference runs in f32 on exactly those values.
    for p in vae.parameters():
        p.copy_(p.half().float())
    save_model(vae, os.path.join(out, "sd3_layout"), torch.float16, prefixes=("decoder.",))
    g = torch.Generator().manual_seed(7)
    z = torch.randn(1, 16, 4, 5, generator=g)
    io = {"decode_latents": z, "decode_image": vae.decode(scaled(vae, z)).sample}
    n = sum(p.numel() for k, p in vae.state_dict().items() if k.startswith("decoder."))
    print(f"sd3_layout decoder params {n} ({2 * n / 1e6:.2f} MB in f16); image std {io['decode_image'].std():.4f}")
    save_file({k: v.contiguous() for k, v in io.items()}, os.path.join(out, "sd3_layout_io.safetensors"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "vae"))
    args = ap.parse_args()
    torch.manual_seed(0)
    tiny(args.out)
    sd3_layout(args.out)


if __name__ == "__main__":
    main()
