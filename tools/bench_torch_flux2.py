#!/usr/bin/env python3
"""FLUX.2 [klein]-4B-shaped models with random weights, for the CPU speed bench (never downloaded).

  python tools/bench_torch_flux2.py make DIR          # transformer (bf16), VAE, inputs, cond
  python tools/bench_torch_flux2.py time DIR --threads 2 --runs 3

`make` writes DIR/transformer (Flux2Transformer2DModel with klein-4B's config: 5 double + 20 single
blocks, 24 heads x 128, joint dim 7680, 3.9 B parameters, tools/sd3_random.py's init, bf16, ~7.8 GB),
DIR/vae (AutoencoderKLFlux2 with the FLUX.2 config, f32), DIR/model_index.json (distilled),
DIR/inputs.safetensors (one 512x512 denoising step: 1024 image tokens x 128 channels, 512 text
tokens x 7680, sigma 0.75, ids as the klein pipeline builds them) and DIR/cond.safetensors
(prompt_embeds [1, 512, 7680]).
`time` runs diffusers' bf16 forward on those inputs (one warm-up, then --runs timed) and prints one
JSON line: median seconds and the process's peak RSS.
"""

import argparse
import json
import resource
import statistics
import time
from pathlib import Path

import torch

KLEIN_4B = dict(patch_size=1, in_channels=128, num_layers=5, num_single_layers=20, attention_head_dim=128,
                num_attention_heads=24, joint_attention_dim=7680, timestep_guidance_channels=256, mlp_ratio=3.0,
                axes_dims_rope=(32, 32, 32, 32), rope_theta=2000, eps=1e-6, guidance_embeds=False)
IMAGE_TOKENS_HW = (32, 32)  # 512 px / 8 (VAE) / 2 (2x2 patches)
TEXT_LEN = 512


def make(out: Path) -> None:
    from diffusers import AutoencoderKLFlux2, Flux2Transformer2DModel
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from sd3_random import reinit_parameters

    torch.manual_seed(7001)
    torch.set_default_dtype(torch.bfloat16)
    model = Flux2Transformer2DModel(**KLEIN_4B)
    torch.set_default_dtype(torch.float32)
    # diffusers' default init lets activations grow through 25 blocks; tools/sd3_random.py's keeps them O(1).
    reinit_parameters(model, 7001)
    n = sum(p.numel() for p in model.parameters())
    model.save_pretrained(out / "transformer", safe_serialization=True, max_shard_size="20GB")
    del model
    vae = AutoencoderKLFlux2()
    vae.save_pretrained(out / "vae", safe_serialization=True)
    (out / "model_index.json").write_text(json.dumps({"_class_name": "Flux2KleinPipeline", "is_distilled": True}))
    gen = torch.Generator().manual_seed(7002)
    h, w = IMAGE_TOKENS_HW
    img_ids = torch.cartesian_prod(torch.tensor([0]), torch.arange(h), torch.arange(w), torch.tensor([0])).float()
    txt_ids = torch.cartesian_prod(torch.tensor([0]), torch.tensor([0]), torch.tensor([0]),
                                   torch.arange(TEXT_LEN)).float()
    text = torch.randn((1, TEXT_LEN, KLEIN_4B["joint_attention_dim"]), generator=gen)
    save_file({"hidden_states": torch.randn((1, h * w, KLEIN_4B["in_channels"]), generator=gen),
               "encoder_hidden_states": text, "timestep": torch.tensor([0.75]), "img_ids": img_ids,
               "txt_ids": txt_ids}, out / "inputs.safetensors")
    save_file({"prompt_embeds": text}, out / "cond.safetensors")
    print(json.dumps({"made": str(out), "transformer_parameters": n}))


def time_forward(d: Path, threads: int, runs: int) -> None:
    from diffusers import Flux2Transformer2DModel
    from safetensors.torch import load_file

    torch.set_num_threads(threads)
    t0 = time.perf_counter()
    model = Flux2Transformer2DModel.from_pretrained(d / "transformer", torch_dtype=torch.bfloat16).eval()
    load_s = time.perf_counter() - t0
    inputs = load_file(d / "inputs.safetensors")
    kw = dict(hidden_states=inputs["hidden_states"].bfloat16(), encoder_hidden_states=inputs["encoder_hidden_states"].bfloat16(),
              timestep=inputs["timestep"].bfloat16(), img_ids=inputs["img_ids"], txt_ids=inputs["txt_ids"],
              return_dict=False)
    times = []
    with torch.no_grad():
        for i in range(runs + 1):
            t = time.perf_counter()
            model(**kw)
            if i:  # the first run warms up
                times.append(time.perf_counter() - t)
    print(json.dumps({"bench": "torch_flux2_bf16", "torch": torch.__version__, "threads": threads, "runs": runs,
                      "median_s": statistics.median(times), "min_s": min(times), "load_s": load_s,
                      "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["make", "time"])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    if args.what == "make":
        make(args.dir)
    else:
        time_forward(args.dir, args.threads, args.runs)


if __name__ == "__main__":
    main()
