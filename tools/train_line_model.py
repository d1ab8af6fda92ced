"""Train Quill's handwriting line model (tools/line_model.py) and its style encoder, on CPU or GPU.

Objective (must match Quill's sampler, src/pipeline/line_sampler.cpp):
    x0    = target line in [-1, 1], paper = +1         (gray / 127.5 - 1)
    glyph = 1 - 2 * gray / 255, ink = +1                (glyphs_to_model_input)
    x_t   = (1 - sigma) x0 + sigma eps, eps ~ N(0, 1)
    model(x_t, glyph, style, t = 1000 sigma) ~ v = eps - x0
Sigma is drawn logit-normal (SD3), with a share (--sigma-uniform) drawn uniformly so that sigma
near 1, where sampling starts, is trained too. The style embedding is the pooled output of a small
Dinov2Model (transformers) over the style reference, trained jointly; with probability
--style-dropout it is replaced by zeros, the unconditional input Quill's CFG uses (with
--glyph-dropout a share of those rows also get a blank glyph line, all -1, for guidance on the
text as well: sampler.json "guide_glyph"). EMA weights
are exported. Resumable: --resume continues from <run>/checkpoint.pt.

    python tools/line_data.py --quill build/cpu/quill --out /tmp/linedata --samples 40000
    python tools/train_line_model.py --data /tmp/linedata --run /tmp/linerun --preset cpu-small --cpu-minutes 160
    python tools/train_line_model.py --run /tmp/linerun --export models/quill-line
"""
from __future__ import annotations

import argparse
import copy
import glob
import json
import math
import os
import signal
import sys
import time
from dataclasses import asdict

import numpy as np
import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from line_model import LineModel, LineModelConfig  # noqa: E402

PRESETS = {
    # Trains on the 2-core CPU within a working session; < 1 s per line at inference there.
    "cpu-small": dict(model=dict(line_height=32, max_line_width=1024, patch_size=8, num_layers=4,
                                 num_attention_heads=4, attention_head_dim=32, style_dim=96,
                                 glyph_concat=True),
                      style=dict(hidden_size=96, num_hidden_layers=2, num_attention_heads=4, image_size=64,
                                 patch_size=8),
                      batch=16, lr=6e-4),
    # For the H200: same data, wider and deeper.
    "gpu-base": dict(model=dict(line_height=32, max_line_width=1024, patch_size=8, num_layers=8,
                                num_attention_heads=6, attention_head_dim=48, style_dim=192,
                                glyph_concat=True),
                     style=dict(hidden_size=192, num_hidden_layers=4, num_attention_heads=6, image_size=64,
                                patch_size=8),
                     batch=128, lr=4e-4),
}
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def make_style_encoder(cfg: dict):
    from transformers import Dinov2Config, Dinov2Model
    c = Dinov2Config(hidden_size=cfg["hidden_size"], num_hidden_layers=cfg["num_hidden_layers"],
                     num_attention_heads=cfg["num_attention_heads"], image_size=cfg["image_size"],
                     patch_size=cfg["patch_size"], mlp_ratio=4, layer_norm_eps=1e-6, hidden_act="gelu",
                     use_swiglu_ffn=False, drop_path_rate=0.0)
    return Dinov2Model(c)


class LineData:
    """All shards in memory; batches are drawn from width-sorted groups and padded to one canvas."""

    def __init__(self, folder: str):
        self.glyph, self.target, self.style, self.width, self.font = [], [], [], [], []
        self.height, self.style_layout = None, None
        for path in sorted(glob.glob(os.path.join(folder, "**", "shard_*.npz"), recursive=True)):
            d = np.load(path)
            h = int(d["line_height"]) if "line_height" in d.files else 32  # older shards: 32 px
            if self.height not in (None, h):
                raise SystemExit(f"{path}: line height {h}, other shards {self.height}")
            self.height = h
            layout = str(d["style_layout"]) if "style_layout" in d.files else "squash"  # older shards: squash
            if self.style_layout not in (None, layout):
                raise SystemExit(f"{path}: style layout {layout}, other shards {self.style_layout}")
            self.style_layout = layout
            w = d["widths"]
            off = np.concatenate([[0], np.cumsum(w.astype(np.int64) * h)])
            glyph, target = d["glyph"], d["target"]  # each d[...] access decompresses the array again
            for i in range(len(w)):
                self.glyph.append(glyph[off[i]:off[i + 1]].reshape(h, -1))
                self.target.append(target[off[i]:off[i + 1]].reshape(h, -1))
            self.style.append(d["style"])
            self.font += [str(f) for f in d["font"]]
            self.width += list(w)
        if not self.width:
            raise SystemExit(f"no shard_*.npz in {folder}")
        self.style = np.concatenate(self.style)
        self.style_size = int(self.style.shape[1])
        self.width = np.array(self.width)
        self.order = np.argsort(self.width, kind="stable")

    def __len__(self) -> int:
        return len(self.width)

    def batch(self, rng: np.random.Generator, size: int, fonts: dict | None = None):
        """x0, glyph, style (and, given {font name: class}, each line's font class)."""
        n = len(self.order)
        start = int(rng.integers(0, max(1, n - 4 * size)))
        idx = self.order[start + rng.choice(min(4 * size, n - start), size=min(size, n), replace=False)]
        W = int(max(self.width[idx]))
        W = (W + 15) // 16 * 16
        g = np.full((len(idx), 1, self.height, W), 255, np.uint8)
        t = np.empty((len(idx), 1, self.height, W), np.uint8)
        for k, i in enumerate(idx):
            w = self.glyph[i].shape[1]
            g[k, 0, :, :w] = self.glyph[i]
            t[k, 0, :, :] = np.median(self.target[i])  # paper tone
            t[k, 0, :, :w] = self.target[i]
        glyph = 1.0 - 2.0 * torch.from_numpy(g).float() / 255.0
        x0 = torch.from_numpy(t).float() / 127.5 - 1.0
        s = torch.from_numpy(self.style[idx]).float() / 255.0
        mean = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1)
        std = torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
        style = (s[:, None].expand(-1, 3, -1, -1) - mean) / std
        if fonts is not None:
            return x0, glyph, style, torch.tensor([fonts.get(self.font[i], -100) for i in idx])
        return x0, glyph, style


class Trainer(torch.nn.Module):
    def __init__(self, preset: dict):
        super().__init__()
        self.cfg = LineModelConfig(**preset["model"])
        self.model = LineModel(self.cfg)
        self.style_encoder = make_style_encoder(preset["style"])
        assert self.style_encoder.config.hidden_size == self.cfg.style_dim

    def embed_style(self, style_pixels, drop):
        emb = self.style_encoder(pixel_values=style_pixels).pooler_output
        return emb * (~drop).float()[:, None]


def grow_depth(net: Trainer, state: dict, old_layers: int) -> list[int]:
    """Load a shallower model's weights (`state`, old_layers blocks) into the deeper `net` so that it
    computes the same function: blocks 0 .. old-2 keep their places, the old last block (the one
    without a context output) becomes the new last, and the blocks between start as identities
    (adaLN-Zero: their modulation linears are zero, so every gate is 0 and both streams pass
    unchanged; gradients still reach those linears). Returns the new blocks' indices."""
    new_layers = net.cfg.num_layers
    if not 0 < old_layers < new_layers:
        sys.exit(f"--layers {new_layers}: can only grow a model of fewer layers (it has {old_layers})")
    old_last = f"model.transformer_blocks.{old_layers - 1}."
    new_last = f"model.transformer_blocks.{new_layers - 1}."
    moved = {(new_last + k[len(old_last):] if k.startswith(old_last) else k): v for k, v in state.items()}
    missing, unexpected = net.load_state_dict(moved, strict=False)
    fresh = list(range(old_layers - 1, new_layers - 1))
    prefixes = tuple(f"model.transformer_blocks.{i}." for i in fresh)
    stray = [k for k in missing if not k.startswith(prefixes)] + list(unexpected)
    if stray:
        sys.exit(f"--layers: the warm-start weights do not fit the deeper model: {stray[:5]}")
    with torch.no_grad():
        for i in fresh:
            blk = net.model.transformer_blocks[i]
            for lin in (blk.norm1.linear, blk.norm1_context.linear):
                lin.weight.zero_()
                lin.bias.zero_()
    return fresh


def checkpoint_path(run: str) -> str:
    return os.path.join(run, "checkpoint.pt")


def prior_totals(preset: dict) -> dict:
    """Samples, wall and CPU seconds of the runs this one was warm-started from (the --init chain)."""
    tot = {"seen": 0, "elapsed": 0.0, "cpu_seconds": 0.0, "runs": 0}
    init = preset.get("init")
    while init:
        tot["seen"] += init.get("seen", 0)
        tot["elapsed"] += init.get("elapsed", 0.0)
        # Runs before CPU time was recorded: their wall time on 2 busy cores, a lower bound of 1x.
        tot["cpu_seconds"] += init.get("cpu_seconds", init.get("elapsed", 0.0))
        tot["runs"] += 1
        init = init.get("prior")
    return tot


def blank_glyph_rows(glyph: torch.Tensor, drop: torch.Tensor, share: float, keep: torch.Tensor | None = None):
    """The glyph lines with a share of the style-dropped rows (`drop`) blanked (all -1: paper, no
    text): (zero style, blank glyph line) is then the unconditional input of guidance on style and
    text at once (sampler.json "guide_glyph"). Rows in `keep` (the glyph bridge's, whose start is
    made of the glyph line) keep theirs."""
    blank = drop & (torch.rand(drop.shape, device=drop.device) < share)
    if keep is not None:
        blank &= ~keep
    return torch.where(blank.view(-1, 1, 1, 1), torch.full_like(glyph, -1.0), glyph)


def glyph_bridge(x0: torch.Tensor, glyph: torch.Tensor, eps: torch.Tensor, sigma: torch.Tensor, start: float):
    """(x_sigma, velocity) on the straight path from the sampler's glyph-line start at sigma = start,
    start eps + (1 - start) g with g = -glyph (the glyph line as an image, paper +1), to the hand x0:
    for sigma <= start, x_sigma = (1 - sigma) x0 + sigma eps + sigma (1 - start) / start (g - x0), and
    the velocity is constant, eps - x0 + (1 - start) / start (g - x0). Trained on, the model learns
    that the glyph-line part of the start is not the hand, so letters move to the hand's shapes."""
    sv = sigma.view(-1, 1, 1, 1)
    gap = (1 - start) / start * (-glyph - x0)
    return (1 - sv) * x0 + sv * eps + sv * gap, eps - x0 + gap


def sigma_weight(sigma: torch.Tensor, k: float) -> torch.Tensor:
    """Loss weight over sigma: (1 + k sigma) / (1 + k / 2), mean 1 over uniform sigma; k = 0: none.
    k > 0 puts more of the loss where sigma is high (the first sampling steps, where the letter shapes
    are decided); k < 0 (> -1) the other way."""
    return (1 + k * sigma) / (1 + k / 2)


@torch.no_grad()
def validation_loss(net, data, bsz: int, device, autocast: bool) -> dict:
    """Unweighted v-loss of `net` on fixed batches (seed 12345) at fixed sigmas 0.1 ... 1.0, style kept:
    the same numbers for every run on the same data, whatever its sigma sampling or weighting."""
    rng = np.random.default_rng(12345)
    gen = torch.Generator().manual_seed(12345)
    out = {}
    batches = [data.batch(rng, bsz) for _ in range(4)]
    for sig in (0.1, 0.3, 0.5, 0.7, 0.9, 1.0):
        tot = 0.0
        for x0, glyph, style in batches:
            x0, glyph, style = x0.to(device), glyph.to(device), style.to(device)
            b = x0.shape[0]
            sigma = torch.full((b,), sig, device=device)
            eps = torch.randn(x0.shape, generator=gen).to(device)
            xt = (1 - sig) * x0 + sig * eps
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
                v = net.model(xt, glyph, net.embed_style(style, torch.zeros(b, dtype=torch.bool, device=device)),
                              sigma * 1000.0)
            tot += torch.nn.functional.mse_loss(v.float(), eps - x0).item()
        out[f"{sig:.1f}"] = round(tot / len(batches), 5)
    out["mean"] = round(float(np.mean(list(out.values()))), 5)
    return out


def train(a) -> None:
    torch.manual_seed(a.seed)
    device = torch.device(a.device)
    os.makedirs(a.run, exist_ok=True)
    ck = checkpoint_path(a.run)
    if a.resume and os.path.exists(ck):
        state = torch.load(ck, map_location="cpu", weights_only=False)
        preset = state["preset"]
    else:
        state, preset = None, copy.deepcopy(PRESETS[a.preset])
        if a.batch:
            preset["batch"] = a.batch
        if a.line_height:
            preset["model"]["line_height"] = a.line_height
        if a.patch:
            preset["model"]["patch_size"] = a.patch
        if a.layers:
            preset["model"]["num_layers"] = a.layers
    data = LineData(a.data)
    init = None
    if a.init and not state:
        # Warm start: another run's EMA weights (same preset) start both the weights and the EMA;
        # the optimiser, schedule and counters start afresh. Its training is recorded as prior.
        init = load_init(a.init)
        if a.init_partial:
            # Another shape (line height, patch): keep this run's preset, take every tensor whose shape fits.
            preset["style"] = copy.deepcopy(init["preset"]["style"])
            for k in ("num_layers", "num_attention_heads", "attention_head_dim", "style_dim"):
                preset["model"][k] = init["preset"]["model"][k]
        else:
            preset = copy.deepcopy(init["preset"])
        if a.batch:
            preset["batch"] = a.batch
        if a.layers:
            if a.init_partial:
                sys.exit("--layers grows a warm start by whole blocks; it does not combine with --init-partial")
            preset["model"]["num_layers"] = a.layers
        preset["init"] = {"from": os.path.abspath(a.init), "seen": init["seen"], "elapsed": init["elapsed"],
                          "step": init["step"], "prior": init["preset"].get("init")}
        if "cpu_seconds" in init:
            preset["init"]["cpu_seconds"] = init["cpu_seconds"]
    if not state:
        # The style encoder's input is what the data shows it: its square's size and layout.
        if init and (init["preset"]["style"].get("layout", "squash"), init["preset"]["style"]["image_size"]) != (
                data.style_layout, data.style_size) and not a.init_partial:
            print("warm start into another style input: partial (style encoder tensors that fit)", flush=True)
            a.init_partial = True
        preset["style"]["image_size"] = data.style_size
        preset["style"]["layout"] = data.style_layout
        preset["style"]["row_height"] = data.height
        preset["train"] = {"autocast": a.autocast, "sigma_weight": a.sigma_weight, "sigma_uniform": a.sigma_uniform,
                           "bridge": a.bridge, "bridge_start": a.bridge_start,
                           "style_dropout": a.style_dropout, "glyph_dropout": a.glyph_dropout,
                           "threads": torch.get_num_threads(),
                           "style_aux": a.style_aux, "fonts": sorted(set(data.font)) if a.style_aux else []}
    net = Trainer(preset).to(device)
    if init and a.init_partial:
        own = net.state_dict()
        fits = {k: v for k, v in init["ema"].items() if k in own and own[k].shape == v.shape}
        net.load_state_dict(fits, strict=False)
        preset["init"]["partial"] = sorted(set(own) - set(fits))
        print(f"partial warm start: {len(fits)} of {len(own)} tensors, new: {preset['init']['partial']}", flush=True)
    elif init and net.cfg.num_layers != init["preset"]["model"]["num_layers"]:
        fresh = grow_depth(net, init["ema"], init["preset"]["model"]["num_layers"])
        preset["init"]["grown"] = {"from_layers": init["preset"]["model"]["num_layers"], "identity_blocks": fresh}
        print(f"grown from {init['preset']['model']['num_layers']} to {net.cfg.num_layers} layers: "
              f"blocks {fresh} start as identities", flush=True)
    elif init:
        net.load_state_dict(init["ema"])
    ema = copy.deepcopy(net).eval().requires_grad_(False)
    # --style-aux: a linear font classifier on the style embedding, trained with it (not exported), so
    # the embedding is pushed to tell the hands apart rather than only by what helps denoising.
    aux_weight = preset["train"].get("style_aux", 0.0)
    font_class = {f: i for i, f in enumerate(preset["train"].get("fonts", []))}
    aux = torch.nn.Linear(net.cfg.style_dim, max(1, len(font_class))).to(device)
    params = list(net.parameters()) + (list(aux.parameters()) if aux_weight else [])
    opt = torch.optim.AdamW(params, lr=preset["lr"], betas=(0.9, 0.99), weight_decay=0.01)
    step, seen, elapsed_before, cpu_before = 0, 0, 0.0, 0.0
    rng = np.random.default_rng(a.seed)
    if state:
        net.load_state_dict(state["net"])
        ema.load_state_dict(state["ema"])
        opt.load_state_dict(state["opt"])
        if state.get("aux"):
            aux.load_state_dict(state["aux"])
        step, seen, elapsed_before = state["step"], state["seen"], state["elapsed"]
        cpu_before = state.get("cpu_seconds", 0.0)
        rng = np.random.default_rng(a.seed + step)
    if (preset["style"].get("layout", "squash"), preset["style"]["image_size"]) != (data.style_layout, data.style_size):
        sys.exit(f"data style input {data.style_layout} {data.style_size}px != the run's "
                 f"{preset['style'].get('layout', 'squash')} {preset['style']['image_size']}px")
    if data.height != net.cfg.line_height:
        sys.exit(f"data line height {data.height} != model line height {net.cfg.line_height} (--line-height)")
    nparams = sum(p.numel() for p in net.model.parameters())
    nstyle = sum(p.numel() for p in net.style_encoder.parameters())
    print(f"data: {len(data)} lines; line model {nparams / 1e6:.2f} M params, style encoder {nstyle / 1e6:.2f} M; "
          f"preset {json.dumps(preset)}", flush=True)
    bsz = preset["batch"]
    autocast = a.autocast == "bf16"
    stop = []  # SIGTERM / SIGINT: finish the step, save, exit
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    # Budgets: --minutes is wall time, --cpu-minutes this process's CPU time (all threads; a process
    # stopped with SIGSTOP, or waiting for the cores, uses none), both counted over all resumed runs.
    t0, c0 = time.time(), time.process_time()
    last_save = t0
    loss_avg = aux_avg = None

    def cpu_now() -> float:
        return cpu_before + time.process_time() - c0

    while True:
        elapsed = elapsed_before + time.time() - t0
        cpu = cpu_now()
        if a.minutes and elapsed >= a.minutes * 60:
            break
        if a.cpu_minutes and cpu >= a.cpu_minutes * 60:
            break
        if (a.steps and step >= a.steps) or stop:
            break
        # Linear warm-up then cosine to 10% over the planned budget.
        if a.cpu_minutes:
            frac = min(1.0, cpu / (a.cpu_minutes * 60))
        elif a.minutes:
            frac = min(1.0, elapsed / (a.minutes * 60))
        else:
            frac = min(1.0, step / max(1, a.steps))
        lr = preset["lr"] * min(1.0, (step + 1) / 200) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
        for gp in opt.param_groups:
            gp["lr"] = lr
        x0, glyph, style, font = (u.to(device) for u in data.batch(rng, bsz, font_class))
        b = x0.shape[0]
        # Logit-normal concentrates on mid noise; a share drawn uniformly keeps sigma near 1 (where
        # sampling starts, t = 1000) trained too -- without it the first steps return noise.
        sigma = torch.sigmoid(torch.randn(b, device=device))
        uniform = torch.rand(b, device=device) < a.sigma_uniform
        sigma = torch.where(uniform, torch.rand(b, device=device), sigma)
        eps = torch.randn_like(x0)
        xt = (1 - sigma.view(b, 1, 1, 1)) * x0 + sigma.view(b, 1, 1, 1) * eps
        target = eps - x0
        if a.bridge:
            on = torch.rand(b, device=device) < a.bridge
            sigma = torch.where(on, sigma * a.bridge_start, sigma)
            xb, tb = glyph_bridge(x0, glyph, eps, sigma, a.bridge_start)
            xt = torch.where(on.view(b, 1, 1, 1), xb, xt)  # rows off the bridge keep their sigma and x_t
            target = torch.where(on.view(b, 1, 1, 1), tb, target)
        drop = torch.rand(b, device=device) < a.style_dropout
        if a.glyph_dropout:
            glyph = blank_glyph_rows(glyph, drop, a.glyph_dropout / a.style_dropout, on if a.bridge else None)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda" or autocast):
            emb = net.style_encoder(pixel_values=style).pooler_output
            v = net.model(xt, glyph, emb * (~drop).to(emb.dtype)[:, None], sigma * 1000.0)
        per = ((v.float() - target) ** 2).mean(dim=(1, 2, 3))
        loss = (per * sigma_weight(sigma, a.sigma_weight)).mean() if a.sigma_weight else per.mean()
        if aux_weight:
            aux_loss = torch.nn.functional.cross_entropy(aux(emb.float()), font, ignore_index=-100)
            loss = loss + aux_weight * aux_loss
            aux_avg = aux_loss.item() if step == 0 or aux_avg is None else 0.98 * aux_avg + 0.02 * aux_loss.item()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        decay = min(a.ema, (1 + step) / (10 + step))
        with torch.no_grad():
            for pe, pn in zip(ema.parameters(), net.parameters()):
                pe.lerp_(pn, 1 - decay)
        step += 1
        seen += b
        loss_avg = loss.item() if loss_avg is None else 0.98 * loss_avg + 0.02 * loss.item()
        if step % a.log_every == 0:
            el = elapsed_before + time.time() - t0
            cpu = cpu_now()
            print(f"step {step} seen {seen} loss {loss_avg:.4f} lr {lr:.2e} {seen / max(el, 1e-9):.1f} samples/s "
                  f"{seen / max(cpu, 1e-9):.1f} samples/cpu-s {el / 60:.1f} min cpu {cpu / 60:.1f} min"
                  + (f" style-aux CE {aux_avg:.3f}" if aux_weight else ""), flush=True)
        if time.time() - last_save > a.save_minutes * 60:
            save_checkpoint(ck, net, ema, opt, preset, step, seen, elapsed_before + time.time() - t0, loss_avg,
                            cpu_now(), aux=aux.state_dict() if aux_weight else None)
            last_save = time.time()
    el, cpu = elapsed_before + time.time() - t0, cpu_now()
    val = validation_loss(ema, data, bsz, device, autocast) if a.val else None
    save_checkpoint(ck, net, ema, opt, preset, step, seen, el, loss_avg, cpu, val,
                    aux=aux.state_dict() if aux_weight else None)
    summary = {"step": step, "seen": seen, "loss": loss_avg, "elapsed": round(el, 1), "cpu_seconds": round(cpu, 1),
               "samples_per_cpu_second": round(seen / max(cpu, 1e-9), 2), "val_loss_ema": val}
    with open(os.path.join(a.run, "summary.json"), "w") as f:
        f.write(json.dumps(summary | {"preset": preset}, indent=2) + "\n")
    print(f"done: {json.dumps(summary)}", flush=True)


def load_init(path: str) -> dict:
    """A checkpoint.pt, or an exported model folder (model.safetensors, style_encoder/, training.json)
    such as models/quill-line, as {ema, preset, seen, elapsed, step}."""
    if not os.path.isdir(path):
        return torch.load(path, map_location="cpu", weights_only=False)
    from safetensors.torch import load_file
    with open(os.path.join(path, "training.json")) as f:
        info = json.load(f)
    with open(os.path.join(path, "config.json")) as f:
        config = json.load(f)
        if any(config.get(k) != v for k, v in asdict(LineModelConfig(**info["preset"]["model"])).items()):
            sys.exit(f"{path}: config.json does not match training.json's preset")
    net = Trainer(info["preset"])
    net.model.load_state_dict({k: v.float() for k, v in load_file(os.path.join(path, "model.safetensors")).items()})
    from transformers import Dinov2Model  # from_pretrained maps the saved names onto this version's
    enc = Dinov2Model.from_pretrained(os.path.join(path, "style_encoder"), torch_dtype=torch.float32)
    net.style_encoder.load_state_dict(enc.state_dict())
    out = {"ema": net.state_dict(), "preset": info["preset"], "seen": info["seen"], "elapsed": info["elapsed"],
           "step": info["step"]}
    if "cpu_seconds" in info:
        out["cpu_seconds"] = info["cpu_seconds"]
    return out


def save_checkpoint(path, net, ema, opt, preset, step, seen, elapsed, loss, cpu_seconds, val=None, aux=None):
    tmp = path + ".tmp"
    torch.save({"net": net.state_dict(), "ema": ema.state_dict(), "opt": opt.state_dict(), "preset": preset,
                "step": step, "seen": seen, "elapsed": elapsed, "loss": loss, "cpu_seconds": cpu_seconds,
                "val_loss_ema": val, "aux": aux}, tmp)
    os.replace(tmp, path)


def export(a) -> None:
    state = torch.load(checkpoint_path(a.run), map_location="cpu", weights_only=False)
    net = Trainer(state["preset"])
    net.load_state_dict(state["ema"])
    out = a.export
    os.makedirs(os.path.join(out, "style_encoder"), exist_ok=True)
    dtype = torch.bfloat16 if a.bf16 else torch.float32
    sd = {k: v.to(dtype).contiguous() for k, v in net.model.state_dict().items()}
    save_file(sd, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(out, "config.json"), "w") as f:
        f.write(json.dumps(asdict(net.cfg), indent=2) + "\n")
    net.style_encoder.to(dtype).save_pretrained(os.path.join(out, "style_encoder"), safe_serialization=True)
    style = state["preset"]["style"]
    if style.get("layout", "squash") != "squash":  # read by src/pipeline/style_encoder_dinov2.cpp
        with open(os.path.join(out, "style_encoder", "style_layout.json"), "w") as f:
            f.write(json.dumps({"layout": style["layout"], "row_height": style["row_height"]}) + "\n")
    info = {k: state[k] for k in ("step", "seen", "elapsed", "loss")}
    info["cpu_seconds"] = state.get("cpu_seconds", state["elapsed"])
    if state.get("val_loss_ema"):
        info["val_loss_ema"] = state["val_loss_ema"]
    prior = prior_totals(state["preset"])
    # All runs of this model's --init chain together (the "total samples and CPU time").
    info["total"] = {"runs": prior["runs"] + 1, "seen": prior["seen"] + state["seen"],
                     "elapsed": round(prior["elapsed"] + state["elapsed"], 1),
                     "cpu_seconds": round(prior["cpu_seconds"] + info["cpu_seconds"], 1)}
    info["preset"] = state["preset"]
    with open(os.path.join(out, "training.json"), "w") as f:
        f.write(json.dumps(info, indent=2) + "\n")
    print(f"exported {out}: step {state['step']}, seen {state['seen']}, loss {state['loss']:.4f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", help="folder of shard_*.npz from tools/line_data.py (subfolders too)")
    ap.add_argument("--run", required=True, help="folder for checkpoint.pt")
    ap.add_argument("--preset", default="cpu-small", choices=sorted(PRESETS))
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--minutes", type=float, default=0, help="stop after this much wall time (all resumed runs)")
    ap.add_argument("--cpu-minutes", type=float, default=0,
                    help="stop after this much CPU time of the trainer process, all threads (all resumed runs); "
                         "the learning-rate schedule then runs over it. Unlike wall time it does not count while "
                         "the process is stopped (SIGSTOP) or waits for cores, so runs on a shared machine compare")
    ap.add_argument("--line-height", type=int, default=0, help="override the preset's line height (new runs)")
    ap.add_argument("--patch", type=int, default=0, help="override the preset's patch size (new runs)")
    ap.add_argument("--layers", type=int, default=0,
                    help="transformer blocks (new runs); with --init, more than the warm start's grows it by "
                         "identity blocks before its last, so training starts from the same function")
    ap.add_argument("--autocast", choices=["none", "bf16"], default="none",
                    help="bf16 autocast of the forward on the CPU too (always on CUDA)")
    ap.add_argument("--sigma-weight", type=float, default=0.0,
                    help="k of the loss weight (1 + k sigma) / (1 + k/2) over sigma; 0: unweighted")
    ap.add_argument("--no-val", dest="val", action="store_false",
                    help="skip the fixed-sigma validation loss of the EMA weights at the end")
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--init", help="warm start from this checkpoint.pt's EMA weights, or from an exported model folder "
                    "(a new run otherwise)")
    ap.add_argument("--init-partial", action="store_true",
                    help="with --init: keep this run's line height / patch and load only the tensors whose shapes fit "
                         "(the transformer blocks and style encoder; embedders and output projection start new)")
    ap.add_argument("--style-dropout", type=float, default=0.15)
    ap.add_argument("--glyph-dropout", type=float, default=0.0,
                    help="share of samples whose glyph line is blanked as well as their style dropped (at most "
                         "--style-dropout): trains the unconditional input of guidance on content (sampler.json "
                         "\"guide_glyph\": true)")
    ap.add_argument("--style-aux", type=float, default=0.0,
                    help="weight of an auxiliary font-classification loss on the style embedding (0: off)")
    ap.add_argument("--sigma-uniform", type=float, default=0.3, help="share of sigmas drawn uniformly in [0, 1]")
    ap.add_argument("--bridge", type=float, default=0.0,
                    help="share of samples on the glyph bridge: the straight path from the sampler's glyph-line "
                         "start at --bridge-start to the hand (0: plain flow matching)")
    ap.add_argument("--bridge-start", type=float, default=0.8, help="the start sigma the glyph bridge is trained for")
    ap.add_argument("--ema", type=float, default=0.999)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--log-every", type=int, default=20)
    ap.add_argument("--save-minutes", type=float, default=5)
    ap.add_argument("--export", help="write the EMA weights as a Quill model folder here and exit")
    ap.add_argument("--bf16", action="store_true", help="export in bf16 (default f32)")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    if a.export:
        export(a)
    else:
        if not a.data or not (a.minutes or a.steps or a.cpu_minutes):
            ap.error("training needs --data and --minutes, --cpu-minutes or --steps")
        if not 0 <= a.glyph_dropout <= a.style_dropout:
            ap.error(f"--glyph-dropout must be in [0, --style-dropout = {a.style_dropout}], got {a.glyph_dropout}")
        train(a)


if __name__ == "__main__":
    main()
