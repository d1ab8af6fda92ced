"""Writes the small seed corpora in fuzz/corpus/<target>/ (standard library only).
Run from anywhere: python3 fuzz/make_seeds.py. Re-running rewrites the same bytes."""
import json
import os
import shutil
import struct

here = os.path.dirname(os.path.abspath(__file__))
testdata = os.path.join(here, "..", "tests", "io", "testdata")


def out(target, name, data):
    d = os.path.join(here, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- safetensors ----
def safetensors(tensors, metadata=None):
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


out("safetensors_fuzz", "empty", safetensors([]))
out("safetensors_fuzz", "metadata", safetensors([], {"format": "pt"}))
out("safetensors_fuzz", "mixed", safetensors([
    ("w", "F32", [2, 2], struct.pack("<4f", 1, -2, 0.5, 3)),
    ("b", "BF16", [3], b"\x80\x3f\x00\x40\x00\xc0"),
    ("e", "F16", [0, 4], b""),
    ("s", "I64", [], struct.pack("<q", -5)),
    ("m", "BOOL", [2], b"\x01\x00"),
], {"k": "v"}))
shutil.copy(os.path.join(testdata, "reference.safetensors"), os.path.join(here, "corpus", "safetensors_fuzz", "reference"))


# ---- GGUF ----
def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gvalue(t, v):
    scalar = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
    if t == 8:
        return gstr(v)
    if t == 9:
        et, items = v
        return struct.pack("<IQ", et, len(items)) + b"".join(gvalue(et, x) for x in items)
    return struct.pack(scalar[t], v)


def gguf(kvs, tensors, version=3, alignment=32):
    b = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    for key, t, v in kvs:
        b += gstr(key) + struct.pack("<I", t) + gvalue(t, v)
    offset, blobs = 0, []
    for name, ne, ggml_type, raw in tensors:
        b += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        b += struct.pack("<IQ", ggml_type, offset)
        blobs.append(raw + b"\0" * (-len(raw) % alignment))
        offset += len(blobs[-1])
    b += b"\0" * (-len(b) % alignment)
    return b + b"".join(blobs)


out("gguf_fuzz", "empty_v2", gguf([], [], version=2))
out("gguf_fuzz", "values", gguf([
    ("u8", 0, 7), ("i8", 1, -7), ("u16", 2, 700), ("i16", 3, -700), ("u32", 4, 70000), ("i32", 5, -70000),
    ("f32", 6, 0.5), ("bool", 7, True), ("str", 8, "x"), ("u64", 10, 1 << 40), ("i64", 11, -(1 << 40)), ("f64", 12, 2.5),
    ("ints", 9, (5, [1, 2, 3])), ("strs", 9, (8, ["a", ""])),
    ("nested", 9, (9, [(3, [1, -1]), (8, ["deep"])])),
    ("quill.config", 8, '{"_class_name": "SD3Transformer2DModel", "num_layers": 2}'),
], []))
q8_block = struct.pack("<e", 0.25) + bytes(range(32))
out("gguf_fuzz", "tensors", gguf([("general.alignment", 4, 64)], [
    ("w", [3, 2], 0, struct.pack("<6f", 0, 1, 2, 3, 4, 5)),
    ("h", [4], 1, struct.pack("<4e", 1, 2, 3, 4)),
    ("q", [32, 2], 8, q8_block * 2),
    ("t", [128], 42, b"\x55" * 32 + struct.pack("<e", 1.0)),
    ("i", [2], 26, struct.pack("<2i", -1, 1)),
    ("bf", [2], 30, b"\x80\x3f\x00\x40"),
], alignment=64))
shutil.copy(os.path.join(testdata, "reference.gguf"), os.path.join(here, "corpus", "gguf_fuzz", "reference"))

# ---- JSON (config.json, index.json) ----
out("config_json_fuzz", "sd3_config", json.dumps({
    "_class_name": "SD3Transformer2DModel", "_diffusers_version": "0.30.0", "attention_head_dim": 64,
    "caption_projection_dim": 1536, "in_channels": 16, "joint_attention_dim": 4096, "num_attention_heads": 24,
    "num_layers": 24, "out_channels": 16, "patch_size": 2, "pooled_projection_dim": 2048, "pos_embed_max_size": 192,
    "qk_norm": "rms_norm", "dual_attention_layers": [0, 1, 2], "sample_size": 128, "scale": 1.5e-3, "flag": None,
}, indent=1).encode())
out("config_json_fuzz", "index", json.dumps({
    "metadata": {"total_size": 123}, "weight_map": {"a.weight": "m-00001-of-00002.safetensors", "b": "m-00002-of-00002.safetensors"},
}).encode())
out("config_json_fuzz", "strings", '{"s": "h\\u00e9llo \\ud83d\\ude00 \\"q\\" \\n", "n": [-0, 1e-7, 18446744073709551615, -9223372036854775808]}'.encode())

# ---- images: the small PNG/JPEG test fixtures (tools/make_image_fixtures.py) ----
os.makedirs(os.path.join(here, "corpus", "image_fuzz"), exist_ok=True)
images = os.path.join(here, "..", "tests", "fixtures", "image")
for name in ("src_gray.png", "gray_alpha.png", "rgba.png", "palette_trns.png", "gray16.png", "bilevel.png",
             "rgb.jpg", "gray.jpg", "cmyk.jpg"):
    shutil.copy(os.path.join(images, name), os.path.join(here, "corpus", "image_fuzz", name))


# ---- line model folder: config.json \0 sampler.json \0 style_encoder/config.json ----
line_dir = os.path.join(here, "..", "models", "quill-line")
with open(os.path.join(line_dir, "config.json"), "rb") as f:
    line_config = f.read()
with open(os.path.join(line_dir, "sampler.json"), "rb") as f:
    line_sampler = f.read()
with open(os.path.join(line_dir, "style_encoder", "config.json"), "rb") as f:
    line_style = f.read()
out("line_model_folder_fuzz", "shipped", line_config + b"\0" + line_sampler + b"\0" + line_style)
out("line_model_folder_fuzz", "minimal", b"{}\0{}\0{}")
out("line_model_folder_fuzz", "swiglu", b'{"patch_size": 2, "qk_norm": "rms_norm", "glyph_concat": true}\0'
    b'{"steps": 4}\0{"use_swiglu_ffn": true, "image_size": [28, 14], "patch_size": 14, "hidden_size": 32,'
    b' "num_attention_heads": 2, "num_hidden_layers": 1}')


# ---- service requests: endpoint/form byte, body, then NUL and an uploaded style file ----
import base64
with open(os.path.join(images, "src_gray.png"), "rb") as f:
    small_png = f.read()
LINES, IMAGES, FORM = b"\x00", b"\x01", 2
out("line_request_fuzz", "lines", LINES + json.dumps(
    {"text": "Kongl. Maj:ts nådiga förordning", "seed": 41, "steps": 4, "cfg": 4, "start_sigma": 1.0, "shift": 1,
     "response_format": "json", "clamp_overflow": False, "timeout_s": 30, "style_id": "default"}).encode())
out("line_request_fuzz", "inline_style", LINES + json.dumps(
    {"text": "hej", "style": base64.b64encode(small_png).decode()}).encode())
out("line_request_fuzz", "uploaded_style", LINES + b'{"text": "alla"}\0' + small_png)
out("line_request_fuzz", "openai", IMAGES + json.dumps(
    {"prompt": "hej", "n": 2, "response_format": "b64_json", "size": "256x32", "style_image": None}).encode())
out("line_request_fuzz", "form", bytes([FORM]) + b"text=hej\nsteps=3\ncfg=2.5\nclamp_overflow=true\nstyle_id=none")
out("line_request_fuzz", "form_openai", bytes([FORM | 1]) + b"prompt=a\nn=1\nsize=auto\0" + small_png)


# ---- BPE tokenizer: mode byte 0 = tokenizer.json \0 text; 1 = text for the fixture tokenizer ----
def byte_level(s):  # GPT-2's byte -> printable unicode map, for a tiny hand-made vocabulary
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, map(chr, cs)))
    return "".join(table[b] for b in s.encode())


symbols = sorted({byte_level(c) for c in "hej på dig ÅÄÖ 0123456789.,!?'\n"})
vocab = {s: i + 3 for i, s in enumerate(symbols)}
for pair in (("h", "e"), ("he", "j"), (byte_level(" "), "d")):
    vocab["".join(pair)] = len(vocab) + 3
tiny = {
    "version": "1.0", "truncation": None, "padding": None,
    "added_tokens": [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
                      "normalized": False, "special": True} for i, c in enumerate(["<|endoftext|>", "<|im_start|>", "<|im_end|>"])],
    "normalizer": {"type": "NFC"},
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "(?i:'s|'t)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s+(?!\\S)|\\s+"},
         "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
    "post_processor": None,
    "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
              "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
              "vocab": vocab, "merges": [["h", "e"], ["he", "j"], [byte_level(" "), "d"]]},
}
out("bpe_tokenizer_fuzz", "tiny", b"\x00" + json.dumps(tiny, ensure_ascii=False).encode() + b"\0" + "hej på dig<|im_end|>!".encode())
out("bpe_tokenizer_fuzz", "fixture_text", b"\x01" + "Kongl. Maj:ts nådiga förordning<|im_start|>user\n 12 'S  \r\n".encode())
out("bpe_tokenizer_fuzz", "fixture_mixed", b"\x01" + "e\u0301 Å ﬁ 漢字 😀\t\u00a0x".encode())


# ---- model configs: selector byte (0 SD3, 1 FLUX.2, 2 Qwen3, 3 AutoencoderKL, 4 scheduler) + config.json ----
fixtures = os.path.join(here, "..", "tests", "fixtures")
for sel, name, rel in [(0, "sd3", "sd3/sd35/config.json"), (0, "sd3_tiny", "sd3/tiny/config.json"),
                       (1, "flux2", "flux2/double_single/config.json"), (1, "flux2_irregular", "flux2/irregular/config.json"),
                       (2, "qwen3", "flux2/prompt_models/text_encoder/config.json"),
                       (3, "vae", "vae/sd3_layout/config.json"), (3, "vae_flux2", "flux2/vae/config.json"),
                       (4, "scheduler", "flux2/pipeline_models/scheduler/scheduler_config.json")]:
    with open(os.path.join(fixtures, rel), "rb") as f:
        out("model_config_fuzz", name, bytes([sel]) + f.read())


# ---- a vocab-only GGUF tokenizer (tokenizer.ggml.*, as llama.cpp's converter writes them) ----
tok_symbols = sorted({byte_level(c) for c in "hej på dig 0123456789!"})
tok_tokens = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] + tok_symbols + ["he", "hej"]
out("gguf_fuzz", "tokenizer", gguf([
    ("tokenizer.ggml.model", 8, "gpt2"), ("tokenizer.ggml.pre", 8, "qwen2"),
    ("tokenizer.ggml.tokens", 9, (8, tok_tokens)),
    ("tokenizer.ggml.token_type", 9, (5, [3, 3, 3] + [1] * (len(tok_tokens) - 3))),
    ("tokenizer.ggml.merges", 9, (8, ["h e", "he j"])),
], []))
