#!/usr/bin/env python3
"""llama.cpp-style GGUF copies of Quill's text fixtures, written with gguf-py (PyPI `gguf`, the
package llama.cpp's convert_hf_to_gguf.py writes with), so the C++ tests read files laid out as
real Qwen3 text-encoder GGUFs are:

  tests/fixtures/tokenizer/tokenizer.gguf               vocab-only GGUF of tokenizer.json
  tests/fixtures/qwen3/tiny28/llamacpp-f32.gguf         the tiny28 encoder, llama.cpp names, f32
  tests/fixtures/qwen3/tiny28/llamacpp-q8_0.gguf        Q8_0 (gguf-py's quantizer) where the row
                                                        length is a multiple of 32, else f32
  tests/fixtures/flux2/prompt_models/text_encoder.gguf  the prompt pipeline's encoder (bf16) with
                                                        its tokenizer in tokenizer.ggml.* metadata

  python tools/make_gguf_text_fixtures.py

Run after make_tokenizer_fixtures.py, make_qwen3_fixtures.py and make_flux2_fixtures.py --case
prompt. As convert_hf_to_gguf.py does for Qwen3: tensor names from gguf-py's own name map
(MODEL_ARCH.QWEN3), 1-D norms kept f32, no `output` tensor when embeddings are tied, q/k rows
unpermuted (NeoX RoPE); the vocabulary from the transformers tokenizer (control tokens CONTROL,
other added tokens USER_DEFINED, "[PAD<id>]" fillers up to the model's vocab_size) and the merges
from gguf-py's SpecialVocab. Checks: transformers' own GGUF loader reads each file back and gives
the same token ids (on NFC-stable strings: its GGUF tokenizer has no NFC step) and the same
hidden states as the originals.
"""

import json
import unicodedata
from pathlib import Path

import gguf
import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerFast

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures"


def vocab_entries(tokenizer, vocab_size: int):
    """(tokens, token types) as convert_hf_to_gguf.py's get_vocab_base spells them."""
    reverse = {i: t for t, i in tokenizer.get_vocab().items()}
    added = tokenizer.get_added_vocab()
    decoder = tokenizer.added_tokens_decoder
    tokens, types = [], []
    for i in range(vocab_size):
        if i not in reverse:
            tokens.append(f"[PAD{i}]")
            types.append(gguf.TokenType.USER_DEFINED)
        elif reverse[i] in added:
            tokens.append(reverse[i])
            special = decoder[i].special or (reverse[i].startswith("<|") and reverse[i].endswith("|>"))
            types.append(gguf.TokenType.CONTROL if special else gguf.TokenType.USER_DEFINED)
        else:
            tokens.append(reverse[i])
            types.append(gguf.TokenType.NORMAL)
    return tokens, types


def add_tokenizer(w: gguf.GGUFWriter, tokenizer, tokenizer_dir: Path, vocab_size: int) -> None:
    tokens, types = vocab_entries(tokenizer, vocab_size)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    special = gguf.SpecialVocab(tokenizer_dir, load_merges=True)
    assert special.merges, "SpecialVocab found no merges"
    w.add_token_merges(special.merges)
    w.add_eos_token_id(tokenizer.convert_tokens_to_ids("<|im_end|>"))
    w.add_pad_token_id(tokenizer.pad_token_id)


def tokenizer_folder(tok_json: Path, tmp: Path) -> PreTrainedTokenizerFast:
    """The fixture tokenizer as a transformers folder (SpecialVocab reads merges from it)."""
    tok = PreTrainedTokenizerFast(tokenizer_file=str(tok_json), pad_token="<|endoftext|>", padding_side="right")
    tmp.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(tmp)
    return tok


def write_tokenizer_gguf(tmp: Path) -> None:
    tok = tokenizer_folder(FIX / "tokenizer" / "tokenizer.json", tmp / "tok")
    out = FIX / "tokenizer" / "tokenizer.gguf"
    w = gguf.GGUFWriter(out, "qwen3")
    w.add_name("quill tokenizer fixture (vocab only)")
    w.add_vocab_size(len(tok))
    add_tokenizer(w, tok, tmp / "tok", len(tok))
    finish(w)
    # transformers reads it back: same ids as `tokenizers` on every NFC-stable case.
    back = AutoTokenizer.from_pretrained(out.parent, gguf_file=out.name)
    cases = json.loads((FIX / "tokenizer" / "cases.json").read_text())["cases"]
    checked = 0
    for c in cases:
        if unicodedata.normalize("NFC", c["text"]) != c["text"]:
            continue
        got = back(c["text"], add_special_tokens=False)["input_ids"]
        assert got == c["ids"], f"transformers' GGUF tokenizer differs on {c['text']!r}: {got} vs {c['ids']}"
        checked += 1
    print(f"tokenizer.gguf: {len(tok)} tokens; transformers' GGUF loader agrees on {checked}/{len(cases)} cases")


def qwen3_writer(out: Path, model, name: str) -> gguf.GGUFWriter:
    c = model.config
    w = gguf.GGUFWriter(out, "qwen3")
    w.add_name(name)
    w.add_context_length(c.max_position_embeddings)
    w.add_embedding_length(c.hidden_size)
    w.add_feed_forward_length(c.intermediate_size)
    w.add_block_count(c.num_hidden_layers)
    w.add_head_count(c.num_attention_heads)
    w.add_head_count_kv(c.num_key_value_heads)
    w.add_key_length(c.head_dim)
    w.add_value_length(c.head_dim)
    w.add_rope_freq_base(c.rope_parameters["rope_theta"])
    w.add_layer_norm_rms_eps(c.rms_norm_eps)
    w.add_vocab_size(c.vocab_size)
    return w


def add_qwen3_tensors(w: gguf.GGUFWriter, model, kind: str) -> None:
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN3, model.config.num_hidden_layers)
    for hf, p in model.state_dict().items():
        if hf == "lm_head.weight" and model.config.tie_word_embeddings:
            continue
        name = names.get_name(hf, try_suffixes=(".weight", ".bias"))
        assert name, f"gguf-py has no name for {hf}"
        data = p.detach().float().numpy()
        if data.ndim == 1 or kind == "f32":
            w.add_tensor(name, data.astype(np.float32))
        elif kind == "bf16":
            q = gguf.quants.quantize(data, gguf.GGMLQuantizationType.BF16)
            w.add_tensor(name, q, raw_dtype=gguf.GGMLQuantizationType.BF16)
        elif kind == "q8_0":
            if name == "token_embd.weight":
                w.add_tensor(name, data.astype(np.float16))
            elif data.shape[-1] % 32 == 0:
                q = gguf.quants.quantize(data, gguf.GGMLQuantizationType.Q8_0)
                w.add_tensor(name, q, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
            else:
                w.add_tensor(name, data.astype(np.float32))


def finish(w: gguf.GGUFWriter) -> None:
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


@torch.no_grad()
def hidden(model, ids, mask):
    return model(input_ids=ids, attention_mask=mask, output_hidden_states=True, use_cache=False).hidden_states


@torch.no_grad()
def write_tiny28() -> None:
    folder = FIX / "qwen3" / "tiny28"
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    from safetensors.torch import load_file
    inputs = load_file(folder / "inputs.safetensors")
    ids, mask = inputs["input_ids"].long(), inputs["attention_mask"].long()
    want = hidden(model, ids, mask)
    for kind in ("f32", "q8_0"):
        out = folder / f"llamacpp-{kind}.gguf"
        w = qwen3_writer(out, model, f"tiny28 {kind}")
        add_qwen3_tensors(w, model, kind)
        finish(w)
        if kind == "f32":
            # transformers reads the llama.cpp names back into the same model. Its qwen3 GGUF config
            # map ignores attention.key_length (head_dim would default to 128), so the config is given.
            back = AutoModelForCausalLM.from_pretrained(folder, gguf_file=out.name, config=model.config,
                                                        dtype=torch.float32).eval()
            got = hidden(back, ids, mask)
            err = max(((a - b).norm() / b.norm()).item() for a, b in zip(got, want))
            assert err < 1e-6, f"transformers' GGUF loader gives rel {err}"
        print(f"qwen3/tiny28/{out.name}: {out.stat().st_size} bytes")


def write_prompt_encoder(tmp: Path) -> None:
    models = FIX / "flux2" / "prompt_models"
    model = AutoModelForCausalLM.from_pretrained(models / "text_encoder", dtype=torch.float32).eval()
    tok = tokenizer_folder(FIX / "tokenizer" / "tokenizer.json", tmp / "tok2")
    out = models / "text_encoder.gguf"
    w = qwen3_writer(out, model, "klein prompt fixture encoder bf16")
    add_tokenizer(w, tok, tmp / "tok2", model.config.vocab_size)
    add_qwen3_tensors(w, model, "bf16")
    finish(w)
    print(f"flux2/prompt_models/{out.name}: {out.stat().st_size} bytes (vocab {model.config.vocab_size})")


def main() -> None:
    import tempfile
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        write_tokenizer_gguf(tmp)
        write_tiny28()
        write_prompt_encoder(tmp)
    print(f"gguf {gguf.__version__ if hasattr(gguf, '__version__') else '0.19.0'}, transformers {transformers.__version__}")


if __name__ == "__main__":
    main()
