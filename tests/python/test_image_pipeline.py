"""quill.ImagePipeline against `quill generate` (same pixels) and diffusers' images (the fixtures
tools/make_flux2_fixtures.py wrote with Flux2KleinPipeline), and quill.info against `quill info`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import quill
from conftest import FIXTURES, read_png, read_safetensors, run_cli

F2 = FIXTURES / "flux2"


@pytest.fixture(scope="module")
def klein(tmp_path_factory) -> Path:
    """A diffusers-style distilled klein pipeline folder around the tiny fixture models."""
    p = tmp_path_factory.mktemp("klein") / "klein"
    shutil.copytree(F2 / "pipeline_models", p)
    (p / "model_index.json").write_text('{"_class_name": "Flux2KleinPipeline", "is_distilled": true}\n')
    return p


def max_lsb(got: np.ndarray, expected: np.ndarray) -> int:
    want = np.transpose(expected, (1, 2, 0)) * 255.0  # [3, H, W] in [0, 1] -> [H, W, 3]
    return int(np.ceil(np.abs(got.astype(np.float32) - want) - 0.5).max())


def test_cond_file_equals_the_cli_and_diffusers(klein, cli, tmp_path):
    f = F2 / "pipeline_distilled"
    run_cli(cli, "generate", "--model", str(klein / "transformer"), "--vae", str(klein / "vae"), "--cond",
            str(f / "cond.safetensors"), "--latents", str(f / "latents.safetensors"), "--width", "32", "--height",
            "32", "--steps", "3", "--device", "cpu", "-o", str(tmp_path / "d.png"))
    pipe = quill.ImagePipeline(klein / "transformer", vae=klein / "vae", device="cpu")
    assert pipe.info["architecture"] == "Flux2Transformer2DModel"
    images = pipe.generate(cond=f / "cond.safetensors", latents=f / "latents.safetensors", width=32, height=32,
                           steps=3)
    assert images.shape == (2, 32, 32, 3) and images.dtype == np.uint8
    expected = read_safetensors(f / "expected.safetensors")["image"]
    for b in range(2):
        assert np.array_equal(images[b], read_png(tmp_path / f"d_{b + 1:04d}.png"))
        assert max_lsb(images[b], expected[b]) <= 1


def test_conditioning_from_arrays_equals_the_file(klein):
    f = F2 / "pipeline_distilled"
    tensors = read_safetensors(f / "cond.safetensors")
    latents = read_safetensors(f / "latents.safetensors")["latents"]
    pipe = quill.ImagePipeline(klein / "transformer", vae=klein / "vae", device="cpu")
    name = "prompt_embeds" if "prompt_embeds" in tensors else "encoder_hidden_states"
    a = pipe.generate(cond={"prompt_embeds": tensors[name]}, latents=latents, width=32, height=32, steps=3)
    b = pipe.generate(cond=f / "cond.safetensors", latents=f / "latents.safetensors", width=32, height=32, steps=3)
    assert np.array_equal(a, b)


def prompt_pipeline(root: Path, distilled: bool) -> Path:
    """A klein pipeline folder with a text encoder and tokenizer (as the C++ CLI test builds it)."""
    p = root / ("klein-prompt-" + ("distilled" if distilled else "base"))
    m = F2 / "prompt_models"
    (p / "tokenizer").mkdir(parents=True)
    shutil.copytree(m / "transformer", p / "transformer")
    shutil.copytree(m / "text_encoder", p / "text_encoder")
    shutil.copytree(F2 / "pipeline_models" / "vae", p / "vae")
    shutil.copy(FIXTURES / "tokenizer" / "tokenizer.json", p / "tokenizer" / "tokenizer.json")
    shutil.copy(m / "tokenizer_config.json", p / "tokenizer" / "tokenizer_config.json")
    (p / "model_index.json").write_text(
        '{"_class_name": "Flux2KleinPipeline", "is_distilled": %s}\n' % ("true" if distilled else "false"))
    return p


@pytest.mark.parametrize("distilled", [True, False])
def test_prompt_equals_the_cli_and_diffusers(cli, tmp_path, distilled):
    f = F2 / ("prompt_distilled" if distilled else "prompt_base")
    meta = json.loads((f / "meta.json").read_text())
    p = prompt_pipeline(tmp_path, distilled)
    settings = {"steps": 3} if distilled else {"steps": 2, "cfg": 4.0}
    args = ["--steps", str(settings["steps"])] + ([] if distilled else ["--cfg", "4"])
    lat = f / "latents.safetensors"
    run_cli(cli, "generate", "--model", str(p), "--prompt", meta["prompt"], "--latents", str(lat), "--width", "32",
            "--height", "32", *args, "--device", "cpu", "-o", str(tmp_path / "p.png"))
    pipe = quill.ImagePipeline(p, device="cpu")
    assert pipe.info["takes_prompts"]
    img = pipe.generate(meta["prompt"], latents=lat, width=32, height=32, **settings)
    assert img.shape == (32, 32, 3)
    assert np.array_equal(img, read_png(tmp_path / "p.png"))
    expected = read_safetensors(f / "expected.safetensors")["image"]
    assert max_lsb(img, expected[0]) <= 1
    # the same prompts as arrays: encode_prompts() round-trips through a Conditioning
    cond = pipe.encode_prompts([meta["prompt"]])
    assert cond.prompt_embeds.shape[0] == 1


def test_misuse_is_explained(klein):
    pipe = quill.ImagePipeline(klein / "transformer", vae=klein / "vae", device="cpu")
    cond = F2 / "pipeline_distilled" / "cond.safetensors"
    with pytest.raises(ValueError, match="exactly one of prompt"):
        pipe.generate()
    with pytest.raises(ValueError, match="static shift"):
        pipe.generate(cond=cond, width=32, height=32, shift=3.0)
    with pytest.raises(quill.UnsupportedError, match="no text encoder"):
        pipe.generate("a fox", width=32, height=32)
    with pytest.raises(ValueError, match="multiple of"):
        pipe.generate(cond=cond, width=30, height=32)
    with pytest.raises(ValueError, match="latents"):
        pipe.generate(cond=cond, width=32, height=32, latents=np.zeros((1, 2, 3), np.float32))
    with pytest.raises(quill.NotFoundError):
        quill.ImagePipeline(klein / "nothing")


def test_info_equals_quill_info_json(cli):
    path = F2 / "pipeline_models" / "transformer"
    r = run_cli(cli, "info", "--json", str(path))
    assert quill.info(path) == json.loads(r.stdout)
    with_tensors = quill.info(path, tensors=True)
    assert len(with_tensors["tensors"]) == with_tensors["tensor_count"] > 0
    with pytest.raises(quill.NotFoundError):
        quill.info("/no/such/model.gguf")
