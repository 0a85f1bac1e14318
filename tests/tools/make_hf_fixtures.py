#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixtures for the Hugging Face model tests (tests/engine/test_hf_model.cpp),
written with transformers into tests/fixtures/hf/:

  minilm_hidden_states.safetensors   all-MiniLM-L6-v2 (scripts/fetch_minilm.sh): for 5 short
                                      English and Chinese sentences, s<k>.input_ids (T) from
                                      transformers' tokenizer and s<k>.hidden_states (L+1, T, C)
                                      with output_hidden_states=True; metadata "sentences" (JSON)
  gpt2_tiny/, bert_tiny/             transformers-made GPT2LMHeadModel / BertForMaskedLM (random
                                      init, every tensor perturbed so biases and LayerNorms are not
                                      0 and 1), saved with save_pretrained
  tiny_reference.safetensors         their logits, loss and hidden states (L+1, T, C) on a fixed token
                                      sequence (gpt2.* causal LM loss; bert.* MLM loss on labelled positions)
  shardscope_gpt2/, shardscope_bert/ written by ShardScope (the test binary, below)
  shardscope_logits.safetensors      what transformers computes from those, loaded with
                                      from_pretrained (the script fails on any missing,
                                      unexpected or mismatched key)

Usage (from the repository root, after building test_hf_model):
  /work/venv/bin/python tests/tools/make_hf_fixtures.py --test-binary build/tests/test_hf_model
"""
import argparse
import json
import os
import subprocess
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import (AutoModel, AutoTokenizer, BertConfig, BertForMaskedLM, GPT2Config, GPT2LMHeadModel)

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "fixtures" / "hf"
MINILM = Path(os.environ.get("SHARDSCOPE_MODEL_CACHE", Path.home() / ".cache" / "shardscope")) / "all-MiniLM-L6-v2"

SENTENCES = [
    "The cat sat on the mat.",
    "Transformers learn from data!",
    "我爱北京。",
    "今天天气很好",
    "Hello 世界, ShardScope.",
]
# A fixed sequence for the tiny models (ids < 260: the byte tokenizer's range).
TOKENS = [7, 201, 33, 150, 99, 3, 250, 18, 64, 120, 5, 77, 230, 41, 12, 199, 88, 2, 140, 61, 255, 9, 174, 30]


def minilm_hidden_states():
    tok = AutoTokenizer.from_pretrained(MINILM)
    model = AutoModel.from_pretrained(MINILM).eval()
    tensors = {}
    for k, text in enumerate(SENTENCES):
        enc = tok(text, return_tensors="pt")
        with torch.no_grad():
            out = model(**enc, output_hidden_states=True)
        tensors[f"s{k}.input_ids"] = enc["input_ids"][0].to(torch.int32).contiguous()
        tensors[f"s{k}.hidden_states"] = torch.stack([h[0] for h in out.hidden_states]).float().contiguous()
    save_file(tensors, OUT / "minilm_hidden_states.safetensors",
              metadata={"sentences": json.dumps(SENTENCES, ensure_ascii=False), "model": "all-MiniLM-L6-v2"})


def perturb(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=g))


def gpt2_tiny():
    torch.manual_seed(1)
    config = GPT2Config(vocab_size=300, n_positions=32, n_embd=32, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(config).eval()
    perturb(model, 2)
    model.save_pretrained(OUT / "gpt2_tiny", safe_serialization=True)
    ids = torch.tensor([TOKENS])
    with torch.no_grad():
        out = model(ids, labels=ids, output_hidden_states=True)  # transformers shifts: t predicts t + 1
    return {"gpt2.input_ids": ids[0].to(torch.int32), "gpt2.logits": out.logits[0].float(),
            "gpt2.loss": out.loss.reshape(1).float(),
            "gpt2.hidden_states": torch.stack([h[0] for h in out.hidden_states]).float()}


def bert_labels():
    labels = torch.full((len(TOKENS),), -100)
    for i in (1, 4, 9, 15, 22):
        labels[i] = TOKENS[(i * 7) % len(TOKENS)]
    return labels


def bert_tiny():
    torch.manual_seed(3)
    config = BertConfig(vocab_size=300, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=128, max_position_embeddings=32)
    model = BertForMaskedLM(config).eval()
    perturb(model, 4)
    model.save_pretrained(OUT / "bert_tiny", safe_serialization=True)
    ids, labels = torch.tensor([TOKENS]), bert_labels()
    with torch.no_grad():
        out = model(ids, labels=labels[None], output_hidden_states=True)
    return {"bert.input_ids": ids[0].to(torch.int32), "bert.labels": labels.to(torch.int32),
            "bert.logits": out.logits[0].float(), "bert.loss": out.loss.reshape(1).float(),
            "bert.hidden_states": torch.stack([h[0] for h in out.hidden_states]).float()}


def load_strict(cls, path):
    model, info = cls.from_pretrained(path, output_loading_info=True)
    bad = {k: v for k, v in info.items() if v}
    if bad:
        raise SystemExit(f"{path}: transformers reports {bad}")
    return model.eval()


def shardscope_logits(test_binary):
    env = dict(os.environ, SHARDSCOPE_HF_FIXTURE_OUT=str(OUT))
    subprocess.run([test_binary, "written_dirs_match_the_committed_ones"], check=True, env=env)
    ids = torch.tensor([TOKENS])
    tensors = {"input_ids": ids[0].to(torch.int32)}
    for name, cls in (("gpt2", GPT2LMHeadModel), ("bert", BertForMaskedLM)):
        model = load_strict(cls, OUT / f"shardscope_{name}")
        with torch.no_grad():
            tensors[f"{name}.logits"] = model(ids).logits[0].float().contiguous()
    save_file(tensors, OUT / "shardscope_logits.safetensors")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--test-binary", required=True, help="build/tests/test_hf_model")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    minilm_hidden_states()
    reference = {**gpt2_tiny(), **bert_tiny()}
    save_file({k: v.contiguous() for k, v in reference.items()}, OUT / "tiny_reference.safetensors")
    shardscope_logits(args.test_binary)


if __name__ == "__main__":
    main()
