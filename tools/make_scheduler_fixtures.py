#!/usr/bin/env python3
"""Fixture for the FlowMatchEulerDiscreteScheduler test (tests/vae/flow_match_euler_test.cpp).

    /work/venv-tools/bin/python tools/make_scheduler_fixtures.py [--out tests/fixtures/scheduler]

Writes flow_match_euler.json: for several scheduler configs and step counts, the sigmas (N + 1)
and timesteps (N) that diffusers' set_timesteps produces (f32 values written exactly), a few Euler
steps on random data, and calculate_shift values from StableDiffusion3Pipeline.
"""
import argparse
import json
import os

import diffusers
import torch
from diffusers import FlowMatchEulerDiscreteScheduler
from diffusers.pipelines.stable_diffusion_3.pipeline_stable_diffusion_3 import calculate_shift


def f32_list(t):
    return [float(v) for v in t.to(torch.float32).flatten().tolist()]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "scheduler"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    cases = []

    def add(config, steps, mu=None, sigmas=None):
        s = FlowMatchEulerDiscreteScheduler(**config)
        kw = {}
        if mu is not None:
            kw["mu"] = mu
        if sigmas is not None:
            s.set_timesteps(sigmas=sigmas, **kw)
        else:
            s.set_timesteps(steps, **kw)
        cases.append({"config": config, "steps": len(s.timesteps), "mu": mu, "custom_sigmas": sigmas,
                      "sigmas": f32_list(s.sigmas), "timesteps": f32_list(s.timesteps)})

    for shift in (1.0, 3.0):
        for n in (1, 4, 20, 28):
            add({"shift": shift}, n)
    dyn = {"use_dynamic_shifting": True, "base_shift": 0.5, "max_shift": 1.15}
    for seq in (1024, 4096):
        for n in (1, 4, 28):
            add(dyn, n, mu=calculate_shift(seq, 256, 4096, 0.5, 1.15))
    lin = dict(dyn, time_shift_type="linear")
    for n in (4, 20):
        add(lin, n, mu=1.5)
    add({"shift": 3.0, "shift_terminal": 0.02}, 20)
    add({"shift": 3.0, "invert_sigmas": True}, 4)
    add({"shift": 3.0}, None, sigmas=[1.0, 0.8, 0.55, 0.3, 0.1])
    add(dyn, None, mu=0.9, sigmas=[1.0, 0.7, 0.4, 0.05])

    # Euler steps: SD3's scheduler (shift 3), 4 steps, on a small random sample.
    g = torch.Generator().manual_seed(5)
    s = FlowMatchEulerDiscreteScheduler(shift=3.0)
    s.set_timesteps(4)
    x = torch.randn(2, 3, 5, generator=g)
    steps = {"config": {"shift": 3.0}, "steps": 4, "x0": f32_list(x), "v": [], "x": []}
    for t in s.timesteps:
        v = torch.randn(x.shape, generator=g)
        x = s.step(v, t, x).prev_sample
        steps["v"].append(f32_list(v))
        steps["x"].append(f32_list(x))

    shifts = [{"seq": n, "mu": calculate_shift(n, 256, 4096, 0.5, 1.15)} for n in (256, 1024, 1234, 4096, 16384)]
    out = {"diffusers": diffusers.__version__, "cases": cases, "euler": steps, "calculate_shift": shifts}
    path = os.path.join(args.out, "flow_match_euler.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print(f"{path}: {len(cases)} schedules")


if __name__ == "__main__":
    main()
