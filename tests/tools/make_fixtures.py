#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
# ShardScope - reference fixture generator.
# Copyright (C) The ShardScope authors.
#
# This program is free software: you can redistribute it and/or modify it under
# the terms of the GNU General Public License as published by the Free Software
# Foundation, either version 3 of the License, or (at your option) any later
# version. This program is distributed in the hope that it will be useful, but
# WITHOUT ANY WARRANTY; see the GNU General Public License for more details.
# You should have received a copy of it along with this program; if not, see
# <https://www.gnu.org/licenses/>.
"""Write the tiny GPT and BERT reference fixtures (safetensors) for the C++ tests.

Everything is computed in float64 from float32-representable inputs and stored
as float32 / int32. See tests/tools/README.md for the file contents.

    python tests/tools/make_fixtures.py               # writes tests/fixtures/*.safetensors
    python tests/tools/make_fixtures.py --check-hf    # also compare with HF transformers
"""
from __future__ import annotations

import argparse
import json
import pathlib
import struct
import sys

import torch
from safetensors.torch import load_file

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import reference_models as rm  # noqa: E402

CFG = rm.Config(vocab=50, max_seq=16, channels=32, layers=2, heads=4)
BATCH, SEQ, SEED = 2, 8, 1234
ADAMW = dict(lr=1e-2, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.1,
             max_grad_norm=1.0, steps=10)
F64 = torch.float64


def save_safetensors(path, tensors, metadata):
    """Write a safetensors file with a byte-reproducible header.

    (safetensors' own writer stores ``__metadata__`` in hash order, so the bytes
    would change on every run.) Tensors are laid out in insertion order.
    """
    dtypes = {torch.float32: "F32", torch.int32: "I32"}
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name, t in tensors.items():
        data = t.contiguous().numpy().tobytes()
        header[name] = {"dtype": dtypes[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)  # pad so the data starts 8-byte aligned
    path.write_bytes(struct.pack("<Q", len(head)) + head + b"".join(blobs))
    back = load_file(str(path))  # round-trip through the official reader
    assert all(torch.equal(back[k], v) for k, v in tensors.items())


def make_gpt_case(gen):
    """Params (f64 holding f32 values) and inputs for the GPT fixture."""
    params = rm.init_params(rm.gpt_param_shapes(CFG), gen, perturb=0.1)
    ids = torch.randint(0, CFG.vocab, (BATCH, SEQ), generator=gen, dtype=torch.int32)
    targets = torch.randint(0, CFG.vocab, (BATCH, SEQ), generator=gen, dtype=torch.int32)
    targets[1, 2] = -1  # one ignored position
    inputs = dict(input_ids=ids, targets=targets)

    def forward(p):
        return rm.gpt_forward(p, CFG, ids, targets)
    return params, inputs, forward


def make_bert_case(gen):
    """Params and inputs for the BERT fixture (row 1 has its last 2 positions padded)."""
    params = rm.init_params(rm.bert_param_shapes(CFG), gen, perturb=0.1)
    ids = torch.randint(1, CFG.vocab, (BATCH, SEQ), generator=gen, dtype=torch.int32)
    mask = torch.ones(BATCH, SEQ, dtype=torch.int32)
    mask[1, -2:] = 0
    ids[mask == 0] = 0  # pad token id 0
    types = torch.zeros(BATCH, SEQ, dtype=torch.int32)
    targets = torch.full((BATCH, SEQ), -1, dtype=torch.int32)
    for b in range(BATCH):  # 4 masked-LM targets per row, on real tokens only
        real = int(mask[b].sum())
        pos = torch.randperm(real, generator=gen)[:4]
        targets[b, pos] = torch.randint(0, CFG.vocab, (4,), generator=gen, dtype=torch.int32)
    inputs = dict(input_ids=ids, targets=targets, attention_mask=mask, token_type_ids=types)

    def forward(p):
        return rm.bert_forward(p, CFG, ids, types, mask, targets)
    return params, inputs, forward


def grads_at(params, forward):
    """(logits, loss, hidden_states, grads) at ``params`` in float64."""
    p = {n: t.to(F64).requires_grad_(True) for n, t in params.items()}
    logits, loss, hidden = forward(p)
    grads = torch.autograd.grad(loss, list(p.values()))
    return logits.detach(), loss.detach(), [h.detach() for h in hidden], dict(zip(p, grads))


def adamw_run(params, forward):
    """The spec's 10-step AdamW run: same batch, clip to max norm, constant lr."""
    p = {n: t.to(F64).clone().requires_grad_(True) for n, t in params.items()}
    opt = rm.make_adamw(p, ADAMW["lr"], (ADAMW["beta1"], ADAMW["beta2"]),
                        ADAMW["eps"], ADAMW["weight_decay"])
    losses, norms = [], []
    for _ in range(ADAMW["steps"]):
        opt.zero_grad()
        loss = forward(p)[1]
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(list(p.values()), ADAMW["max_grad_norm"])
        losses.append(loss.item())
        norms.append(norm.item())
        opt.step()
    return losses, norms, {n: t.detach() for n, t in p.items()}


def fd_check(params, forward, grads, gen, n=2, h=1e-5):
    """Central finite differences on ``n`` random gradient entries (float64)."""
    names = list(params)
    worst = 0.0
    for _ in range(n):
        while True:  # pick an entry with a non-negligible gradient
            name = names[int(torch.randint(len(names), (1,), generator=gen))]
            idx = int(torch.randint(params[name].numel(), (1,), generator=gen))
            if abs(grads[name].reshape(-1)[idx].item()) > 1e-6:
                break
        losses = []
        for sign in (1, -1):
            p = {k: v.to(F64).clone() for k, v in params.items()}
            p[name].view(-1)[idx] += sign * h
            losses.append(forward(p)[1].item())
        fd = (losses[0] - losses[1]) / (2 * h)
        ad = grads[name].reshape(-1)[idx].item()
        rel = abs(fd - ad) / max(abs(ad), 1e-12)
        worst = max(worst, rel)
        print(f"  fd check {name}[{idx}]: autograd {ad:+.10e} fd {fd:+.10e} rel err {rel:.2e}")
    return worst


def build(model, out_dir, gen):
    params, inputs, forward = (make_gpt_case if model == "gpt" else make_bert_case)(gen)
    logits, loss, hidden, grads = grads_at(params, forward)
    losses, norms, after = adamw_run(params, forward)
    worst = fd_check(params, forward, grads, gen)
    assert worst < 1e-5, f"finite-difference check failed: rel err {worst}"

    f32 = lambda t: t.to(torch.float32).contiguous()  # noqa: E731
    tensors = {f"param.{n}": f32(t) for n, t in params.items()}
    tensors.update({k: v.contiguous() for k, v in inputs.items()})
    tensors.update(logits=f32(logits), loss=f32(loss.reshape(1)),
                   hidden_states=f32(torch.stack(hidden)),
                   adamw_losses=f32(torch.tensor(losses)),
                   adamw_grad_norms=f32(torch.tensor(norms)))
    tensors.update({f"grad.{n}": f32(g) for n, g in grads.items()})
    tensors.update({f"param_after_10.{n}": f32(t) for n, t in after.items()})

    meta = dict(model=model, vocab=CFG.vocab, max_seq=CFG.max_seq, channels=CFG.channels,
                layers=CFG.layers, heads=CFG.heads, batch=BATCH, seq=SEQ, seed=SEED,
                lr=ADAMW["lr"], beta1=ADAMW["beta1"], beta2=ADAMW["beta2"], eps=ADAMW["eps"],
                weight_decay=ADAMW["weight_decay"], max_grad_norm=ADAMW["max_grad_norm"],
                adamw_steps=ADAMW["steps"],
                ln_eps=rm.GPT_LN_EPS if model == "gpt" else rm.BERT_LN_EPS)
    path = out_dir / f"{model}_tiny_reference.safetensors"
    save_safetensors(path, tensors, {k: repr(v) if isinstance(v, float) else str(v)
                                     for k, v in meta.items()})
    print(f"{path}: {path.stat().st_size} bytes, loss {loss.item():.6f}, "
          f"adamw losses {losses[0]:.4f} -> {losses[-1]:.4f}")
    return params, inputs, logits, hidden


def check_hf(model, params, inputs, logits, hidden):
    """Compare against HF GPT2LMHeadModel / BertForMaskedLM (float64, eval)."""
    try:
        import transformers as tf
    except ImportError:
        print("  --check-hf: transformers not installed, skipping")
        return
    p = {n: t.to(F64) for n, t in params.items()}
    ids = inputs["input_ids"].long()
    sd = {}
    if model == "gpt":
        conf = tf.GPT2Config(vocab_size=CFG.vocab, n_positions=CFG.max_seq, n_embd=CFG.channels,
                             n_layer=CFG.layers, n_head=CFG.heads, layer_norm_epsilon=rm.GPT_LN_EPS,
                             activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0,
                             attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)
        hf = tf.GPT2LMHeadModel(conf)
        sd["transformer.wte.weight"] = p["embed.tokens"]
        sd["transformer.wpe.weight"] = p["embed.positions"]
        sd["lm_head.weight"] = p["embed.tokens"]
        sd["transformer.ln_f.weight"] = p["final_ln.weight"]
        sd["transformer.ln_f.bias"] = p["final_ln.bias"]
        for l in range(CFG.layers):  # HF Conv1D weights are (in, out): transpose
            s, h = f"layer{l}.", f"transformer.h.{l}."
            for ours, theirs, transpose in [
                    ("ln1", "ln_1", False), ("ln2", "ln_2", False),
                    ("attn.qkv", "attn.c_attn", True), ("attn.proj", "attn.c_proj", True),
                    ("mlp.fc", "mlp.c_fc", True), ("mlp.proj", "mlp.c_proj", True)]:
                w = p[s + ours + ".weight"]
                sd[h + theirs + ".weight"] = w.T if transpose else w
                sd[h + theirs + ".bias"] = p[s + ours + ".bias"]
        kwargs = dict(input_ids=ids)
    else:
        C = CFG.channels
        conf = tf.BertConfig(vocab_size=CFG.vocab, hidden_size=C, num_hidden_layers=CFG.layers,
                             num_attention_heads=CFG.heads, intermediate_size=4 * C,
                             hidden_act="gelu", max_position_embeddings=CFG.max_seq,
                             type_vocab_size=2, layer_norm_eps=rm.BERT_LN_EPS,
                             hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        hf = tf.BertForMaskedLM(conf)
        e = "bert.embeddings."
        sd[e + "word_embeddings.weight"] = p["embed.tokens"]
        sd[e + "position_embeddings.weight"] = p["embed.positions"]
        sd[e + "token_type_embeddings.weight"] = p["embed.token_types"]
        sd[e + "LayerNorm.weight"] = p["embed.ln.weight"]
        sd[e + "LayerNorm.bias"] = p["embed.ln.bias"]
        for l in range(CFG.layers):
            s, h = f"layer{l}.", f"bert.encoder.layer.{l}."
            q, k, v = p[s + "attn.qkv.weight"].split(C)
            qb, kb, vb = p[s + "attn.qkv.bias"].split(C)
            sd.update({h + "attention.self.query.weight": q, h + "attention.self.query.bias": qb,
                       h + "attention.self.key.weight": k, h + "attention.self.key.bias": kb,
                       h + "attention.self.value.weight": v, h + "attention.self.value.bias": vb})
            for ours, theirs in [("attn.proj", "attention.output.dense"),
                                 ("ln1", "attention.output.LayerNorm"),
                                 ("mlp.fc", "intermediate.dense"),
                                 ("mlp.proj", "output.dense"), ("ln2", "output.LayerNorm")]:
                sd[h + theirs + ".weight"] = p[s + ours + ".weight"]
                sd[h + theirs + ".bias"] = p[s + ours + ".bias"]
        c = "cls.predictions."
        sd[c + "transform.dense.weight"] = p["mlm.dense.weight"]
        sd[c + "transform.dense.bias"] = p["mlm.dense.bias"]
        sd[c + "transform.LayerNorm.weight"] = p["mlm.ln.weight"]
        sd[c + "transform.LayerNorm.bias"] = p["mlm.ln.bias"]
        sd[c + "decoder.weight"] = p["embed.tokens"]
        sd[c + "bias"] = p["mlm.decoder_bias"]
        kwargs = dict(input_ids=ids, attention_mask=inputs["attention_mask"].long(),
                      token_type_ids=inputs["token_type_ids"].long())
    hf = hf.double().eval()
    missing, unexpected = hf.load_state_dict(sd, strict=False)
    missing = [m for m in missing if not m.endswith(("position_ids", "decoder.bias"))]
    if missing or unexpected:
        print(f"  HF load: missing {missing}, unexpected {unexpected}")
    with torch.no_grad():
        out = hf(**kwargs, output_hidden_states=True)
    d_logits = (out.logits - logits).abs().max().item()
    d_hidden = max((a - b).abs().max().item() for a, b in zip(out.hidden_states, hidden))
    print(f"  HF {type(hf).__name__} (transformers {tf.__version__}): "
          f"max |logits diff| {d_logits:.3e}, max |hidden_states diff| {d_hidden:.3e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", type=pathlib.Path,
                    default=pathlib.Path(__file__).resolve().parents[1] / "fixtures")
    ap.add_argument("--check-hf", action="store_true",
                    help="compare logits with HF transformers (if installed)")
    args = ap.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    torch.use_deterministic_algorithms(True)
    for model in ("gpt", "bert"):
        gen = torch.Generator().manual_seed(SEED)
        print(f"[{model}]")
        params, inputs, logits, hidden = build(model, args.out_dir, gen)
        if args.check_hf:
            check_hf(model, params, inputs, logits, hidden)


if __name__ == "__main__":
    main()
