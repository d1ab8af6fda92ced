#!/usr/bin/env python3
"""Time diffusers' SD3 transformer forward on CPU for a mid-size random model.

  python tools/bench_torch_sd3.py --threads 2 [--runs 5] [--save DIR]

Model: 12 layers, 12 heads x 64 (D 768), patch 1, 16 latent channels, latent 32x32
(1024 image tokens), 154 text tokens of width 4096, pooled 2048, batch 2. Weights are
random (tools/sd3_random.py). --save DIR writes the model with save_pretrained (f32
safetensors, about 1 GB: keep it out of git) plus inputs.safetensors, so a C++ run can
load the same model and inputs. Prints one JSON line with the median forward time.
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import diffusers  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

from sd3_random import build_random_sd3, random_inputs, run_model  # noqa: E402

MID = dict(
    sample_size=32,
    patch_size=1,
    in_channels=16,
    num_layers=12,
    attention_head_dim=64,
    num_attention_heads=12,
    joint_attention_dim=4096,
    caption_projection_dim=768,
    pooled_projection_dim=2048,
    out_channels=16,
    pos_embed_max_size=96,
)
BATCH, LATENT_HW, TEXT_LEN, TIMESTEPS = 2, (32, 32), 154, [500.0, 250.0]
INIT_SEED, INPUT_SEED = 4001, 4002


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--runs", type=int, default=5, help="timed runs after one warm-up")
    ap.add_argument("--save", type=Path, help="directory for the model and inputs.safetensors")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    model = build_random_sd3(MID, INIT_SEED)
    inputs = random_inputs(MID, BATCH, LATENT_HW, TEXT_LEN, TIMESTEPS, INPUT_SEED)
    if args.save:
        args.save.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(args.save, safe_serialization=True)
        save_file({k: v.contiguous() for k, v in inputs.items()}, args.save / "inputs.safetensors")

    run_model(model, inputs)  # warm-up
    times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        out = run_model(model, inputs)
        times.append(time.perf_counter() - t0)
    if args.save:
        save_file({"sample": out.contiguous()}, args.save / "expected.safetensors")

    print(json.dumps({
        "bench": "torch_sd3_forward",
        "threads": args.threads,
        "runs": args.runs,
        "median_s": statistics.median(times),
        "min_s": min(times),
        "times_s": times,
        "params": sum(p.numel() for p in model.parameters()),
        "config": MID,
        "batch": BATCH, "latent_hw": list(LATENT_HW), "text_len": TEXT_LEN,
        "torch": torch.__version__, "diffusers": diffusers.__version__,
        "saved_to": str(args.save) if args.save else None,
    }))


if __name__ == "__main__":
    main()
