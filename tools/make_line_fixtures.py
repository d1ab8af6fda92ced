#!/usr/bin/env python3
"""Reference fixtures for Quill's line model (tools/line_model.py), CPU, f32, deterministic.

  python tools/make_line_fixtures.py      # writes tests/fixtures/line/<case>/

line/model/: config.json + model.safetensors (random weights, every parameter redrawn);
line/<case>/: inputs.safetensors (hidden_states, glyphs, style, timestep) and expected.safetensors (sample).
Two widths (different token counts, so different plan buckets) at batch 2.
"""
import json
import sys
from dataclasses import asdict
from pathlib import Path

import torch
from safetensors.torch import save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from line_model import LineModel, LineModelConfig  # noqa: E402
from sd3_random import reinit_parameters  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "line"

CONFIG = LineModelConfig(line_height=16, max_line_width=256, patch_size=4, num_layers=3,
                         num_attention_heads=2, attention_head_dim=16, style_dim=24)
CASES = {"w48": 48, "w80": 80}
# glyph_concat: the glyph line also enters x_embedder as an extra channel (the trained model's mode).
CONCAT_CONFIG = LineModelConfig(line_height=16, max_line_width=256, patch_size=4, num_layers=2,
                                num_attention_heads=2, attention_head_dim=16, style_dim=24, glyph_concat=True)
CONCAT_CASES = {"concat_w64": 64}


@torch.no_grad()
def make(config: LineModelConfig, model_name: str, cases: dict, seed: int) -> None:
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(0)
    CONFIG = config
    model = LineModel(CONFIG).eval()
    reinit_parameters(model, seed=seed)
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    md = OUT / model_name
    md.mkdir(parents=True, exist_ok=True)
    (md / "config.json").write_text(json.dumps(asdict(CONFIG), indent=2) + "\n")
    save_file(state, str(md / "model.safetensors"))
    for name, width in cases.items():
        d = OUT / name
        d.mkdir(parents=True, exist_ok=True)
        g = torch.Generator().manual_seed(4000 + width)
        h = CONFIG.latent_height
        x = torch.randn(2, CONFIG.in_channels, h, width, generator=g)
        glyphs = (torch.rand(2, 1, h, width, generator=g) > 0.7).float() * 2 - 1
        style = torch.randn(2, CONFIG.style_dim, generator=g)
        t = torch.tensor([700.0, 120.0])
        sample = model(x, glyphs, style, t)
        # The RoPE path must matter: with all angles zero the output differs.
        import line_model
        real = line_model.rope_tables
        line_model.rope_tables = lambda *a: tuple(torch.zeros_like(u) if i else torch.ones_like(u) for i, u in enumerate(real(*a)))
        no_rope = model(x, glyphs, style, t)
        line_model.rope_tables = real
        assert (no_rope - sample).norm() / sample.norm() > 1e-2, "RoPE has no effect"
        save_file({"hidden_states": x, "glyphs": glyphs, "style": style, "timestep": t}, str(d / "inputs.safetensors"))
        save_file({"sample": sample.contiguous()}, str(d / "expected.safetensors"))
        print(f"{name}: sample {tuple(sample.shape)} std {sample.std():.3f}")


def main() -> None:
    which = sys.argv[1:] or ["plain", "concat"]
    if "plain" in which:
        make(CONFIG, "model", CASES, 3001)
    if "concat" in which:
        make(CONCAT_CONFIG, "model_concat", CONCAT_CASES, 3002)


if __name__ == "__main__":
    main()
