#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
# ShardScope - PyTorch CPU training-step baseline.
# Copyright (C) The ShardScope authors.
#
# This program is free software: you can redistribute it and/or modify it under
# the terms of the GNU General Public License as published by the Free Software
# Foundation, either version 3 of the License, or (at your option) any later
# version. This program is distributed in the hope that it will be useful, but
# WITHOUT ANY WARRANTY; see the GNU General Public License for more details.
# You should have received a copy of it along with this program; if not, see
# <https://www.gnu.org/licenses/>.
"""Time fp32 GPT training steps (forward, backward, clip, AdamW) in PyTorch on CPU.

Same architecture and parameter layout as tests/tools/reference_models.py.

    python bench/pytorch_gpt_bench.py --model gpt2-124m --warmup 3 --steps 10 --json
    python bench/pytorch_gpt_bench.py --model gpt-tiny --channels 256 --compile
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import statistics
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "tools"))
import reference_models as rm  # noqa: E402

PRESETS = {
    "gpt2-124m": dict(vocab=50257, max_seq=1024, channels=768, layers=12, heads=12),
    "gpt-tiny": dict(vocab=256, max_seq=256, channels=128, layers=4, heads=4),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=sorted(PRESETS), default="gpt2-124m")
    for flag in ("vocab", "max-seq", "channels", "layers", "heads"):
        ap.add_argument(f"--{flag}", type=int, help="override the preset")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--compile", action="store_true", help="torch.compile the loss function")
    ap.add_argument("--no-sdpa", action="store_true",
                    help="explicit softmax attention instead of scaled_dot_product_attention")
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--dtype", choices=("fp32", "bf16", "fp16"), default="fp32",
                    help="bf16/fp16: torch.autocast around forward and loss (fp32 master weights)")
    ap.add_argument("--json", action="store_true", help="also print one JSON result line")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    cfg = rm.Config(**{k: getattr(args, k) if getattr(args, k) is not None else v
                       for k, v in PRESETS[args.model].items()})
    gen = torch.Generator().manual_seed(0)
    device = torch.device(args.device)
    params = {n: t.to(device).requires_grad_(True)
              for n, t in rm.init_params(rm.gpt_param_shapes(cfg), gen).items()}
    ids = torch.randint(0, cfg.vocab, (args.batch, args.seq), generator=gen).to(device)
    targets = torch.randint(0, cfg.vocab, (args.batch, args.seq), generator=gen).to(device)
    autocast_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(args.dtype)
    scaler = torch.amp.GradScaler(args.device) if args.dtype == "fp16" else None
    opt = rm.make_adamw(params, lr=6e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)

    def loss_fn(p, ids, targets):
        if autocast_dtype is None:
            return rm.gpt_forward(p, cfg, ids, targets, sdpa=not args.no_sdpa)[1]
        with torch.autocast(device_type=device.type, dtype=autocast_dtype):
            return rm.gpt_forward(p, cfg, ids, targets, sdpa=not args.no_sdpa)[1]
    if args.compile:
        loss_fn = torch.compile(loss_fn)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(params, ids, targets)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(list(params.values()), 1.0)
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            torch.nn.utils.clip_grad_norm_(list(params.values()), 1.0)
            opt.step()
        return loss.item()  # waits for the device

    n_params = sum(t.numel() for t in params.values())
    print(f"torch {torch.__version__}, {args.model} {cfg}, {n_params / 1e6:.2f}M params, "
          f"B={args.batch} T={args.seq}, threads={torch.get_num_threads()}, "
          f"compile={args.compile}, sdpa={not args.no_sdpa}, device={args.device}, dtype={args.dtype}")
    times = []
    for i in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        loss = step()
        dt = time.perf_counter() - t0
        kind = "warmup" if i < args.warmup else "step"
        print(f"  {kind} {i:3d}: {dt * 1e3:9.1f} ms  loss {loss:.4f}")
        if i >= args.warmup:
            times.append(dt)

    median, fastest = statistics.median(times), min(times)
    tokens_per_s = args.batch * args.seq / median
    print(f"median step {median * 1e3:.1f} ms, {tokens_per_s:.1f} tokens/s "
          f"(fastest step {fastest * 1e3:.1f} ms)")
    if args.json:
        print(json.dumps({
            "impl": "pytorch-compile" if args.compile else "pytorch-eager",
            "model": args.model, "config": dataclasses.asdict(cfg),
            "batch": args.batch, "seq": args.seq, "threads": args.threads,
            "sdpa": not args.no_sdpa, "median_step_s": median, "min_step_s": fastest,
            "tokens_per_s": tokens_per_s, "torch_version": torch.__version__,
            "device": args.device, "dtype": args.dtype, "parameters": n_params}))


if __name__ == "__main__":
    main()
