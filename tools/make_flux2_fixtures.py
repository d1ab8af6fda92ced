#!/usr/bin/env python3
"""FLUX.2 transformer reference fixtures under tests/fixtures/flux2/<case>/ (CPU, f32, deterministic).

  python tools/make_flux2_fixtures.py            # every case
  python tools/make_flux2_fixtures.py --case double_single vae pipeline_distilled

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
from diffusers import (  # noqa: E402
    AutoencoderKLFlux2,
    FlowMatchEulerDiscreteScheduler,
    Flux2KleinPipeline,
    Flux2Transformer2DModel,
)
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
    "irregular": dict(
        description=("the config corners: odd timestep channels (33, zero-padded), unequal RoPE axes (2,8,8,6), "
                     "patch_size 2 with out_channels 3, mlp_ratio 2.7 (F = int(48 x 2.7) = 129, odd), eps 1e-5, "
                     "rope_theta 10000, no double blocks, guidance embeddings"),
        config=dict(patch_size=2, in_channels=8, out_channels=3, num_layers=0, num_single_layers=2,
                    attention_head_dim=24, num_attention_heads=2, joint_attention_dim=12,
                    timestep_guidance_channels=33, mlp_ratio=2.7, axes_dims_rope=(2, 8, 8, 6), rope_theta=10000,
                    eps=1e-5, guidance_embeds=True),
        batch=2, latent_hw=(3, 5), text_len=4, sigmas=[0.5, 0.9], refs=[], guidance=[3.0, 5.0],
        init_seed=3004, input_seed=4004,
    ),
    "q128": dict(
        description=("inner dim 128 (2 heads x 64), F 384: every block Linear has K % 128 == 0, so all 12 per "
                     "double block and 2 per single block can be ternary (tq2_0_g128) or q8_0, as in Bonsai "
                     "Image; weights stored in bf16, `sample` is the f32 forward of the bf16 values"),
        config=dict(patch_size=1, in_channels=16, num_layers=1, num_single_layers=1, attention_head_dim=64,
                    num_attention_heads=2, joint_attention_dim=128, timestep_guidance_channels=64,
                    mlp_ratio=3.0, axes_dims_rope=(16, 16, 16, 16), rope_theta=2000, guidance_embeds=False),
        batch=2, latent_hw=(4, 4), text_len=6, sigmas=[0.9, 0.5], refs=[], init_seed=3003, input_seed=4003,
        bf16=True,
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
    if case.get("bf16"):
        model.to(torch.bfloat16).save_pretrained(folder, safe_serialization=True)
        model = Flux2Transformer2DModel.from_pretrained(folder, torch_dtype=torch.float32).eval()
    else:
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


# --- AutoencoderKLFlux2 and the whole Flux2KleinPipeline ----------------------------------------

TINY_VAE = dict(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 2,
                up_block_types=("UpDecoderBlock2D",) * 2, block_out_channels=(16, 32), layers_per_block=1,
                latent_channels=4, norm_num_groups=8, sample_size=32, patch_size=(2, 2), batch_norm_eps=1e-4)

# Klein's scheduler: dynamic (exponential) shifting with the pipeline's empirical mu.
KLEIN_SCHEDULER = dict(num_train_timesteps=1000, shift=3.0, use_dynamic_shifting=True, base_shift=0.5,
                       max_shift=1.15, base_image_seq_len=256, max_image_seq_len=4096,
                       time_shift_type="exponential")

PIPE_TRANSFORMER = dict(patch_size=1, in_channels=16, num_layers=1, num_single_layers=2, attention_head_dim=16,
                        num_attention_heads=2, joint_attention_dim=24, timestep_guidance_channels=32,
                        mlp_ratio=3.0, axes_dims_rope=(4, 4, 4, 4), rope_theta=2000, guidance_embeds=False)

PIPELINES = {
    "pipeline_distilled": dict(
        description="distilled klein: 3 steps, no CFG, batch 2, 32x32 px (8x8 packed tokens of 16 channels)",
        is_distilled=True, guidance=1.0, steps=3, batch=2, text_len=6, negative_len=None, size=(32, 32),
        seed=5001),
    "pipeline_base": dict(
        description=("base klein: 4 steps, CFG 3.5 with a negative prompt of another length (two forwards "
                     "per step in diffusers), batch 1, 32x48 px"),
        is_distilled=False, guidance=3.5, steps=4, batch=1, text_len=5, negative_len=3, size=(32, 48),
        seed=5002),
    "pipeline_base_batched": dict(
        description=("base klein: 2 steps, CFG 4 with a negative prompt of the prompt's length (Quill: one "
                     "forward of batch 2B per step), batch 2, 48x32 px"),
        is_distilled=False, guidance=4.0, steps=2, batch=2, text_len=4, negative_len=4, size=(48, 32),
        seed=5003),
}


@torch.no_grad()
def build_vae(seed: int) -> AutoencoderKLFlux2:
    torch.manual_seed(seed)
    vae = AutoencoderKLFlux2(**TINY_VAE)
    reinit_parameters(vae, seed)
    gen = torch.Generator(device="cpu").manual_seed(seed + 1)
    # The batch-norm statistics are buffers, not parameters: give them values a port must read.
    vae.bn.running_mean.copy_(torch.randn(vae.bn.running_mean.shape, generator=gen) * 0.3)
    vae.bn.running_var.copy_(0.5 + torch.rand(vae.bn.running_var.shape, generator=gen) * 1.5)
    return vae.eval()


def make_vae() -> None:
    folder = FIXTURES / "vae"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    vae = build_vae(3101)
    vae.save_pretrained(folder, safe_serialization=True)
    gen = torch.Generator(device="cpu").manual_seed(4101)
    B, h2, w2, lc = 2, 3, 5, TINY_VAE["latent_channels"]
    tokens = torch.randn((B, h2 * w2, 4 * lc), generator=gen)
    image = torch.rand((B, 3, 4 * h2 * 2, 4 * w2 * 2), generator=gen) * 2 - 1  # 2x downscale, 2x2 patches
    pipe = Flux2KleinPipeline
    with torch.no_grad():
        ids = Flux2KleinPipeline._prepare_latent_ids(torch.zeros(B, 4 * lc, h2, w2))
        lat = Flux2KleinPipeline._unpack_latents_with_ids(tokens, ids, h2, w2)
        std = torch.sqrt(vae.bn.running_var.view(1, -1, 1, 1) + vae.config.batch_norm_eps)
        lat = lat * std + vae.bn.running_mean.view(1, -1, 1, 1)
        lat = pipe._unpatchify_latents(lat)
        decoded = vae.decode(lat, return_dict=False)[0]
        # The reference-image path: encode (posterior mode), patchify, normalise, pack.
        enc = vae.encode(image).latent_dist.mode()
        enc = pipe._patchify_latents(enc)
        enc = (enc - vae.bn.running_mean.view(1, -1, 1, 1)) / std
        encoded = pipe._pack_latents(enc)
    save_file({"tokens": tokens, "image": image.contiguous()}, folder / "inputs.safetensors")
    save_file({"decoded": decoded.contiguous(), "encoded_tokens": encoded.contiguous()},
              folder / "expected.safetensors")
    meta = {"case": "vae", "config": {k: list(v) if isinstance(v, tuple) else v for k, v in TINY_VAE.items()},
            "tokens": [B, h2 * w2, 4 * lc], "decoded": list(decoded.shape), "image": list(image.shape),
            "encoded_tokens": list(encoded.shape),
            "versions": {"torch": torch.__version__, "diffusers": diffusers.__version__},
            "generator": "tools/make_flux2_fixtures.py --case vae"}
    (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"flux2/vae: decoded {tuple(decoded.shape)} encoded {tuple(encoded.shape)}")


def make_pipeline(name: str) -> None:
    case = PIPELINES[name]
    folder = FIXTURES / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    # Every pipeline case shares one tiny model set in flux2/pipeline_models/ (written each time,
    # byte-identical, from fixed seeds).
    models = FIXTURES / "pipeline_models"
    torch.manual_seed(3201)
    transformer = Flux2Transformer2DModel(**PIPE_TRANSFORMER)
    reinit_parameters(transformer, 3201)
    transformer.eval()
    vae = build_vae(3202)
    scheduler = FlowMatchEulerDiscreteScheduler(**KLEIN_SCHEDULER)
    transformer.save_pretrained(models / "transformer", safe_serialization=True)
    vae.save_pretrained(models / "vae", safe_serialization=True)
    scheduler.save_pretrained(models / "scheduler")
    pipe = Flux2KleinPipeline(scheduler=scheduler, vae=vae, text_encoder=None, tokenizer=None,
                              transformer=transformer, is_distilled=case["is_distilled"])
    gen = torch.Generator(device="cpu").manual_seed(case["seed"])
    B, (H, W), J = case["batch"], case["size"], PIPE_TRANSFORMER["joint_attention_dim"]
    prompt_embeds = torch.randn((B, case["text_len"], J), generator=gen)
    tensors = {"prompt_embeds": prompt_embeds}
    kwargs = {}
    if case["negative_len"]:
        tensors["negative_prompt_embeds"] = torch.randn((B, case["negative_len"], J), generator=gen)
        kwargs["negative_prompt_embeds"] = tensors["negative_prompt_embeds"]
    latents = torch.randn((B, PIPE_TRANSFORMER["in_channels"], H // 4, W // 4), generator=gen)
    with torch.no_grad():
        image = pipe(prompt=None, prompt_embeds=prompt_embeds, height=H, width=W,
                     num_inference_steps=case["steps"], guidance_scale=case["guidance"], latents=latents,
                     output_type="pt", return_dict=False, **kwargs)[0]
    save_file({k: v.contiguous() for k, v in tensors.items()}, folder / "cond.safetensors")
    save_file({"latents": latents.contiguous()}, folder / "latents.safetensors")
    save_file({"image": image.contiguous()}, folder / "expected.safetensors")
    meta = {"case": name, "description": case["description"], "is_distilled": case["is_distilled"],
            "guidance_scale": case["guidance"], "steps": case["steps"], "height": H, "width": W,
            "transformer": {k: list(v) if isinstance(v, tuple) else v for k, v in PIPE_TRANSFORMER.items()},
            "vae": {k: list(v) if isinstance(v, tuple) else v for k, v in TINY_VAE.items()},
            "scheduler": KLEIN_SCHEDULER, "image": "output_type='pt': decoder output / 2 + 0.5, clamped to [0, 1]",
            "versions": {"torch": torch.__version__, "diffusers": diffusers.__version__},
            "generator": "tools/make_flux2_fixtures.py --case " + name}
    (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"flux2/{name}: image {tuple(image.shape)} mean {image.mean().item():.4f}")


def to_bfl_names(sd: dict) -> dict:
    """diffusers Flux2Transformer2DModel state dict -> Black Forest Labs' checkpoint names (the inverse
    of diffusers' convert_flux2_transformer_checkpoint_to_diffusers): fused q/k/v per stream,
    `.scale` for the q/k norms, final adaLN stored (shift, scale)."""
    out = {}
    rename = {"x_embedder": "img_in", "context_embedder": "txt_in",
              "time_guidance_embed.timestep_embedder.linear_1": "time_in.in_layer",
              "time_guidance_embed.timestep_embedder.linear_2": "time_in.out_layer",
              "time_guidance_embed.guidance_embedder.linear_1": "guidance_in.in_layer",
              "time_guidance_embed.guidance_embedder.linear_2": "guidance_in.out_layer",
              "double_stream_modulation_img.linear": "double_stream_modulation_img.lin",
              "double_stream_modulation_txt.linear": "double_stream_modulation_txt.lin",
              "single_stream_modulation.linear": "single_stream_modulation.lin", "proj_out": "final_layer.linear"}
    double = {"attn.norm_q.weight": "img_attn.norm.query_norm.scale",
              "attn.norm_k.weight": "img_attn.norm.key_norm.scale", "attn.to_out.0.weight": "img_attn.proj.weight",
              "ff.linear_in.weight": "img_mlp.0.weight", "ff.linear_out.weight": "img_mlp.2.weight",
              "attn.norm_added_q.weight": "txt_attn.norm.query_norm.scale",
              "attn.norm_added_k.weight": "txt_attn.norm.key_norm.scale",
              "attn.to_add_out.weight": "txt_attn.proj.weight", "ff_context.linear_in.weight": "txt_mlp.0.weight",
              "ff_context.linear_out.weight": "txt_mlp.2.weight"}
    single = {"attn.to_qkv_mlp_proj.weight": "linear1.weight", "attn.to_out.weight": "linear2.weight",
              "attn.norm_q.weight": "norm.query_norm.scale", "attn.norm_k.weight": "norm.key_norm.scale"}
    for key, value in sd.items():
        if key.startswith("transformer_blocks."):
            _, n, rest = key.split(".", 2)
            if rest.startswith(("attn.to_q.", "attn.to_k.", "attn.to_v.", "attn.add_q_proj.", "attn.add_k_proj.",
                                "attn.add_v_proj.")):
                continue  # fused below
            out[f"double_blocks.{n}.{double[rest]}"] = value
        elif key.startswith("single_transformer_blocks."):
            _, n, rest = key.split(".", 2)
            out[f"single_blocks.{n}.{single[rest]}"] = value
        elif key == "norm_out.linear.weight":
            scale, shift = value.chunk(2, dim=0)
            out["final_layer.adaLN_modulation.1.weight"] = torch.cat([shift, scale], dim=0)
        else:
            stem, param = key.rsplit(".", 1)
            out[f"{rename[stem]}.{param}"] = value
    n_double = len({k.split(".")[1] for k in sd if k.startswith("transformer_blocks.")})
    for n in range(n_double):
        p = f"transformer_blocks.{n}.attn."
        out[f"double_blocks.{n}.img_attn.qkv.weight"] = torch.cat(
            [sd[p + "to_q.weight"], sd[p + "to_k.weight"], sd[p + "to_v.weight"]], dim=0)
        out[f"double_blocks.{n}.txt_attn.qkv.weight"] = torch.cat(
            [sd[p + "add_q_proj.weight"], sd[p + "add_k_proj.weight"], sd[p + "add_v_proj.weight"]], dim=0)
    return out


def make_bfl() -> None:
    """double_single's model under BFL names, one file without config.json (as BFL ships them),
    checked against diffusers' own converter before it is written."""
    from diffusers.loaders.single_file_utils import convert_flux2_transformer_checkpoint_to_diffusers
    from safetensors.torch import load_file
    src = FIXTURES / "double_single"
    sd = load_file(src / "diffusion_pytorch_model.safetensors")
    bfl = to_bfl_names(sd)
    back = convert_flux2_transformer_checkpoint_to_diffusers({k: v.clone() for k, v in bfl.items()})
    assert set(back) == set(sd), sorted(set(back) ^ set(sd))
    for k in sd:
        assert torch.equal(back[k], sd[k]), k
    folder = FIXTURES / "bfl"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    save_file({k: v.contiguous() for k, v in bfl.items()}, folder / "flux2-tiny-bfl.safetensors")
    print(f"flux2/bfl: {len(bfl)} tensors, round trip through diffusers' converter exact")


BONSAI_MATMULS = ("attn.to_q", "attn.to_k", "attn.to_v", "attn.add_q_proj", "attn.add_k_proj", "attn.add_v_proj",
                  "attn.to_add_out", "attn.to_out.0", "ff.linear_in", "ff.linear_out", "ff_context.linear_in",
                  "ff_context.linear_out", "attn.to_qkv_mlp_proj", "attn.to_out")


def gemlite_ternary(w: torch.Tensor, group: int = 128) -> dict:
    """A weight [out, in] as Bonsai Image stores it (GemLite int2, see tools/convert_bonsai.py):
    absmean ternary codes per group of `group` inputs, packed 4 to a byte over the input rows."""
    out, k = w.shape
    g = w.float().reshape(out, k // group, group)
    scale = g.abs().mean(dim=2).to(torch.float16)  # [out, groups]
    codes = (g / scale.float().clamp_min(1e-12).unsqueeze(2)).round().clamp(-1, 1).to(torch.int64) + 1
    codes = codes.reshape(out, k).T.contiguous()  # [in, out]
    wq = torch.zeros((k // 4, out), dtype=torch.int64)
    for s in range(4):
        wq |= codes[s::4] << (2 * s)
    return {"W_q": wq.to(torch.uint8), "scales": scale.T.contiguous(), "zeros": (-scale.T).contiguous(),
            "orig_shape": torch.tensor([out, k])}


def make_bonsai() -> None:
    """flux2/q128's model in Bonsai Image's GemLite int2 layout (synthetic: absmean ternary of its
    weights), converted by tools/convert_bonsai.py; `sample` is diffusers' forward of the dense
    model holding exactly the decoded ternary weights, on q128's inputs."""
    import tempfile
    from safetensors.torch import load_file
    import convert_bonsai

    src = FIXTURES / "q128"
    cfg = json.loads((src / "config.json").read_text())
    model = Flux2Transformer2DModel.from_pretrained(src, torch_dtype=torch.float32).eval()
    sd = {k: v.clone() for k, v in model.state_dict().items()}
    gem, dense = {}, {}
    for name, w in sd.items():
        module = name[: -len(".weight")]
        if name.endswith(".weight") and "transformer_blocks." in name and module.split(".", 2)[2] in BONSAI_MATMULS:
            q = gemlite_ternary(w)
            gem.update({f"{module}.{k}": v for k, v in q.items()})
            k = w.shape[1]
            codes = torch.stack([(q["W_q"].to(torch.int64) >> (2 * s)) & 3 for s in range(4)], 1).reshape(k, -1)
            dense[name] = ((codes - 1).float() * q["scales"].float().repeat_interleave(128, 0)).T.contiguous()
        else:
            gem[name] = w.to(torch.bfloat16)
            dense[name] = w.to(torch.bfloat16).float()
    folder = FIXTURES / "bonsai"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        torch.save(gem, Path(tmp) / "state_dict.pt")
        (Path(tmp) / "quantization_config.json").write_text(json.dumps({"group_size": 128, "bits": 2}))
        report = convert_bonsai.convert(Path(tmp), folder / "klein-tiny-bonsai.gguf", cfg)
    model.load_state_dict(dense)
    inputs = load_file(src / "inputs.safetensors")
    with torch.no_grad():
        sample = model(**inputs, return_dict=False)[0]
    save_file({"sample": sample.contiguous()}, folder / "expected.safetensors")
    meta = {"case": "bonsai", "source": "flux2/q128", "convert": report,
            "expected": "diffusers forward of the dense decoded ternary weights on flux2/q128's inputs",
            "generator": "tools/make_flux2_fixtures.py --case bonsai"}
    (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"flux2/bonsai: {report}")


# Qwen3's chat template as far as klein uses it (one user message, generation prompt, thinking off);
# no whitespace control, so every newline is kept.
QWEN3_CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}"
    "{% endif %}")


def make_prompt_pipelines() -> None:
    """The whole Flux2KleinPipeline from a text prompt: tests/fixtures/tokenizer's tokenizer (as a
    Qwen2-style fast tokenizer with Qwen3's chat template, thinking off), a random 28-layer
    Qwen3ForCausalLM (vocab = the tokenizer's), a klein transformer with joint dim 3 x 32 and
    pipeline_models' VAE; distilled and base (CFG 4 against the empty prompt) images."""
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from make_qwen3_fixtures import reinit as reinit_qwen3

    tok_json = ROOT / "tests" / "fixtures" / "tokenizer" / "tokenizer.json"
    tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(tok_json), pad_token="<|endoftext|>", padding_side="right")
    tokenizer.chat_template = QWEN3_CHAT_TEMPLATE
    models = FIXTURES / "prompt_models"
    if models.exists():
        shutil.rmtree(models)
    torch.manual_seed(3401)
    qcfg = Qwen3Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=48, num_hidden_layers=28,
                       num_attention_heads=4, num_key_value_heads=2, head_dim=8, rms_norm_eps=1e-6,
                       rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                       max_position_embeddings=1024, tie_word_embeddings=True,
                       pad_token_id=tokenizer.pad_token_id)
    encoder = Qwen3ForCausalLM(qcfg).eval()
    reinit_qwen3(encoder, 3401)
    encoder.save_pretrained(models / "text_encoder", safe_serialization=True)
    (models / "text_encoder" / "generation_config.json").unlink(missing_ok=True)
    (models / "tokenizer_config.json").write_text(json.dumps(
        {"pad_token": "<|endoftext|>", "padding_side": "right", "chat_template": QWEN3_CHAT_TEMPLATE}, indent=2))
    torch.manual_seed(3402)
    transformer = Flux2Transformer2DModel(**{**PIPE_TRANSFORMER, "joint_attention_dim": 3 * 32})
    reinit_parameters(transformer, 3402)
    transformer.eval()
    transformer.save_pretrained(models / "transformer", safe_serialization=True)
    vae = build_vae(3202)  # pipeline_models' VAE
    scheduler = FlowMatchEulerDiscreteScheduler(**KLEIN_SCHEDULER)
    for name, distilled, guidance, steps in (("prompt_distilled", True, 1.0, 3), ("prompt_base", False, 4.0, 2)):
        folder = FIXTURES / name
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        pipe = Flux2KleinPipeline(scheduler=scheduler, vae=vae, text_encoder=encoder, tokenizer=tokenizer,
                                  transformer=transformer, is_distilled=distilled)
        gen = torch.Generator().manual_seed(5101)
        latents = torch.randn((1, PIPE_TRANSFORMER["in_channels"], 8, 8), generator=gen)
        prompt = "a red fox in snow"
        with torch.no_grad():
            embeds, _ = pipe.encode_prompt(prompt=prompt, device="cpu")
            image = pipe(prompt=prompt, height=32, width=32, num_inference_steps=steps, guidance_scale=guidance,
                         latents=latents, output_type="pt", return_dict=False)[0]
        save_file({"latents": latents}, folder / "latents.safetensors")
        save_file({"image": image.contiguous(), "prompt_embeds": embeds.contiguous()}, folder / "expected.safetensors")
        meta = {"case": name, "prompt": prompt, "is_distilled": distilled, "guidance_scale": guidance, "steps": steps,
                "height": 32, "width": 32, "max_sequence_length": 512, "models": "flux2/prompt_models",
                "tokenizer": "tokenizer/tokenizer.json + prompt_models/tokenizer_config.json",
                "versions": {"torch": torch.__version__, "diffusers": diffusers.__version__},
                "generator": "tools/make_flux2_fixtures.py --case prompt"}
        (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
        print(f"flux2/{name}: image {tuple(image.shape)}, prompt_embeds {tuple(embeds.shape)}")


def make_mu_table() -> None:
    """diffusers' compute_empirical_mu at klein-relevant sizes (both branches) -> empirical_mu.json."""
    from diffusers.pipelines.flux2.pipeline_flux2_klein import compute_empirical_mu
    rows = [{"image_seq_len": n, "num_steps": s, "mu": compute_empirical_mu(n, s)}
            for n in (64, 256, 1024, 4096, 4300, 4301, 16384) for s in (1, 4, 28, 50)]
    (FIXTURES / "empirical_mu.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(f"flux2/empirical_mu.json: {len(rows)} values")


ALL = sorted(CASES) + ["vae"] + sorted(PIPELINES) + ["mu", "bfl", "bonsai", "prompt"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", nargs="*", choices=ALL, help="cases to write (default: all)")
    args = ap.parse_args()
    setup_torch()
    for name in args.case or ALL:
        if name in CASES:
            make_case(name)
        elif name == "vae":
            make_vae()
        elif name == "mu":
            make_mu_table()
        elif name == "bfl":
            make_bfl()
        elif name == "bonsai":
            make_bonsai()
        elif name == "prompt":
            make_prompt_pipelines()
        else:
            make_pipeline(name)


if __name__ == "__main__":
    main()
