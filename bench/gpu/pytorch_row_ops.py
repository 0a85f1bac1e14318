#!/usr/bin/env python3
# PyTorch eager's fp32 row ops at the shapes of bench_row_ops (gpt2-124m:
# B=16, T=1024, C=768, H=12, V=50257), timed the same way: synchronize around
# each op, median of --reps after two warm-ups. The yardstick for ShardScope's
# CUDA row kernels (bench/gpu/run_gpu_bench.sh prints both), and bf16
# scaled_dot_product_attention (causal) for the fused attention kernels.
# SPDX-License-Identifier: GPL-3.0-or-later
import argparse
import statistics
import time

import torch
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--reps", type=int, default=20)
p.add_argument("--batch", type=int, default=16)
p.add_argument("--seq", type=int, default=1024)
a = p.parse_args()
B, T, C, H, V = a.batch, a.seq, 768, 12, 50257
dev = "cuda"
x = torch.randn(B * T, C, device=dev, requires_grad=True)
w = torch.randn(C, device=dev, requires_grad=True)
b = torch.randn(C, device=dev, requires_grad=True)
dy = torch.randn(B * T, C, device=dev)
scores = torch.randn(B, H, T, T, device=dev) * 8
causal = torch.ones(T, T, device=dev, dtype=torch.bool).triu(1)
probs = torch.softmax(scores, -1)
dprobs = torch.randn_like(probs)
logits = (torch.randn(B * T, V, device=dev) * 8).requires_grad_(True)
targets = torch.randint(0, V, (B * T,), device=dev)


def run(name, fn):
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(a.reps):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    print(f"pytorch {name:34s} {statistics.median(times) * 1e3:9.3f} ms")


y = F.layer_norm(x, (C,), w, b)
run("layernorm_forward", lambda: F.layer_norm(x.detach(), (C,), w.detach(), b.detach()))
run("layernorm_backward (+ dw, db)", lambda: torch.autograd.grad(y, (x, w, b), dy, retain_graph=True))
run("attention softmax causal", lambda: torch.softmax(scores.masked_fill(causal, float("-inf")), -1))
run("attention softmax full", lambda: torch.softmax(scores, -1))
run("attention softmax backward", lambda: torch._softmax_backward_data(dprobs, probs, -1, torch.float32))
run("cross_entropy_forward", lambda: F.cross_entropy(logits.detach(), targets))
loss = F.cross_entropy(logits, targets)
run("cross_entropy_backward", lambda: torch.autograd.grad(loss, logits, retain_graph=True))

hd = C // H
q, k, v = (torch.randn(B, H, T, hd, device=dev, dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
do = torch.randn(B, H, T, hd, device=dev, dtype=torch.bfloat16)
o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
run("attention fwd causal bf16 sdpa", lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
run("attention bwd causal bf16 sdpa", lambda: torch.autograd.grad(o, (q, k, v), do, retain_graph=True))
