#!/usr/bin/env python3
"""End-to-end StableDiffusion3Pipeline fixtures: a tiny random SD3 transformer + a tiny random
AutoencoderKL, fixed initial latents and conditioning, run through diffusers' own pipeline.

  /work/venv-tools/bin/python tools/make_pipeline_fixtures.py

Writes tests/fixtures/pipeline/:
  transformer/, vae/                 the models (save_pretrained / safetensors, f32)
  <case>/cond.safetensors            encoder_hidden_states [B,T,J], pooled_projections [B,P]
  <case>/negative.safetensors        the same for the negative prompt
  <case>/latents.safetensors         latents [B,C,h,w] (the pipeline's initial noise)
  <case>/expected.safetensors        image [B,3,H,W] in [0,1] (output_type="pt")
  <case>/meta.json                   steps, guidance, shift
Case "cfg5": 4 steps, guidance 5, shift 3, 8x8 latent. Case "cfg2": 3 steps, guidance 2.5, shift 1,
8x12 latent, batch 1.
"""
import json
import sys
from pathlib import Path

import torch
from diffusers import AutoencoderKL, FlowMatchEulerDiscreteScheduler, StableDiffusion3Pipeline
from safetensors.torch import save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sd3_random import build_random_sd3  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "pipeline"

TRANSFORMER = dict(sample_size=32, patch_size=1, in_channels=4, num_layers=2, attention_head_dim=8,
                   num_attention_heads=4, caption_projection_dim=32, joint_attention_dim=32,
                   pooled_projection_dim=64, out_channels=4, pos_embed_max_size=16)
CASES = {
    "cfg5": dict(batch=2, latent=(8, 8), text_len=7, steps=4, guidance=5.0, shift=3.0, seed=11),
    "cfg2": dict(batch=1, latent=(8, 12), text_len=5, steps=3, guidance=2.5, shift=1.0, seed=12),
}


def build_vae() -> AutoencoderKL:
    vae = AutoencoderKL(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 2,
                        up_block_types=("UpDecoderBlock2D",) * 2, block_out_channels=(8, 16), layers_per_block=1,
                        latent_channels=4, norm_num_groups=4, sample_size=16, scaling_factor=1.5035,
                        shift_factor=0.0609, use_quant_conv=False, use_post_quant_conv=False).eval()
    g = torch.Generator().manual_seed(77)
    with torch.no_grad():
        for name, p in vae.named_parameters():
            if p.ndim >= 2:
                p.copy_(torch.randn(p.shape, generator=g) / p[0].numel() ** 0.5)
            elif name.endswith("bias"):
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
            else:
                p.copy_(1.0 + torch.randn(p.shape, generator=g) * 0.1)
    return vae


@torch.no_grad()
def main() -> None:
    torch.use_deterministic_algorithms(True)
    transformer = build_random_sd3(TRANSFORMER, 5001).eval()
    vae = build_vae()
    transformer.save_pretrained(OUT / "transformer", safe_serialization=True)
    vae.save_pretrained(OUT / "vae", safe_serialization=True)
    for name, c in CASES.items():
        d = OUT / name
        d.mkdir(parents=True, exist_ok=True)
        scheduler = FlowMatchEulerDiscreteScheduler(num_train_timesteps=1000, shift=c["shift"])
        pipe = StableDiffusion3Pipeline(transformer=transformer, scheduler=scheduler, vae=vae, text_encoder=None,
                                        tokenizer=None, text_encoder_2=None, tokenizer_2=None, text_encoder_3=None,
                                        tokenizer_3=None)
        g = torch.Generator().manual_seed(c["seed"])
        b, (h, w), t = c["batch"], c["latent"], c["text_len"]
        pe = torch.randn(b, t, TRANSFORMER["joint_attention_dim"], generator=g)
        pp = torch.randn(b, TRANSFORMER["pooled_projection_dim"], generator=g)
        ne = torch.randn(b, t, TRANSFORMER["joint_attention_dim"], generator=g)
        npp = torch.randn(b, TRANSFORMER["pooled_projection_dim"], generator=g)
        latents = torch.randn(b, 4, h, w, generator=g)
        vae_scale = 2 ** (len(vae.config.block_out_channels) - 1)
        image = pipe(prompt_embeds=pe, pooled_prompt_embeds=pp, negative_prompt_embeds=ne,
                     negative_pooled_prompt_embeds=npp, latents=latents.clone(), num_inference_steps=c["steps"],
                     guidance_scale=c["guidance"], height=h * vae_scale, width=w * vae_scale, output_type="pt").images
        save_file({"encoder_hidden_states": pe, "pooled_projections": pp}, str(d / "cond.safetensors"))
        save_file({"encoder_hidden_states": ne, "pooled_projections": npp}, str(d / "negative.safetensors"))
        save_file({"latents": latents}, str(d / "latents.safetensors"))
        save_file({"image": image.contiguous().float()}, str(d / "expected.safetensors"))
        (d / "meta.json").write_text(json.dumps({"steps": c["steps"], "guidance": c["guidance"], "shift": c["shift"],
                                                "height": h * vae_scale, "width": w * vae_scale}, indent=2) + "\n")
        print(name, tuple(image.shape), float(image.mean()), float(image.std()))


if __name__ == "__main__":
    main()
