# SPDX-License-Identifier: GPL-3.0-or-later
# ShardScope - reference models in plain PyTorch.
# Copyright (C) The ShardScope authors.
#
# This program is free software: you can redistribute it and/or modify it under
# the terms of the GNU General Public License as published by the Free Software
# Foundation, either version 3 of the License, or (at your option) any later
# version. This program is distributed in the hope that it will be useful, but
# WITHOUT ANY WARRANTY; see the GNU General Public License for more details.
# You should have received a copy of it along with this program; if not, see
# <https://www.gnu.org/licenses/>.
"""GPT (pre-LN decoder) and BERT (post-LN encoder) exactly as docs/MODEL_SPEC.md.

Models are functional: parameters live in an ordered ``dict`` keyed by the
spec's names (``embed.tokens``, ``layer0.attn.qkv.weight``, ...), in the spec's
flat-buffer order. Only used by the fixture generator and the benchmark; the
C++ build never needs Python.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class Config:
    vocab: int
    max_seq: int
    channels: int
    layers: int
    heads: int


GPT_LN_EPS = 1e-5
BERT_LN_EPS = 1e-12


def gpt_param_shapes(cfg: Config) -> list[tuple[str, tuple[int, ...]]]:
    """(name, shape) of every GPT parameter, in spec order."""
    V, T, C = cfg.vocab, cfg.max_seq, cfg.channels
    shapes = [("embed.tokens", (V, C)), ("embed.positions", (T, C))]
    for l in range(cfg.layers):
        p = f"layer{l}."
        shapes += [
            (p + "ln1.weight", (C,)), (p + "ln1.bias", (C,)),
            (p + "attn.qkv.weight", (3 * C, C)), (p + "attn.qkv.bias", (3 * C,)),
            (p + "attn.proj.weight", (C, C)), (p + "attn.proj.bias", (C,)),
            (p + "ln2.weight", (C,)), (p + "ln2.bias", (C,)),
            (p + "mlp.fc.weight", (4 * C, C)), (p + "mlp.fc.bias", (4 * C,)),
            (p + "mlp.proj.weight", (C, 4 * C)), (p + "mlp.proj.bias", (C,)),
        ]
    return shapes + [("final_ln.weight", (C,)), ("final_ln.bias", (C,))]


def bert_param_shapes(cfg: Config) -> list[tuple[str, tuple[int, ...]]]:
    """(name, shape) of every BERT parameter (no pooler), in spec order."""
    V, T, C = cfg.vocab, cfg.max_seq, cfg.channels
    shapes = [("embed.tokens", (V, C)), ("embed.positions", (T, C)),
              ("embed.token_types", (2, C)),
              ("embed.ln.weight", (C,)), ("embed.ln.bias", (C,))]
    for l in range(cfg.layers):
        p = f"layer{l}."
        shapes += [
            (p + "attn.qkv.weight", (3 * C, C)), (p + "attn.qkv.bias", (3 * C,)),
            (p + "attn.proj.weight", (C, C)), (p + "attn.proj.bias", (C,)),
            (p + "ln1.weight", (C,)), (p + "ln1.bias", (C,)),
            (p + "mlp.fc.weight", (4 * C, C)), (p + "mlp.fc.bias", (4 * C,)),
            (p + "mlp.proj.weight", (C, 4 * C)), (p + "mlp.proj.bias", (C,)),
            (p + "ln2.weight", (C,)), (p + "ln2.bias", (C,)),
        ]
    return shapes + [("mlm.dense.weight", (C, C)), ("mlm.dense.bias", (C,)),
                     ("mlm.ln.weight", (C,)), ("mlm.ln.bias", (C,)),
                     ("mlm.decoder_bias", (V,))]


def init_params(shapes, gen: torch.Generator, perturb: float = 0.0,
                dtype=torch.float32) -> dict[str, torch.Tensor]:
    """Matrices/embeddings ~ N(0, 0.02); biases 0; LayerNorm weight 1, bias 0.

    With ``perturb > 0`` every 1-D parameter (biases, LayerNorm weights and
    biases) additionally gets N(0, perturb) noise so its gradient is non-trivial.
    """
    params = {}
    for name, shape in shapes:
        if len(shape) >= 2:
            t = torch.randn(shape, generator=gen, dtype=torch.float64) * 0.02
        else:
            is_ln_weight = name.endswith(".weight")  # the only 1-D weights are LN
            t = torch.full(shape, 1.0 if is_ln_weight else 0.0, dtype=torch.float64)
            if perturb > 0:
                t += torch.randn(shape, generator=gen, dtype=torch.float64) * perturb
        params[name] = t.to(dtype)
    return params


def gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


def gelu_erf(x):
    return F.gelu(x)


def attention(x, p: dict, prefix: str, heads: int, causal: bool,
              key_mask=None, sdpa: bool = False):
    """Multi-head self-attention incl. the output projection.

    ``key_mask`` (B, T): 1 = real token, 0 = padding (key gets -inf).
    ``sdpa`` uses F.scaled_dot_product_attention (same math, faster).
    """
    B, T, C = x.shape
    hd = C // heads
    qkv = F.linear(x, p[prefix + "attn.qkv.weight"], p[prefix + "attn.qkv.bias"])
    q, k, v = (t.view(B, T, heads, hd).transpose(1, 2) for t in qkv.split(C, dim=-1))
    if sdpa and key_mask is None:
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    else:
        scores = q @ k.transpose(-2, -1) / math.sqrt(hd)
        if causal:
            future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            scores = scores.masked_fill(future, float("-inf"))
        if key_mask is not None:
            scores = scores.masked_fill(key_mask[:, None, None, :] == 0, float("-inf"))
        out = scores.softmax(dim=-1) @ v
    out = out.transpose(1, 2).reshape(B, T, C)
    return F.linear(out, p[prefix + "attn.proj.weight"], p[prefix + "attn.proj.bias"])


def _ln(x, p, prefix, eps):
    return F.layer_norm(x, x.shape[-1:], p[prefix + ".weight"], p[prefix + ".bias"], eps)


def _mlp(x, p, prefix, act):
    h = act(F.linear(x, p[prefix + "mlp.fc.weight"], p[prefix + "mlp.fc.bias"]))
    return F.linear(h, p[prefix + "mlp.proj.weight"], p[prefix + "mlp.proj.bias"])


def _loss(logits, targets):
    if targets is None:
        return None
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                           targets.reshape(-1).long(), ignore_index=-1)


def gpt_forward(p: dict, cfg: Config, input_ids, targets=None, sdpa=False):
    """Returns (logits (B,T,V), loss or None, hidden_states list of L+1).

    hidden_states[l] is the residual stream entering layer l, and
    hidden_states[L] is the final_ln output (HF output_hidden_states convention).
    """
    T = input_ids.shape[1]
    x = p["embed.tokens"][input_ids.long()] + p["embed.positions"][:T]
    hidden = []
    for l in range(cfg.layers):
        pre = f"layer{l}."
        hidden.append(x)
        x = x + attention(_ln(x, p, pre + "ln1", GPT_LN_EPS), p, pre, cfg.heads,
                          causal=True, sdpa=sdpa)
        x = x + _mlp(_ln(x, p, pre + "ln2", GPT_LN_EPS), p, pre, gelu_tanh)
    x = _ln(x, p, "final_ln", GPT_LN_EPS)
    hidden.append(x)
    logits = x @ p["embed.tokens"].T
    return logits, _loss(logits, targets), hidden


def bert_forward(p: dict, cfg: Config, input_ids, token_type_ids, attention_mask,
                 targets=None, sdpa=False):
    """Returns (logits (B,T,V), loss or None, hidden_states list of L+1).

    hidden_states[0] is the embedding-LN output, hidden_states[l+1] the output
    of layer l.
    """
    T = input_ids.shape[1]
    x = (p["embed.tokens"][input_ids.long()] + p["embed.positions"][:T]
         + p["embed.token_types"][token_type_ids.long()])
    x = _ln(x, p, "embed.ln", BERT_LN_EPS)
    hidden = [x]
    for l in range(cfg.layers):
        pre = f"layer{l}."
        x = _ln(x + attention(x, p, pre, cfg.heads, causal=False,
                              key_mask=attention_mask, sdpa=sdpa),
                p, pre + "ln1", BERT_LN_EPS)
        x = _ln(x + _mlp(x, p, pre, gelu_erf), p, pre + "ln2", BERT_LN_EPS)
        hidden.append(x)
    h = gelu_erf(F.linear(x, p["mlm.dense.weight"], p["mlm.dense.bias"]))
    h = _ln(h, p, "mlm.ln", BERT_LN_EPS)
    logits = h @ p["embed.tokens"].T + p["mlm.decoder_bias"]
    return logits, _loss(logits, targets), hidden


def make_adamw(params: dict, lr, betas, eps, weight_decay):
    """torch AdamW; weight decay only on parameters with 2 or more dims."""
    decay = [t for t in params.values() if t.dim() >= 2]
    no_decay = [t for t in params.values() if t.dim() < 2]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": weight_decay},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=lr, betas=betas, eps=eps)
