"""Quill's handwriting line model, reference implementation in PyTorch.

An SD3-style MMDiT in "glyph line" mode, built on diffusers' JointTransformerBlock:

* image tokens: the noisy line (pixels, or VAE latents when `downscale` > 1) cut into p x p
  patches, projected by `x_embedder` (a Linear over (c, ky, kx)-ordered patches, like a conv
  with kernel = stride = p); with `glyph_concat` the glyph line is concatenated to the line as
  extra channels first;
* content tokens: the glyph line (the text rendered in a plain font at the canvas size), brought
  to latent resolution and cut into ONE token per patch column (all rows of a p-wide column,
  ordered (g, y, kx)), projected by `content_embedder`. So the content sequence length equals the
  image's width in tokens, and any width works;
* 2D rotary position embedding on q and k (after the qk RMSNorm): the first half of each head
  rotates with the token's row, the second half with its column; content token j takes column j
  and row 0 (identity rotation for the row half);
* pooled vector = `time_text_embed(timestep, style)`, diffusers' CombinedTimestepTextProjEmbeddings
  with the style embedding in place of the pooled text projection;
* norm_out (AdaLayerNormContinuous) + proj_out + unpatchify, as SD3.

Quill's C++ (src/models/line_model.cpp) mirrors this module and its weight names.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F
from diffusers.models.attention import JointTransformerBlock
from diffusers.models.embeddings import CombinedTimestepTextProjEmbeddings
from diffusers.models.normalization import AdaLayerNormContinuous


@dataclass
class LineModelConfig:
    line_height: int = 32          # canvas height in pixels
    max_line_width: int = 1024     # widest canvas in pixels (multiple of 16)
    in_channels: int = 1           # 1 = grayscale pixel space; VAE latent channels otherwise
    out_channels: int = 1
    downscale: int = 1             # canvas pixels per latent pixel (1 = pixel space)
    glyph_channels: int = 1
    patch_size: int = 4
    num_layers: int = 4
    num_attention_heads: int = 4
    attention_head_dim: int = 32
    style_dim: int = 64            # size of the style embedding (style encoder's pooled output)
    rope_theta: float = 10000.0
    qk_norm: str | None = "rms_norm"
    # Also feed the glyph line to the image tokens: x_embedder sees [hidden_states; glyphs] patches
    # (channels concatenated), a direct local path from each glyph pixel to the pixel it inks.
    glyph_concat: bool = False
    _class_name: str = "QuillLineModel"

    @property
    def inner_dim(self) -> int:
        return self.num_attention_heads * self.attention_head_dim

    @property
    def latent_height(self) -> int:
        return self.line_height // self.downscale

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)


def rope_tables(h_tok: int, w_tok: int, head_dim: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin [S, head_dim/2] for S = h_tok*w_tok image tokens (row-major) then w_tok content tokens.

    Pair i (elements 2i, 2i+1 of a head) for i < head_dim/4 rotates by row * f_i, the others by
    col * f_(i - head_dim/4), with f_j = theta ** (-j / (head_dim/4)).
    """
    assert head_dim % 4 == 0, "head_dim must be a multiple of 4 for 2D RoPE"
    quarter = head_dim // 4
    freqs = theta ** (-torch.arange(quarter, dtype=torch.float64) / quarter)
    rows = torch.arange(h_tok, dtype=torch.float64).repeat_interleave(w_tok)
    cols = torch.arange(w_tok, dtype=torch.float64).repeat(h_tok)
    rows = torch.cat([rows, torch.zeros(w_tok, dtype=torch.float64)])
    cols = torch.cat([cols, torch.arange(w_tok, dtype=torch.float64)])
    ang = torch.cat([rows[:, None] * freqs[None], cols[:, None] * freqs[None]], dim=1)
    return ang.cos().float(), ang.sin().float()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x [B, H, S, Dh]; rotates adjacent pairs (2i, 2i+1)."""
    a, b = x[..., 0::2], x[..., 1::2]
    ra = a * cos - b * sin
    rb = a * sin + b * cos
    return torch.stack([ra, rb], dim=-1).flatten(-2)


class RopeJointAttnProcessor:
    """diffusers' JointAttnProcessor2_0 with 2D RoPE applied to q and k after the qk norm."""

    def __call__(self, attn, hidden_states, encoder_hidden_states=None, attention_mask=None, rope=None):
        residual_len = hidden_states.shape[1]
        b = hidden_states.shape[0]
        q, k, v = attn.to_q(hidden_states), attn.to_k(hidden_states), attn.to_v(hidden_states)
        hd = k.shape[-1] // attn.heads
        q = q.view(b, -1, attn.heads, hd).transpose(1, 2)
        k = k.view(b, -1, attn.heads, hd).transpose(1, 2)
        v = v.view(b, -1, attn.heads, hd).transpose(1, 2)
        if attn.norm_q is not None:
            q = attn.norm_q(q)
        if attn.norm_k is not None:
            k = attn.norm_k(k)
        if encoder_hidden_states is not None:
            cq = attn.add_q_proj(encoder_hidden_states).view(b, -1, attn.heads, hd).transpose(1, 2)
            ck = attn.add_k_proj(encoder_hidden_states).view(b, -1, attn.heads, hd).transpose(1, 2)
            cv = attn.add_v_proj(encoder_hidden_states).view(b, -1, attn.heads, hd).transpose(1, 2)
            if attn.norm_added_q is not None:
                cq = attn.norm_added_q(cq)
            if attn.norm_added_k is not None:
                ck = attn.norm_added_k(ck)
            q, k, v = torch.cat([q, cq], 2), torch.cat([k, ck], 2), torch.cat([v, cv], 2)
        if rope is not None:
            cos, sin = rope
            s = q.shape[2]
            q = apply_rope(q, cos[:s], sin[:s])
            k = apply_rope(k, cos[:s], sin[:s])
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.0, is_causal=False)
        out = out.transpose(1, 2).reshape(b, -1, attn.heads * hd).to(q.dtype)
        if encoder_hidden_states is not None:
            out, ctx = out[:, :residual_len], out[:, residual_len:]
            if not attn.context_pre_only:
                ctx = attn.to_add_out(ctx)
            return attn.to_out[1](attn.to_out[0](out)), ctx
        return attn.to_out[1](attn.to_out[0](out))


class LineModel(torch.nn.Module):
    def __init__(self, cfg: LineModelConfig):
        super().__init__()
        self.cfg = cfg
        d, p = cfg.inner_dim, cfg.patch_size
        assert cfg.latent_height % p == 0, "latent height must be a multiple of patch_size"
        x_in = cfg.in_channels + (cfg.glyph_channels if cfg.glyph_concat else 0)
        self.x_embedder = torch.nn.Linear(x_in * p * p, d)
        self.content_embedder = torch.nn.Linear(cfg.glyph_channels * cfg.latent_height * p, d)
        self.time_text_embed = CombinedTimestepTextProjEmbeddings(embedding_dim=d, pooled_projection_dim=cfg.style_dim)
        self.transformer_blocks = torch.nn.ModuleList(
            [
                JointTransformerBlock(
                    dim=d,
                    num_attention_heads=cfg.num_attention_heads,
                    attention_head_dim=cfg.attention_head_dim,
                    context_pre_only=i == cfg.num_layers - 1,
                    qk_norm=cfg.qk_norm,
                )
                for i in range(cfg.num_layers)
            ]
        )
        for blk in self.transformer_blocks:
            blk.attn.set_processor(RopeJointAttnProcessor())
        self.norm_out = AdaLayerNormContinuous(d, d, elementwise_affine=False, eps=1e-6)
        self.proj_out = torch.nn.Linear(d, p * p * cfg.out_channels)

    def forward(self, hidden_states, glyphs, style, timestep):
        """hidden_states [B, C, Hl, Wl], glyphs [B, G, Hl, Wl], style [B, style_dim], timestep [B] -> [B, Cout, Hl, Wl]."""
        cfg, p = self.cfg, self.cfg.patch_size
        if cfg.glyph_concat:
            hidden_states = torch.cat([hidden_states, glyphs], dim=1)
        b, c, h, w = hidden_states.shape
        ht, wt = h // p, w // p
        patches = hidden_states.reshape(b, c, ht, p, wt, p).permute(0, 2, 4, 1, 3, 5).reshape(b, ht * wt, c * p * p)
        x = self.x_embedder(patches)
        g = glyphs.shape[1]
        cols = glyphs.reshape(b, g, h, wt, p).permute(0, 3, 1, 2, 4).reshape(b, wt, g * h * p)
        ctx = self.content_embedder(cols)
        temb = self.time_text_embed(timestep, style)
        cos, sin = rope_tables(ht, wt, cfg.attention_head_dim, cfg.rope_theta)
        kw = {"rope": (cos.to(x.device, x.dtype), sin.to(x.device, x.dtype))}
        for blk in self.transformer_blocks:
            ctx, x = blk(hidden_states=x, encoder_hidden_states=ctx, temb=temb, joint_attention_kwargs=kw)
        x = self.norm_out(x, temb)
        x = self.proj_out(x)
        x = x.reshape(b, ht, wt, p, p, cfg.out_channels)
        x = torch.einsum("nhwpqc->nchpwq", x)
        return x.reshape(b, cfg.out_channels, ht * p, wt * p)
