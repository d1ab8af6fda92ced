#!/usr/bin/env python3
"""Reload every fixture from disk and reproduce its expected values with diffusers.

Shows the saved files are self-consistent (config + weights + inputs -> expected) without
reusing anything from the generator's process. Exit status 1 on any mismatch.
"""

import json
import sys
from pathlib import Path

import torch
from diffusers import FlowMatchEulerDiscreteScheduler, SD3Transformer2DModel
from safetensors.torch import load_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sd3_random import run_model  # noqa: E402

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
TOL = 1e-5


def check_sd3(folder: Path) -> bool:
    inputs = load_file(folder / "inputs.safetensors")
    expected = load_file(folder / "expected.safetensors")
    runs = {"sample": torch.float32}
    if "sample_bf16_torch" in expected:
        runs["sample_bf16_torch"] = torch.bfloat16
    ok = True
    for key, dtype in runs.items():
        model = SD3Transformer2DModel.from_pretrained(folder, torch_dtype=dtype).eval()
        got = run_model(model, inputs, dtype).float()
        diff = (got - expected[key]).abs().max().item()
        good = got.shape == expected[key].shape and diff <= TOL
        ok &= good
        print(f"{'ok  ' if good else 'FAIL'} sd3/{folder.name} {key} {tuple(got.shape)} max|diff| {diff:.3g}")
    return ok


def check_scheduler(path: Path) -> bool:
    doc = json.loads(path.read_text())
    shape = doc["step_shape"]
    sample0 = torch.tensor(doc["sample"], dtype=torch.float32).reshape(shape)
    v = torch.tensor(doc["model_output"], dtype=torch.float32).reshape(shape)
    ok = True
    for case in doc["cases"]:
        sched = FlowMatchEulerDiscreteScheduler(**case["config"])
        kwargs = {"mu": case["mu"]} if case["mu"] is not None else {}
        sched.set_timesteps(num_inference_steps=case["num_inference_steps"], device="cpu", **kwargs)
        good = sched.sigmas.tolist() == case["sigmas"] and sched.timesteps.tolist() == case["timesteps"]
        x = sample0.clone()
        for t, want in zip(sched.timesteps, case["step_outputs"]):
            x = sched.step(v, t, x, return_dict=False)[0]
            good &= x.reshape(-1).tolist() == want
        good &= len(case["step_outputs"]) == len(sched.timesteps)
        ok &= good
        print(f"{'ok  ' if good else 'FAIL'} scheduler/{case['name']} (bit-exact)")
    return ok


def main() -> int:
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    ok = True
    for folder in sorted((FIXTURES / "sd3").iterdir()):
        if folder.is_dir():
            ok &= check_sd3(folder)
    ok &= check_scheduler(FIXTURES / "scheduler" / "flow_match.json")
    print("all fixtures reproduce" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
