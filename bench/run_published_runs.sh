#!/usr/bin/env bash
# The GPU time model (shardscope-cli estimate --gpu, docs/ESTIMATE.md) against published training
# runs: each run's layout goes to `estimate --json`, and the model's prediction is printed beside
# the published figure with the error. One set of constants for all (the GPU profiles' datasheet
# peaks, the default efficiency): nothing here is tuned per run. docs/PERFORMANCE.md keeps the
# table, each figure's source and where the error comes from.
#   bench/run_published_runs.sh
# SPDX-License-Identifier: GPL-3.0-or-later
set -euo pipefail
cd "$(dirname "$0")/.."
cli=build/app/shardscope-cli
runs=bench/published_runs
[ -x "$cli" ] || { echo "build first: bash scripts/build.sh" >&2; exit 2; }

# run NAME METRIC PUBLISHED ESTIMATE-FLAGS...: METRIC is a key of the JSON's "time" object.
run() {
  local name=$1 metric=$2 published=$3
  shift 3
  "$cli" estimate --json "$@" | python3 -c '
import json, sys
name, metric, published = sys.argv[1], sys.argv[2], float(sys.argv[3])
t = json.load(sys.stdin)["time"]
predicted = t[metric] * (100 if metric == "mfu" else 1)
error, gpu = 100 * (predicted / published - 1), t["gpu"]
print(f"{name:<44} {gpu:<10} {metric:<21} {predicted:>10.1f} {published:>10.1f} {error:>+7.1f}%")
' "$name" "$metric" "$published"
}

printf '%-44s %-10s %-21s %10s %10s %8s\n' run gpu metric predicted published error
# llm.c GPT-2 124M, 8 x A100 80GB: bf16, ZeRO-1, 64 x 1024 tokens per GPU, 0.5M per step (Discussion #481).
run "llm.c GPT-2 124M, 8 x A100-80GB" mfu 60 --model gpt2-124m --dp 8 --zero 1 --precision bf16 \
  --micro-batch 64 --seq 1024 --device cuda --gpu A100-80GB
# llm.c GPT-2 1.5B, 8 x H100: bf16, ZeRO-1, 16 x 1024 per GPU, 1M tokens per step (Discussion #677).
run "llm.c GPT-2 1.5B, 8 x H100" mfu 50 --model "$runs/gpt2-1558m_config.json" --dp 8 --zero 1 \
  --precision bf16 --micro-batch 16 --seq 1024 --accum 8 --device cuda --gpu H100
# torchtitan Llama 3.1 8B, 8 x H100: FSDP (ZeRO-3), selective AC, local batch 2 x 8192
# (benchmarks/llama3_h100_202412_torchtitan.md, Table 1, FSDP without compile or Float8).
run "torchtitan Llama 3.1 8B, 8 x H100, FSDP" tokens_per_s_per_gpu 5762 \
  --model "$runs/llama-3.1-8b_config.json" --dp 8 --zero 3 --precision bf16 --micro-batch 2 --seq 8192 \
  --checkpoint selective --gpu H100
# Megatron-LM GPT-3 175B, 1024 x A100 80GB: tp 8 x pp 8 x dp 16, batch 1536, full recompute
# (Narayanan et al. 2021, sec. 5.1). Each tp group is one 8-GPU node: its all-reduces (6 per layer
# per micro-batch with the recompute) run on NVLink, on the critical path.
run "Megatron-LM GPT-3 175B, 1024 x A100 (tp 8)" tflops_per_gpu 140 \
  --model "$runs/gpt3-175b_config.json" --tp 8 --dp 16 --pp 8 --precision fp16 --micro-batch 1 --seq 2048 \
  --micro-batches 96 --checkpoint full --gpus-per-node 8 --gpu A100-80GB
