"""Random SD3 MMDiT models for reference fixtures and benchmarks.

diffusers' default init leaves norm weights at exactly 1 (and other models zero some
layers), so a C++ port that ignored those tensors would still match. Every parameter
is redrawn here from a seeded generator so each one influences the output.
"""

import math

import torch
from diffusers import SD3Transformer2DModel

# Linear/conv weights: std = WEIGHT_GAIN / sqrt(fan_in), so activations stay O(1)
# through the residual stream (std 0.18 for fan_in 32, 0.016 for fan_in 4096).
WEIGHT_GAIN = 1.0
BIAS_STD = 0.05
# Norm scales: 1 + N(0, NORM_STD), so a missing scale changes the result but
# does not collapse it.
NORM_STD = 0.1

INIT_DESCRIPTION = (
    f"every parameter redrawn: Linear/Conv weight ~ N(0, ({WEIGHT_GAIN}/sqrt(fan_in))^2), "
    f"bias ~ N(0, {BIAS_STD}^2), norm weight ~ 1 + N(0, {NORM_STD}^2); "
    "pos_embed.pos_embed buffer left as diffusers builds it (2D sincos)"
)


def _randn(shape, generator):
    return torch.randn(shape, generator=generator, dtype=torch.float32)


@torch.no_grad()
def reinit_parameters(model: torch.nn.Module, seed: int) -> None:
    """Redraw every parameter of `model` in a fixed order from `seed`."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    seen = set()
    for mod_name, module in model.named_modules():
        for p_name, param in module.named_parameters(recurse=False):
            full = f"{mod_name}.{p_name}" if mod_name else p_name
            kind = type(module).__name__
            if isinstance(module, (torch.nn.Linear, torch.nn.Conv2d)):
                if p_name == "weight":
                    fan_in = param[0].numel()
                    param.copy_(_randn(param.shape, gen) * (WEIGHT_GAIN / math.sqrt(fan_in)))
                elif p_name == "bias":
                    param.copy_(_randn(param.shape, gen) * BIAS_STD)
                else:
                    raise RuntimeError(f"unexpected parameter {full} in {kind}")
            elif "Norm" in kind:
                if p_name == "weight":
                    param.copy_(1.0 + _randn(param.shape, gen) * NORM_STD)
                elif p_name == "bias":
                    param.copy_(_randn(param.shape, gen) * BIAS_STD)
                else:
                    raise RuntimeError(f"unexpected parameter {full} in {kind}")
            else:
                raise RuntimeError(f"no init rule for parameter {full} in {kind}")
            seen.add(full)
    missing = {n for n, _ in model.named_parameters()} - seen
    if missing:
        raise RuntimeError(f"parameters not re-initialised: {sorted(missing)}")


def build_random_sd3(config: dict, seed: int) -> SD3Transformer2DModel:
    torch.manual_seed(seed)
    model = SD3Transformer2DModel(**config)
    reinit_parameters(model, seed)
    return model.eval()


def random_inputs(config: dict, batch: int, latent_hw, text_len: int, timesteps, seed: int) -> dict:
    """Inputs in f32: N(0,1) latents, text states and pooled vector; given timesteps."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    h, w = latent_hw
    return {
        "hidden_states": _randn((batch, config["in_channels"], h, w), gen),
        "encoder_hidden_states": _randn((batch, text_len, config["joint_attention_dim"]), gen),
        "pooled_projections": _randn((batch, config["pooled_projection_dim"]), gen),
        "timestep": torch.tensor(timesteps, dtype=torch.float32),
    }


def run_model(model, inputs: dict, dtype=torch.float32) -> torch.Tensor:
    """Forward as StableDiffusion3Pipeline calls it (timestep stays f32)."""
    with torch.inference_mode():
        out = model(
            hidden_states=inputs["hidden_states"].to(dtype),
            encoder_hidden_states=inputs["encoder_hidden_states"].to(dtype),
            pooled_projections=inputs["pooled_projections"].to(dtype),
            timestep=inputs["timestep"],
            return_dict=True,
        ).sample
    return out
