"""quill.ImagePipeline: images from a diffusion transformer + VAE (SD3 / SD3.5, FLUX.2), with the
options of `quill generate` and the same pixels for the same seed."""

from __future__ import annotations

import os
from typing import Any, Callable, Mapping, Sequence, Union

import numpy as np

from . import _quill

# A conditioning source: a safetensors path (as --cond), a Conditioning, or a mapping with
# "prompt_embeds" (or "encoder_hidden_states") [B, T, J] and, for SD3, "pooled_projections" [B, P].
CondSource = Union[str, os.PathLike, _quill.Conditioning, Mapping[str, Any]]


def _opt(path: str | os.PathLike[str] | None) -> str:
    return os.fspath(path) if path is not None else ""


class ImagePipeline:
    """A transformer (+ VAE, + text encoder for FLUX.2 [klein] prompts) opened once."""

    def __init__(self, model: str | os.PathLike[str], *, vae: str | os.PathLike[str] | None = None,
                 text_encoder: str | os.PathLike[str] | None = None, tokenizer: str | os.PathLike[str] | None = None,
                 device: str = "auto", threads: int = 0) -> None:
        """model: a diffusers pipeline folder (its transformer/, vae/, text_encoder/, tokenizer/
        are used unless given), or the transformer alone (folder, .safetensors, .gguf)."""
        self._engine = _quill.ImageGenerator(os.fspath(model), _opt(vae), _opt(text_encoder), _opt(tokenizer), device,
                                             threads)

    @property
    def info(self) -> dict[str, Any]:
        """Architecture, defaults (size, steps, guidance), whether prompts work, device."""
        return self._engine.info

    def encode_prompts(self, prompts: Sequence[str]) -> _quill.Conditioning:
        """Prompts -> conditioning with the model's own text encoder (FLUX.2 [klein]: Qwen3)."""
        return self._engine.encode_prompts(list(prompts))

    def _conditioning(self, source: CondSource, negative: bool = False) -> _quill.Conditioning:
        if isinstance(source, _quill.Conditioning):
            return source
        if isinstance(source, (str, os.PathLike)):
            return _quill.read_conditioning(self._engine, os.fspath(source), negative)
        if isinstance(source, Mapping):
            embeds = source.get("prompt_embeds", source.get("encoder_hidden_states"))
            if embeds is None:
                raise ValueError("a conditioning mapping needs 'prompt_embeds' (or 'encoder_hidden_states')")
            pooled = source.get("pooled_projections")
            return _quill.Conditioning(np.asarray(embeds, dtype=np.float32),
                                       None if pooled is None else np.asarray(pooled, dtype=np.float32))
        raise TypeError(f"conditioning must be a path, a mapping of arrays or a quill.Conditioning, got {type(source)}")

    def generate(self, prompt: str | Sequence[str] | None = None, *, negative_prompt: str | Sequence[str] | None = None,
                 cond: CondSource | None = None, negative: CondSource | None = None,
                 latents: np.ndarray | str | os.PathLike[str] | None = None, width: int | None = None,
                 height: int | None = None, steps: int | None = None, cfg: float | None = None,
                 shift: float | None = None, seed: int = 0, tiled: bool = False,
                 progress: Callable[[int, int], Any] | None = None, cancel: _quill.CancelToken | None = None,
                 output: str = "numpy") -> Any:
        """Images as numpy uint8 [B, H, W, 3] (PIL images with output="pil"); a single str prompt
        gives one image [H, W, 3]. Give exactly one of `prompt` (models with a text encoder) and
        `cond` (precomputed). Unset settings are the model's defaults, as in `quill generate`."""
        if output not in ("numpy", "pil"):
            raise ValueError(f"output must be 'numpy' or 'pil', got {output!r}")
        if (prompt is None) == (cond is None):
            raise ValueError("give exactly one of prompt (text) and cond (precomputed conditioning)")
        if prompt is not None and negative is not None:
            raise ValueError("negative is precomputed conditioning for cond; with prompt use negative_prompt")
        if prompt is None and negative_prompt is not None:
            raise ValueError("negative_prompt goes with prompt")
        info = self.info
        steps = steps if steps is not None else 0
        guidance = cfg if cfg is not None else info["default_guidance"]
        guided = guidance > 1.0 and not info["guidance_distilled"]
        if cfg is not None and cfg > 1.0 and info["guidance_distilled"]:
            import warnings

            warnings.warn(f"quill: cfg {cfg} is ignored: this model is guidance-distilled ({info['defaults_source']})",
                          stacklevel=2)
        if shift is not None and info["pooled_projection_dim"] == 0:
            raise ValueError(f"shift is SD3's static shift; {info['architecture']} shifts its schedule by the image "
                             "size (empirical mu)")

        single = isinstance(prompt, str)
        if prompt is not None:
            prompts = [prompt] if single else list(prompt)
            c = self.encode_prompts(prompts)
            n = None
            if guided:
                negs = negative_prompt if negative_prompt is not None else ""
                negs = [negs] * len(prompts) if isinstance(negs, str) else list(negs)
                n = self.encode_prompts(negs)
        else:
            c = self._conditioning(cond)
            n = None
            if guided:
                if negative is not None:
                    n = self._conditioning(negative)
                elif isinstance(cond, (str, os.PathLike)) and _quill.conditioning_file_has_negative(os.fspath(cond)):
                    n = self._conditioning(cond, negative=True)
                else:
                    raise ValueError(f"guidance scale {guidance} > 1 needs negative (the unconditional conditioning); "
                                     "use cfg=1 to skip guidance")

        width = width or info["default_size"]
        height = height or info["default_size"]
        if isinstance(latents, (str, os.PathLike)):
            scale = info["latent_scale"]
            if width % scale or height % scale:
                raise ValueError(f"width and height must be multiples of {scale} for {info['architecture']}")
            latents = _quill.read_latents(os.fspath(latents),
                                          [c.batch, info["in_channels"], height // scale, width // scale])
        elif latents is not None:
            latents = np.ascontiguousarray(latents, dtype=np.float32)

        images = self._engine.generate(c, n, width, height, steps, guidance, shift if shift is not None else 3.0,
                                       seed, tiled, latents, progress, cancel)
        if output == "pil":
            from PIL import Image

            pil = [Image.fromarray(np.asarray(img), mode="RGB") for img in images]
            return pil[0] if single else pil
        return images[0] if single else images

    def op_counts(self) -> str:
        return self._engine.op_counts()
