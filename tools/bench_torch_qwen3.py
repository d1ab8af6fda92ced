#!/usr/bin/env python3
"""Qwen3-4B-shaped text encoder with random weights, for the CPU speed bench (never downloaded).

  python tools/bench_torch_qwen3.py make DIR      # Qwen3ForCausalLM, 4B shapes, the 27 layers klein reads, bf16
  python tools/bench_torch_qwen3.py time DIR --threads 2 --runs 3

Qwen3-4B's shapes (hidden 2560, 32 heads x 128 with 8 KV heads, intermediate 9728, vocab 151936)
with the first 27 layers only: FLUX.2 [klein] reads hidden states 9, 18 and 27, so neither Quill
nor this timing runs layers past 27. `time` encodes one 512-token klein prompt (the chat template
of "a red fox in snow", right-padded) with output_hidden_states, in bf16, and prints JSON: the
median and the process's peak RSS. The prompt's ids come from tests/fixtures/tokenizer (any ids
below the vocabulary size time the same).
"""

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent


def make(out: Path) -> None:
    from transformers import Qwen3Config, Qwen3ForCausalLM
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from make_qwen3_fixtures import reinit
    cfg = Qwen3Config(vocab_size=151936, hidden_size=2560, intermediate_size=9728, num_hidden_layers=27,
                      num_attention_heads=32, num_key_value_heads=8, head_dim=128, rms_norm_eps=1e-6,
                      rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                      max_position_embeddings=40960, tie_word_embeddings=True)
    torch.manual_seed(8001)
    torch.set_default_dtype(torch.bfloat16)
    model = Qwen3ForCausalLM(cfg).eval()
    torch.set_default_dtype(torch.float32)
    reinit(model, 8001)
    model.save_pretrained(out, safe_serialization=True, max_shard_size="20GB")
    print(json.dumps({"made": str(out), "parameters": sum(p.numel() for p in model.parameters())}))


def prompt_ids():
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(ROOT / "tests" / "fixtures" / "tokenizer" / "tokenizer.json"))
    text = "<|im_start|>user\na red fox in snow<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    ids = tok.encode(text).ids
    pad = tok.token_to_id("<|endoftext|>")
    return torch.tensor([ids + [pad] * (512 - len(ids))]), torch.tensor([[1] * len(ids) + [0] * (512 - len(ids))])


def time_forward(d: Path, threads: int, runs: int) -> None:
    from transformers import Qwen3ForCausalLM
    torch.set_num_threads(threads)
    model = Qwen3ForCausalLM.from_pretrained(d, torch_dtype=torch.bfloat16).eval()
    ids, mask = prompt_ids()
    times = []
    with torch.no_grad():
        for i in range(runs + 1):
            t = time.perf_counter()
            out = model.model(input_ids=ids, attention_mask=mask, output_hidden_states=True, use_cache=False)
            torch.stack([out.hidden_states[k] for k in (9, 18, 27)], dim=1)
            if i:
                times.append(time.perf_counter() - t)
    print(json.dumps({"bench": "torch_qwen3_bf16", "torch": torch.__version__, "threads": threads, "runs": runs,
                      "median_s": statistics.median(times),
                      "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["make", "time"])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    make(a.dir) if a.what == "make" else time_forward(a.dir, a.threads, a.runs)


if __name__ == "__main__":
    main()
