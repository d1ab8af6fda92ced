#!/usr/bin/env python3
"""Byte-level BPE tokenizer fixtures under tests/fixtures/tokenizer/ (the `tokenizers` library).

  python tools/make_tokenizer_fixtures.py

Trains a Qwen2-style tokenizer (NFC, the Qwen pre-tokenizer regex split "isolated", ByteLevel
without its own regex, BPE, vocab 6000) on Python's standard-library sources plus generated
multilingual text, with Qwen's special tokens (<|endoftext|>, <|im_start|>, <|im_end|>) and its
non-special <think> / </think>; writes tokenizer.json and cases.json: 2400 strings (Swedish, CJK,
emoji and ZWJ sequences, numbers, whitespace runs, code, decomposed accents that NFC composes,
unassigned and private-use code points, special tokens inside text, the FLUX.2 [klein] chat
template) with the ids `tokenizers` gives them. Deterministic (seeded).
"""

import glob
import json
import unicodedata
import random
import sys
from pathlib import Path

import tokenizers
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "tokenizer"
QWEN_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                r"\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
ADDED = ["<think>", "</think>"]

SWEDISH = ["Kongl. Maj:ts nådiga förordning", "Är det så här du vill ha det?", "Åtta älgar åt ärtor på ön",
           "Ödmjukt får jag härmed anhålla", "Stockholm den 14 maj 1766", "Gustaf, med Guds nåde, Sveriges konung",
           "kärlek, längtan och höstlöv", "Fjärran från Göteborgs hamn", "smörgåsbord och kräftskiva"]
OTHER = ["a red fox in snow", "The quick brown fox jumps over the lazy dog.", "naïve café résumé coöperate",
         "Straße und Grüße", "Привет, как дела?", "Γειά σου Κόσμε", "שלום עולם", "مرحبا بالعالم",
         "こんにちは世界、今日は良い天気ですね。", "你好，世界！我们今天去公园吧。", "안녕하세요 세계",
         "नमस्ते दुनिया", "สวัสดีชาวโลก", "I'm sure they'll say we've DONE it, isn't it? YOU'RE", "don't STOP'S"]
EMOJI = ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "❤️", "🇸🇪", "🦊", "🎉🎉🎉", "☃", "✈️", "🧑🏿‍🚀"]
ODD = ["e\u0301", "a\u030a", "A\u0308", "\u0378", "\ue000\uf8ff", "\u200b\u200d\u200c", "\ufeff", "\u00ad",
       "\U000e0041", "\U0010fffd", "\uffff", "\u0000", "\t", "\x0b\x0c", "\u2028\u2029", "\u3000", "\u00a0"]
CODE = ["def f(x):\n    return x ** 2\n", "for (int i = 0; i < n; ++i) { sum += a[i]; }", "if x != None: pass",
        "#include <stdio.h>\n", "SELECT * FROM t WHERE id = 42;", "a+=1;b-=2;c*=3", "{\"key\": [1, 2.5, -3e-7]}",
        "https://example.com/path?q=1&r=%20", "C:\\Users\\name\\file.txt", "~/.bashrc && echo $HOME"]
NUMBERS = ["0", "42", "3.14159", "1,000,000", "2026-12-04", "12:30:45", "-17", "1e10", "0x1F", "٣٤٥", "１２３", "Ⅻ"]
SPACES = [" ", "  ", "   ", "\n", "\n\n", "\r\n", " \n ", "\t\t", "a  b", "a\n\n\nb", "  leading", "trailing  ",
          "mixed \t \n spaces", "\r", "x\r\ny"]


def corpus():
    files = sorted(glob.glob(str(Path(sys.base_prefix) / "lib" / "python3*" / "*.py")))[:400]
    for f in files:
        try:
            yield Path(f).read_text(encoding="utf-8", errors="ignore")
        except OSError:
            pass
    rng = random.Random(11)
    pools = SWEDISH + OTHER + EMOJI + CODE + NUMBERS
    for _ in range(30000):
        yield " ".join(rng.choice(pools) for _ in range(rng.randint(1, 6)))


def cases(rng: random.Random) -> list:
    out = list(SWEDISH + OTHER + EMOJI + ODD + CODE + NUMBERS + SPACES + SPECIAL + ADDED)
    klein = "<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    for p in SWEDISH + OTHER[:5]:
        out.append(klein.format(p))
    pools = [SWEDISH, OTHER, EMOJI, ODD, CODE, NUMBERS, SPACES, SPECIAL + ADDED]
    lines = [ln for ln in Path(tokenizers.__file__).read_text().splitlines() if ln.strip()][:200]
    while len(out) < 2400:
        parts = []
        for _ in range(rng.randint(1, 7)):
            r = rng.random()
            if r < 0.1:
                parts.append(rng.choice(lines))
            elif r < 0.2:
                # Random code points assigned in Python's Unicode (14.0): Debian 12's ICU has Unicode
                # 15.0, `tokenizers` 16.0, so characters added since 15.0 are letters to one and
                # unassigned to the other (docs/FORMATS.md). Never-assigned ones are in ODD.
                chars = []
                while len(chars) < rng.randint(1, 6):
                    c = chr(rng.randint(0x20, 0x2FFFF))
                    if unicodedata.category(c) != "Cn":
                        chars.append(c)
                parts.append("".join(chars))
            else:
                parts.append(rng.choice(rng.choice(pools)))
        sep = rng.choice(["", " ", "  ", "\n", "\t", "'s ", ", "])
        text = sep.join(parts)
        # Drop surrogates (not encodable as UTF-8: neither library would take them).
        text = "".join(c for c in text if not 0xD800 <= ord(c) <= 0xDFFF)
        out.append(text)
    return out


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=6000, min_frequency=2, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(corpus(), trainer)
    tok.add_tokens(ADDED)
    tok.save(str(OUT / "tokenizer.json"))
    rng = random.Random(12)
    texts = cases(rng)
    data = [{"text": t, "ids": tok.encode(t).ids} for t in texts]
    (OUT / "cases.json").write_text(json.dumps({"tokenizers": tokenizers.__version__, "cases": data},
                                               ensure_ascii=False) + "\n")
    print(f"tokenizer: vocab {tok.get_vocab_size()}, {len(data)} cases, "
          f"{sum(len(d['ids']) for d in data)} ids")


if __name__ == "__main__":
    main()
