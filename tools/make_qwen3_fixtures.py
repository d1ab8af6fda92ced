#!/usr/bin/env python3
"""Qwen3 text-encoder fixtures under tests/fixtures/qwen3/<case>/ (CPU, f32, deterministic).

  python tools/make_qwen3_fixtures.py

A random tiny `Qwen3ForCausalLM` (what Flux2KleinPipeline's text_encoder is), every parameter
redrawn, saved with save_pretrained; inputs.safetensors: `input_ids` [B, S] (int32, right-padded
with the pad id) and `attention_mask` [B, S]; expected.safetensors: `prompt_embeds` [B, S, 3 D] =
hidden_states[9], [18], [27] stacked as Flux2KleinPipeline._get_qwen3_prompt_embeds does, and
`hidden_states_1` (after the first layer) for finer failures.
"""

import json
import shutil
from pathlib import Path

import torch
import transformers
from safetensors.torch import save_file
from transformers import Qwen3Config, Qwen3ForCausalLM

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "qwen3"

CASES = {
    "tiny28": dict(
        description="28 layers (klein uses 9/18/27), hidden 32, 4 heads x 8 with 2 KV heads (GQA), "
                    "intermediate 48, vocab 1000, rope_theta 1e6; batch 2 of 24 tokens, the second with 9 pads",
        config=dict(vocab_size=1000, hidden_size=32, intermediate_size=48, num_hidden_layers=28,
                    num_attention_heads=4, num_key_value_heads=2, head_dim=8, rms_norm_eps=1e-6,
                    rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, max_position_embeddings=512,
                    tie_word_embeddings=True, pad_token_id=999),
        batch=2, seq_len=24, valid=[24, 15], layers=[9, 18, 27], seed=6001,
    ),
}


@torch.no_grad()
def reinit(model: torch.nn.Module, seed: int) -> None:
    """Every parameter redrawn: Linear N(0, 1/fan_in), embeddings N(0, 1), norms 1 + N(0, 0.1^2)."""
    gen = torch.Generator().manual_seed(seed)
    for name, p in model.named_parameters():
        if name.endswith("norm.weight") or "layernorm" in name:
            p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
        elif "embed_tokens" in name:
            p.copy_(torch.randn(p.shape, generator=gen))
        else:
            p.copy_(torch.randn(p.shape, generator=gen) / p.shape[-1] ** 0.5)


def make(name: str) -> None:
    case = CASES[name]
    folder = FIXTURES / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    torch.manual_seed(case["seed"])
    model = Qwen3ForCausalLM(Qwen3Config(**case["config"])).eval()
    reinit(model, case["seed"])
    model.save_pretrained(folder, safe_serialization=True)
    gen = torch.Generator().manual_seed(case["seed"] + 1)
    B, S = case["batch"], case["seq_len"]
    ids = torch.randint(0, case["config"]["vocab_size"] - 1, (B, S), generator=gen)
    mask = torch.zeros((B, S), dtype=torch.int64)
    for b, n in enumerate(case["valid"]):
        mask[b, :n] = 1
        ids[b, n:] = case["config"]["pad_token_id"]
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask, output_hidden_states=True, use_cache=False)
    hs = out.hidden_states
    stacked = torch.stack([hs[k] for k in case["layers"]], dim=1)
    embeds = stacked.permute(0, 2, 1, 3).reshape(B, S, -1)
    save_file({"input_ids": ids.to(torch.int32), "attention_mask": mask.to(torch.int32)}, folder / "inputs.safetensors")
    save_file({"prompt_embeds": embeds.contiguous(), "hidden_states_1": hs[1].contiguous()},
              folder / "expected.safetensors")
    meta = {"case": name, "description": case["description"], "layers": case["layers"], "valid": case["valid"],
            "num_hidden_states": len(hs),
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
            "generator": "tools/make_qwen3_fixtures.py"}
    (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"qwen3/{name}: prompt_embeds {tuple(embeds.shape)} std {embeds.std().item():.4f}")


def main() -> None:
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    for name in CASES:
        make(name)


if __name__ == "__main__":
    main()
