#!/usr/bin/env python3
"""Write the diffusers reference fixtures under tests/fixtures/ (CPU, f32, deterministic).

  python tools/make_fixtures.py all                 # everything
  python tools/make_fixtures.py sd3                 # all SD3 transformer cases
  python tools/make_fixtures.py sd3 --case tiny bf16
  python tools/make_fixtures.py scheduler           # tests/fixtures/scheduler/flow_match.json

Then `python tools/check_fixtures.py` reloads everything from disk and re-runs it.
"""

import argparse
import json
import shutil
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import diffusers  # noqa: E402
import transformers  # noqa: E402
from diffusers import FlowMatchEulerDiscreteScheduler, SD3Transformer2DModel  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

from sd3_random import INIT_DESCRIPTION, build_random_sd3, random_inputs, run_model  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"

# diffusers' own SD3 transformer test config (tests/models/transformers/test_models_transformer_sd3.py).
TINY = dict(
    sample_size=32,
    patch_size=1,
    in_channels=4,
    num_layers=4,
    attention_head_dim=8,
    num_attention_heads=4,
    caption_projection_dim=32,
    joint_attention_dim=32,
    pooled_projection_dim=64,
    out_channels=4,
    pos_embed_max_size=96,
)

# The pos_embed buffer is max^2 x D floats (1.2 MB at 96 for D=32), so only `tiny`
# keeps 96; the other tiny-derived cases use 32 (still a real centre crop of the
# 8x8 latent, and it checks that pos_embed_max_size is read from config.json).
SD3_CASES = {
    "tiny": dict(
        description="diffusers' tiny SD3 test config, latent 8x8 cropped from a 96x96 pos_embed",
        config=TINY,
        batch=2, latent_hw=(8, 8), text_len=7, timesteps=[500.0, 250.0],
        init_seed=1001, input_seed=2001,
    ),
    "sd35": dict(
        description="tiny config + SD3.5 options: qk_norm rms_norm, dual attention in layer 0",
        config={**TINY, "pos_embed_max_size": 32, "qk_norm": "rms_norm", "dual_attention_layers": (0,)},
        batch=2, latent_hw=(8, 8), text_len=7, timesteps=[500.0, 250.0],
        init_seed=1002, input_seed=2002,
    ),
    "patch2_wide": dict(
        description="patch 2, non-square 16x40 latent (8x20 tokens), 13 text tokens, 2 layers, 2 heads x 16",
        config=dict(
            sample_size=32, patch_size=2, in_channels=16, num_layers=2,
            attention_head_dim=16, num_attention_heads=2, caption_projection_dim=32,
            joint_attention_dim=24, pooled_projection_dim=40, out_channels=16,
            pos_embed_max_size=32,
        ),
        batch=2, latent_hw=(16, 40), text_len=13, timesteps=[500.0, 250.0],
        init_seed=1003, input_seed=2003,
    ),
    "bf16": dict(
        description=("tiny config, weights (and pos_embed buffer) stored in bf16; `sample` = f32 forward "
                     "of the bf16-rounded weights with the f32 inputs, `sample_bf16_torch` = diffusers' "
                     "own bf16 forward (inputs cast to bf16, timestep f32), stored as f32"),
        config={**TINY, "pos_embed_max_size": 32},
        batch=2, latent_hw=(8, 8), text_len=7, timesteps=[500.0, 250.0],
        init_seed=1004, input_seed=2004, bf16=True,
    ),
    "q128": dict(
        description=("inner dim 128 (2 heads x 64), every transformer-block linear has K % 128 == 0 so all "
                     "of them can be ternary (tq2_0_g128) or q8_0; weights stored in bf16; quill quantize's "
                     "input in the quantized-forward tests"),
        config=dict(
            sample_size=32, patch_size=2, in_channels=4, num_layers=2,
            attention_head_dim=64, num_attention_heads=2, caption_projection_dim=128,
            joint_attention_dim=128, pooled_projection_dim=128, out_channels=4,
            pos_embed_max_size=16, qk_norm="rms_norm",
        ),
        batch=2, latent_hw=(8, 8), text_len=7, timesteps=[500.0, 250.0],
        init_seed=1005, input_seed=2005, bf16=True,
    ),
}


def setup_torch() -> None:
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)  # reduction order must not depend on the machine
    torch.set_default_dtype(torch.float32)


def versions() -> dict:
    return {"torch": torch.__version__, "diffusers": diffusers.__version__,
            "transformers": transformers.__version__}


def stats(t: torch.Tensor) -> dict:
    t = t.float()
    return {"mean": t.mean().item(), "std": t.std().item(), "max_abs": t.abs().max().item()}


def rel_change(ref: torch.Tensor, other: torch.Tensor) -> float:
    return ((other - ref).norm() / ref.norm()).item()


def sensitivity(model, inputs: dict, ref: torch.Tensor) -> dict:
    """Relative change of the output when one input is redrawn: shows no input path is dead.

    Inputs are redrawn rather than scaled because the LayerNorms would hide a scaling."""
    gen = torch.Generator(device="cpu").manual_seed(9999)
    out = {}
    for name in ("hidden_states", "encoder_hidden_states", "pooled_projections"):
        pert = dict(inputs)
        pert[name] = torch.randn(inputs[name].shape, generator=gen, dtype=torch.float32)
        out[name + " redrawn"] = rel_change(ref, run_model(model, pert))
    pert = dict(inputs)
    pert["timestep"] = inputs["timestep"] + 100.0
    out["timestep+100"] = rel_change(ref, run_model(model, pert))
    return out


def make_sd3_case(name: str) -> None:
    case = SD3_CASES[name]
    folder = FIXTURES / "sd3" / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)

    config = dict(case["config"])
    model = build_random_sd3(config, case["init_seed"])
    inputs = random_inputs(config, case["batch"], case["latent_hw"], case["text_len"],
                           case["timesteps"], case["input_seed"])
    expected = {}
    if case.get("bf16"):
        model = model.to(torch.bfloat16)
        model.save_pretrained(folder, safe_serialization=True)
        model_f32 = SD3Transformer2DModel.from_pretrained(folder, torch_dtype=torch.float32).eval()
        expected["sample"] = run_model(model_f32, inputs)
        expected["sample_bf16_torch"] = run_model(model, inputs, torch.bfloat16).float()
        ref_model = model_f32
    else:
        model.save_pretrained(folder, safe_serialization=True)
        expected["sample"] = run_model(model, inputs)
        ref_model = model

    save_file({k: v.contiguous() for k, v in inputs.items()}, folder / "inputs.safetensors")
    save_file({k: v.contiguous() for k, v in expected.items()}, folder / "expected.safetensors")

    meta = {
        "case": name,
        "description": case["description"],
        "model_class": "SD3Transformer2DModel",
        "config": {k: list(v) if isinstance(v, tuple) else v for k, v in config.items()},
        "weights_dtype": "bfloat16" if case.get("bf16") else "float32",
        "batch": case["batch"],
        "latent_hw": list(case["latent_hw"]),
        "text_len": case["text_len"],
        "timestep": case["timesteps"],
        "init_seed": case["init_seed"],
        "input_seed": case["input_seed"],
        "init": INIT_DESCRIPTION,
        "inputs": "hidden_states, encoder_hidden_states, pooled_projections ~ N(0,1) f32; timestep f32",
        "expected": {k: {"shape": list(v.shape), **stats(v)} for k, v in expected.items()},
        "sensitivity_rel_change": sensitivity(ref_model, inputs, expected["sample"]),
        "versions": versions(),
        "generator": "tools/make_fixtures.py sd3 --case " + name,
    }
    if case.get("bf16"):
        diff = expected["sample_bf16_torch"] - expected["sample"]
        meta["bf16_vs_f32"] = {"max_abs_diff": diff.abs().max().item(),
                               "rel_l2": rel_change(expected["sample"], expected["sample_bf16_torch"])}
    (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"sd3/{name}: sample {tuple(expected['sample'].shape)} std {meta['expected']['sample']['std']:.4f} "
          f"sensitivity {meta['sensitivity_rel_change']}")


# --- FlowMatchEulerDiscreteScheduler -------------------------------------------------

SCHED_CONFIGS = [
    ("shift1", dict(num_train_timesteps=1000, shift=1.0), None),
    ("shift3", dict(num_train_timesteps=1000, shift=3.0), None),  # SD3 / SD3.5 scheduler config
    ("dyn_mu0.5", dict(num_train_timesteps=1000, use_dynamic_shifting=True,
                       time_shift_type="exponential"), 0.5),
    ("dyn_mu1.15", dict(num_train_timesteps=1000, use_dynamic_shifting=True,
                        time_shift_type="exponential"), 1.15),
]
SCHED_STEPS = [1, 4, 20, 28]
STEP_SHAPE = (2, 4, 2, 2)
SCHED_SEED = 3001


def flat(t: torch.Tensor) -> list:
    # f32 -> Python float is exact; json writes the shortest repr that round-trips the double.
    return [float(x) for x in t.detach().to(torch.float32).reshape(-1).tolist()]


def make_scheduler() -> None:
    gen = torch.Generator(device="cpu").manual_seed(SCHED_SEED)
    sample0 = torch.randn(STEP_SHAPE, generator=gen, dtype=torch.float32)
    model_output = torch.randn(STEP_SHAPE, generator=gen, dtype=torch.float32)
    cases = []
    for cfg_name, cfg, mu in SCHED_CONFIGS:
        for n in SCHED_STEPS:
            sched = FlowMatchEulerDiscreteScheduler(**cfg)
            # StableDiffusion3Pipeline: retrieve_timesteps(scheduler, n, device, sigmas=None, [mu=mu])
            # -> scheduler.set_timesteps(num_inference_steps=n, device=device, mu=mu only if dynamic)
            kwargs = {"mu": mu} if mu is not None else {}
            sched.set_timesteps(num_inference_steps=n, device="cpu", **kwargs)
            x = sample0.clone()
            steps = []
            for t in sched.timesteps:
                x = sched.step(model_output, t, x, return_dict=False)[0]
                steps.append(flat(x))
            cases.append({
                "name": f"{cfg_name}_n{n}",
                "config": {k: v for k, v in sched.config.items() if not k.startswith("_")},
                "num_inference_steps": n,
                "mu": mu,
                "sigmas": flat(sched.sigmas),
                "timesteps": flat(sched.timesteps),
                "step_outputs": steps,
            })
    doc = {
        "description": (
            "FlowMatchEulerDiscreteScheduler: sigmas (N+1, trailing 0) and timesteps (N) after "
            "set_timesteps(num_inference_steps=N, mu=mu if use_dynamic_shifting) as "
            "StableDiffusion3Pipeline calls it (no custom sigmas). step_outputs[i] is the sample after "
            "step i of the chain x_{i+1} = scheduler.step(model_output, timesteps[i], x_i), starting from "
            "`sample` with the same `model_output` every step. Tensors are flat row-major f32."
        ),
        "step_shape": list(STEP_SHAPE),
        "seed": SCHED_SEED,
        "sample": flat(sample0),
        "model_output": flat(model_output),
        "cases": cases,
        "versions": versions(),
        "generator": "tools/make_fixtures.py scheduler",
    }
    out = FIXTURES / "scheduler" / "flow_match.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"scheduler: {len(cases)} cases -> {out.relative_to(ROOT)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    p_sd3 = sub.add_parser("sd3", help="SD3 transformer cases")
    p_sd3.add_argument("--case", nargs="+", choices=sorted(SD3_CASES), default=list(SD3_CASES))
    sub.add_parser("scheduler", help="flow-matching Euler scheduler")
    sub.add_parser("all", help="everything")
    args = ap.parse_args()

    setup_torch()
    if args.what in ("sd3", "all"):
        for name in (args.case if args.what == "sd3" else SD3_CASES):
            make_sd3_case(name)
    if args.what in ("scheduler", "all"):
        make_scheduler()


if __name__ == "__main__":
    main()
