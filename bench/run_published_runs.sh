#!/usr/bin/env bash
# The GPU time model (shardscope-cli estimate --gpu, docs/ESTIMATE.md) against published training
# runs: each run's layout goes to `estimate --json`, and the model's prediction is printed beside
# the published figure with the error. One set of constants for all (the GPU profiles' datasheet
# peaks, the measured kernel model of engine/clock/kernel_model.h at the sustained clocks of
# engine/clock/sustained_clock.h, or the flat 0.5 of peak): nothing here is tuned per run;
# each row gives the run's own layout and the attention kernel it ran (--attention flash where the
# run used a fused kernel). docs/PERFORMANCE.md keeps the table, each figure's source and where the
# error comes from.
#   bench/run_published_runs.sh   (SHARDSCOPE_CLI=path: another shardscope-cli; tests/cli/test_published_runs.cpp
#   pins each row's error)
# SPDX-License-Identifier: GPL-3.0-or-later
set -euo pipefail
cd "$(dirname "$0")/.."
cli=${SHARDSCOPE_CLI:-build/app/shardscope-cli}
runs=bench/published_runs
[ -x "$cli" ] || { echo "build first: bash scripts/build.sh" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run NAME METRIC PUBLISHED ESTIMATE-FLAGS...: METRIC is a key of the JSON's "time" object. Each row
# twice: the kernel model (--time-model kernels) and the flat one (--time-model flat, 0.5 of peak).
# time_field FILE KEY: the value of KEY in the "time" object of estimate --json's indented output
# (the object's own keys sit 4 spaces in; nested objects' keys deeper), without quotes.
time_field() {
  awk -v key="$2" '/^  "time": \{/ { inside = 1; next }
    inside && /^  \}/ { inside = 0 }
    inside && index($0, "    \"" key "\": ") == 1 {
      value = substr($0, length(key) + 9); sub(/,$/, "", value); gsub(/"/, "", value); print value }' "$1"
}

# A row with --float8 has no flat figure: the flat model knows one 16-bit peak (estimate refuses the pair);
# the flat run drops the overlap inputs, which it would refuse (it overlaps nothing).
run() {
  local name=$1 metric=$2 published=$3
  shift 3
  "$cli" estimate --json --time-model kernels "$@" >"$tmp/kernels.json"
  local kernels flat=none gpu
  case " $* " in
    *" --float8 "*) ;;
    *) local flat_args=() arg
       for arg in "$@"; do  # the flat model overlaps nothing: it refuses the overlap inputs
         case $arg in --tp-comm-overlap | --async-tp | --overlap-param-gather) ;; *) flat_args+=("$arg") ;; esac
       done
       "$cli" estimate --json --time-model flat "${flat_args[@]}" >"$tmp/flat.json"
       flat=$(time_field "$tmp/flat.json" "$metric") ;;
  esac
  kernels=$(time_field "$tmp/kernels.json" "$metric")
  gpu=$(time_field "$tmp/kernels.json" gpu)
  awk -v name="$name" -v gpu="$gpu" -v metric="$metric" -v k="$kernels" -v f="$flat" -v p="$published" 'BEGIN {
    scale = metric == "mfu" ? 100 : 1; k *= scale
    if (f == "none") flat = sprintf("%10s %8s", "-", "-")
    else { f *= scale; flat = sprintf("%10.1f %+7.1f%%", f, 100 * (f / p - 1)) }
    printf "%-44s %-10s %-21s %10.1f %+7.1f%% %s %10.1f\n", name, gpu, metric, k, 100 * (k / p - 1), flat, p
  }'
}

printf '%-44s %-10s %-21s %10s %8s %10s %8s %10s\n' run gpu metric kernels error "flat 0.5" error published
# llm.c GPT-2 124M, 8 x A100 80GB: bf16, ZeRO-1, 64 x 1024 tokens per GPU, 0.5M per step, cuDNN's
# fused attention (USE_CUDNN=1) (Discussion #481).
run "llm.c GPT-2 124M, 8 x A100-80GB" mfu 60 --model gpt2-124m --dp 8 --zero 1 --precision bf16 \
  --micro-batch 64 --seq 1024 --device cuda --gpu A100-80GB --attention flash
# llm.c GPT-2 1.5B, 8 x H100: bf16, ZeRO-1, 16 x 1024 per GPU, 1M tokens per step, cuDNN attention (Discussion #677).
run "llm.c GPT-2 1.5B, 8 x H100" mfu 50 --model "$runs/gpt2-1558m_config.json" --dp 8 --zero 1 \
  --precision bf16 --micro-batch 16 --seq 1024 --accum 8 --device cuda --gpu H100 --attention flash
# torchtitan Llama 3.1 8B, 8 x H100: FSDP (ZeRO-3), selective AC, local batch 2 x 8192
# (benchmarks/llama3_h100_202412_torchtitan.md, Table 1, FSDP without compile or Float8), PyTorch's
# scaled_dot_product_attention (a flash kernel). Table 3: the same on 128 GPUs (16 nodes).
# Its configuration (torchtitan 9dec370, train_configs/llama3_8b.toml): selective_ac_option "op"
# (--selective-ac op), no compile (--runtime eager: torchtitan's RMSNorm, RoPE and SwiGLU as eager
# ops, foreach AdamW), and the benchmark's own H100s: 96 GB HBM2e at 2.4 TB/s (--gpu-bandwidth 2400).
# Every torchtitan row's FSDP reduces the gradients in fp32 (--reduce-dtype fp32): parallelize_llama.py
# passes training.mixed_precision_reduce, float32, as MixedPrecisionPolicy's reduce_dtype.
tt=(--model "$runs/llama-3.1-8b_config.json" --zero 3 --precision bf16 --micro-batch 2 --seq 8192
  --checkpoint selective --selective-ac op --gpu H100 --gpu-bandwidth 2400 --attention flash --reduce-dtype fp32)
run "torchtitan Llama 3.1 8B, 8 x H100, FSDP" tokens_per_s_per_gpu 5762 "${tt[@]}" --dp 8 --runtime eager
run "torchtitan Llama 3.1 8B, 128 x H100, FSDP" tokens_per_s_per_gpu 5605 "${tt[@]}" --dp 128 --runtime eager
# The same tables' torch.compile rows (6,667 and 6,514): the memory-bound ops fused.
run "torchtitan 8B, 8 x H100, FSDP + compile" tokens_per_s_per_gpu 6667 "${tt[@]}" --dp 8
run "torchtitan 8B, 128 x H100, FSDP + compile" tokens_per_s_per_gpu 6514 "${tt[@]}" --dp 128
# Megatron-LM GPT-3 175B, 1024 x A100 80GB: tp 8 x pp 8 x dp 16, batch 1536, full recompute
# (Narayanan et al. 2021, sec. 5.1), dropout 0.1 as Megatron-LM's GPT-3 scripts. Each tp group is one 8-GPU node: its all-reduces (6 per layer
# per micro-batch with the recompute) run on NVLink, on the critical path.
run "Megatron-LM GPT-3 175B, 1024 x A100 (tp 8)" tflops_per_gpu 140 \
  --model "$runs/gpt3-175b_config.json" --tp 8 --dp 16 --pp 8 --precision fp16 --micro-batch 1 --seq 2048 \
  --micro-batches 96 --checkpoint full --gpus-per-node 8 --gpu A100-80GB --dropout 0.1
# Two more rows of the same paper's Table 1 (GPT models of vocabulary 51,200 and sequence 2048,
# full recompute, the attention core materialized): 18.4B on 256 GPUs (tp 8 x dp 32, batch 1024,
# 135 TFLOP/s) and 1008B on 3072 GPUs (tp 8 x pp 64 x dp 6, batch 3072, 163 TFLOP/s). Their
# micro-batches are the paper's launch script's (NVIDIA/Megatron-LM examples/sc21/run_table_1.sh):
# 8 for 18.4B, 1 for 1008B, which runs the plain 1F1B schedule (no virtual stages).
run "Megatron-LM GPT 18.4B, 256 x A100 (tp 8)" tflops_per_gpu 135 \
  --model "$runs/gpt-18.4b_config.json" --tp 8 --dp 32 --precision fp16 --micro-batch 8 --seq 2048 \
  --accum 4 --checkpoint full --gpus-per-node 8 --gpu A100-80GB --dropout 0.1
run "Megatron-LM GPT 1008B, 3072 x A100 (tp 8, pp 64)" tflops_per_gpu 163 \
  --model "$runs/gpt-1008b_config.json" --tp 8 --dp 6 --pp 64 --precision fp16 --micro-batch 1 --seq 2048 \
  --micro-batches 512 --checkpoint full --gpus-per-node 8 --gpu A100-80GB --dropout 0.1
# FlashAttention-2's end-to-end runs (Dao 2023, Table 1, the FlashAttention-2 column: model TFLOP/s
# per A100 counted as 6·s·N + 12·L·h·s², i.e. MFU × 312) on 8 x A100 80GB, with the configurations of
# Dao-AILab/flash-attention training/configs/experiment/pile/gpt3{xl,-2.7B}-flash{,-8k}.yaml: bf16
# through Lightning's precision "bf16", PyTorch AMP (--autocast),
# ZeRO-1 (DDPStrategyZero1), fused dense, dropout-add-LayerNorm and MLP kernels, dropout 0.1 (GPT-2's
# default), no checkpointing; micro-batches 8 / 4 at 2k and 4 / 4 at 8k, 512 and 128 sequences a step.
fa2=(--dp 8 --zero 1 --precision bf16 --autocast --gpu A100-80GB --attention flash --dropout 0.1)
run "FlashAttention-2 GPT3-1.3B 2k, 8 x A100" mfu 62.82 --model "$runs/gpt3-1.3b_config.json" "${fa2[@]}" \
  --seq 2048 --micro-batch 8 --accum 8
run "FlashAttention-2 GPT3-2.7B 2k, 8 x A100" mfu 65.71 --model "$runs/gpt3-2.7b_config.json" "${fa2[@]}" \
  --seq 2048 --micro-batch 4 --accum 16
run "FlashAttention-2 GPT3-1.3B 8k, 8 x A100" mfu 70.51 --model "$runs/gpt3-1.3b_config.json" "${fa2[@]}" \
  --seq 8192 --micro-batch 4 --accum 4
run "FlashAttention-2 GPT3-2.7B 8k, 8 x A100" mfu 72.12 --model "$runs/gpt3-2.7b_config.json" "${fa2[@]}" \
  --seq 8192 --micro-batch 4 --accum 4
# Megatron-LM's weak-scaling table on H100 (NVIDIA/Megatron-LM README, "Training Speed and Scalability",
# images/model_table.png, added in f2e5db4 and unchanged at d98e8a6): GPT models of vocabulary 131,072
# and sequence 4096 on up to 6144 H100s, per-GPU teraFLOP/s counted by megatron/training/training.py's
# num_floating_point_operations (6N + 12·L·h·s with the logits, no recompute: the same count as
# tflops_per_gpu here). The README's flags and what they imply in arguments.py (f2e5db4):
# --overlap-param-gather asserts the distributed optimizer (--zero 1), --tp-comm-overlap asserts
# sequence parallelism (--sequence-parallel where tp > 1); --transformer-impl defaults to
# transformer_engine (its fused attention: --attention flash), dropouts default to 0.1. bf16: the
# table's MFU is its TFLOP/s over the H100's 989 dense bf16. The README's overlaps as inputs:
# --overlap-param-gather on every row, --tp-comm-overlap where tp > 1 (--overlap-grad-reduce is the
# distributed optimizer's reduce-scatter behind backward, as ZeRO-1 is modelled already). Not in the
# table, assumed: micro-batch 1, the plain 1F1B schedule, no recompute. Batch / dp sequences a step:
# accumulation where pp is 1, pipeline micro-batches otherwise.
mg=(--precision bf16 --zero 1 --micro-batch 1 --seq 4096 --gpu H100 --attention flash --dropout 0.1 --dp 48
  --overlap-param-gather)
mgsp=("${mg[@]}" --sequence-parallel --tp-comm-overlap --tp)
run "Megatron-LM H100 GPT 1.7B, 48 GPUs (dp 48)" tflops_per_gpu 408.8 \
  --model "$runs/megatron-h100-1.7b_config.json" "${mg[@]}" --accum 4
run "Megatron-LM H100 GPT 7.1B, 96 (tp 2)" tflops_per_gpu 465.9 \
  --model "$runs/megatron-h100-7.1b_config.json" "${mgsp[@]}" 2 --accum 4
run "Megatron-LM H100 GPT 16B, 192 (tp 4)" tflops_per_gpu 489.1 \
  --model "$runs/megatron-h100-16b_config.json" "${mgsp[@]}" 4 --accum 4
run "Megatron-LM H100 GPT 32B, 384 (tp 8)" tflops_per_gpu 459.6 \
  --model "$runs/megatron-h100-32b_config.json" "${mgsp[@]}" 8 --accum 4
run "Megatron-LM H100 GPT 70B, 768 (tp 8, pp 2)" tflops_per_gpu 419.7 \
  --model "$runs/megatron-h100-70b_config.json" "${mgsp[@]}" 8 --pp 2 --micro-batches 8
run "Megatron-LM H100 GPT 119B, 1536 (tp 8, pp 4)" tflops_per_gpu 420.5 \
  --model "$runs/megatron-h100-119b_config.json" "${mgsp[@]}" 8 --pp 4 --micro-batches 16
run "Megatron-LM H100 GPT 177B, 2304 (tp 8, pp 6)" tflops_per_gpu 432.8 \
  --model "$runs/megatron-h100-177b_config.json" "${mgsp[@]}" 8 --pp 6 --micro-batches 24
run "Megatron-LM H100 GPT 314B, 3072 (tp 8, pp 8)" tflops_per_gpu 474.4 \
  --model "$runs/megatron-h100-314b_config.json" "${mgsp[@]}" 8 --pp 8 --micro-batches 32
run "Megatron-LM H100 GPT 462B, 6144 (tp 8, pp 16)" tflops_per_gpu 459.9 \
  --model "$runs/megatron-h100-462b_config.json" "${mgsp[@]}" 8 --pp 16 --micro-batches 64
# torchtitan's Float8 rows (benchmarks/llama3_h100_202412_torchtitan.md, the same H100s at 2.4 TB/s and
# 500 W; torchtitan 9dec370, torchao eab345c). Every nn.Linear of the layers becomes torchao's Float8Linear
# (torchtitan/float8.py: all but "output"), tensorwise dynamic scaling, the only recipe of that commit
# (--float8 tensorwise); with torch.compile (fused runtime). The tables do not say whether FSDP gathered in
# FP8; docs/float8.md of the same commit launches with --float8.enable_fsdp_float8_all_gather and
# --float8.precompute_float8_dynamic_scale_for_fsdp, and so does train_configs/llama3_405b.toml
# (--float8-all-gather: assumed for every row).
f8=(--float8 tensorwise --float8-all-gather --reduce-dtype fp32)  # FSDP's fp32 reduction as the rows above
# Tables 1 and 3: FSDP + torch.compile + Float8, as the bf16 rows above (8,532 and 8,380 TPS/GPU).
run "torchtitan 8B, 8 x H100, FSDP + compile + Float8" tokens_per_s_per_gpu 8532 "${tt[@]}" --dp 8 "${f8[@]}"
run "torchtitan 8B, 128 x H100, FSDP + compile + Float8" tokens_per_s_per_gpu 8380 "${tt[@]}" --dp 128 "${f8[@]}"
# Table 2, its context-parallel degree 1 row: 8 GPUs, FSDP 8, sequence 32768, local batch 1, full
# activation checkpointing (3,890). Its context-parallel rows are at the end.
run "torchtitan 8B, 8 x H100, 32k, full AC + Float8" tokens_per_s_per_gpu 3890 \
  --model "$runs/llama-3.1-8b_config.json" --zero 3 --precision bf16 --micro-batch 1 --seq 32768 \
  --checkpoint full --gpu H100 --gpu-bandwidth 2400 --attention flash --dp 8 "${f8[@]}"
# Table 4: Llama 3.1 70B on 256 GPUs, FSDP 32 x TP 8, local batch 16 of 8192 tokens (llama3_70b.toml),
# full activation checkpointing, its row without AsyncTP (829). torchtitan's tensor parallelism splits
# the norms' sequence over the tp ranks (--sequence-parallel).
run "torchtitan 70B, 256 x H100, FSDP 32 x TP 8 + Float8" tokens_per_s_per_gpu 829 \
  --model "$runs/llama-3.1-70b_config.json" --zero 3 --precision bf16 --micro-batch 16 --seq 8192 \
  --checkpoint full --gpu H100 --gpu-bandwidth 2400 --attention flash --dp 32 --tp 8 --sequence-parallel "${f8[@]}"
# The same table's AsyncTP row (876): torchtitan's async tensor parallelism, PyTorch Inductor's
# micro-pipelined tp, fuses each sequence-parallel all-gather and reduce-scatter with its own matmuls,
# split in tp chunks, inside the node (--async-tp: estimate/step_kernels.cpp cites the source).
run "torchtitan 70B, 256 x H100, FSDP 32 x TP 8 + Float8 + AsyncTP" tokens_per_s_per_gpu 876 \
  --model "$runs/llama-3.1-70b_config.json" --zero 3 --precision bf16 --micro-batch 16 --seq 8192 \
  --checkpoint full --gpu H100 --gpu-bandwidth 2400 --attention flash --dp 32 --tp 8 --sequence-parallel \
  --async-tp "${f8[@]}"
# Table 5: Llama 3.1 405B on 512 GPUs, FSDP 8 x TP 8 x PP 8, local batch 32 of 8192 tokens, full activation
# checkpointing, AsyncTP (--async-tp, as Table 4's AsyncTP row). torchtitan 9dec370
# splits the local batch into pp = 8 micro-batches (pipeline_parallel_microbatches' default) and 126 layers
# into 8 stages (generate_split_points: 15, six of 16, 15). Beside pipeline
# parallelism its FSDP keeps the gathered parameters through the step (parallelize_llama.py:
# reshard_after_forward False): one gather a step and, assumed, one reduce-scatter (the gradients synced in
# the last micro-batch's backward), ZeRO-1's bytes (--zero 1; the estimator refuses ZeRO-3 with --pp).
# 1F1B: 100. Its interleaved 1F1B row (128) is not here: 126 layers in 16 stages of 7 and 8, which the
# estimator's interleaved placement (equal chunks, as Megatron-LM's) refuses.
t405=(--model "$runs/llama-3.1-405b_config.json" --zero 1 --precision bf16 --micro-batch 4 --seq 8192
  --micro-batches 8 --checkpoint full --gpu H100 --gpu-bandwidth 2400 --attention flash --dp 8 --tp 8
  --sequence-parallel --async-tp --pp 8 "${f8[@]}")
run "torchtitan 405B, 512 x H100, 1F1B + Float8" tokens_per_s_per_gpu 100 "${t405[@]}"
# Table 6, its context-parallel degree 1 row: the same 405B layout with 1F1B, sequence 32768, local batch 8
# (8 micro-batches of 1) (76).
run "torchtitan 405B, 512 x H100, 32k, 1F1B + Float8" tokens_per_s_per_gpu 76 \
  --model "$runs/llama-3.1-405b_config.json" --zero 1 --precision bf16 --micro-batch 1 --seq 32768 \
  --micro-batches 8 --checkpoint full --gpu H100 --gpu-bandwidth 2400 --attention flash --dp 8 --tp 8 \
  --sequence-parallel --async-tp --pp 8 "${f8[@]}"
# The rest of Megatron-LM's Table 1 (Narayanan et al. 2021, weak scaling on A100 80GB nodes of 8, GPT models
# of vocabulary 51,200 and sequence 2048, per-GPU teraFLOP/s with the recompute counted). Each row's settings
# are the paper's own launch script for that table, NVIDIA/Megatron-LM examples/sc21/run_table_1.sh and
# CONFIG.sh (added in de7dc40): --fp16, --checkpoint-activations (full recompute), the micro-batch below,
# and --num-layers-per-virtual-pipeline-stage on the 76B to 530B rows: the interleaved 1F1B schedule of
# section 2.2.2 with v = layers / (pp x layers per chunk). Not modelled: Megatron-LM's own DDP where pp > 1
# (--DDP-impl local, its all-reduce after backward; the model overlaps it as PyTorch's, used where pp is 1)
# and section 4.1's scatter/gather of the pipeline's messages (the model sends each tp rank's whole
# activation between stages). Dropout 0.1, Megatron-LM's default; the attention core materialized (2021).
m21=(--precision fp16 --seq 2048 --checkpoint full --gpus-per-node 8 --gpu A100-80GB --dropout 0.1)
run "Megatron-LM GPT 1.7B, 32 x A100 (dp 32)" tflops_per_gpu 137 \
  --model "$runs/gpt-1.7b_config.json" --dp 32 --micro-batch 16 --accum 1 "${m21[@]}"
run "Megatron-LM GPT 3.6B, 64 x A100 (tp 2)" tflops_per_gpu 138 \
  --model "$runs/gpt-3.6b_config.json" --tp 2 --dp 32 --micro-batch 16 --accum 1 "${m21[@]}"
run "Megatron-LM GPT 7.5B, 128 x A100 (tp 4)" tflops_per_gpu 142 \
  --model "$runs/gpt-7.5b_config.json" --tp 4 --dp 32 --micro-batch 16 --accum 1 "${m21[@]}"
run "Megatron-LM GPT 39.1B, 512 x A100 (tp 8, pp 2)" tflops_per_gpu 138 \
  --model "$runs/gpt-39.1b_config.json" --tp 8 --pp 2 --dp 32 --micro-batch 4 --micro-batches 12 "${m21[@]}"
run "Megatron-LM GPT 76.1B, 1024 x A100 (pp 4, v 3)" tflops_per_gpu 140 \
  --model "$runs/gpt-76.1b_config.json" --tp 8 --pp 4 --dp 32 --micro-batch 2 --micro-batches 28 \
  --schedule interleaved-1f1b --virtual-stages 3 "${m21[@]}"
run "Megatron-LM GPT 145.6B, 1536 x A100 (pp 8, v 2)" tflops_per_gpu 148 \
  --model "$runs/gpt-145.6b_config.json" --tp 8 --pp 8 --dp 24 --micro-batch 2 --micro-batches 48 \
  --schedule interleaved-1f1b --virtual-stages 2 "${m21[@]}"
run "Megatron-LM GPT 310.1B, 1920 x A100 (pp 16, v 2)" tflops_per_gpu 155 \
  --model "$runs/gpt-310.1b_config.json" --tp 8 --pp 16 --dp 15 --micro-batch 1 --micro-batches 144 \
  --schedule interleaved-1f1b --virtual-stages 2 "${m21[@]}"
run "Megatron-LM GPT 529.6B, 2520 x A100 (pp 35, v 3)" tflops_per_gpu 163 \
  --model "$runs/gpt-529.6b_config.json" --tp 8 --pp 35 --dp 9 --micro-batch 1 --micro-batches 280 \
  --schedule interleaved-1f1b --virtual-stages 3 "${m21[@]}"
# MosaicML llm-foundry's MPT throughput tables (scripts/train/benchmarking/README.md: its "A100 80GB" and
# "H100 80GB BF16" tables as commit b2a43a1 wrote them, unchanged since): 8 GPUs of one node, tokens/s per
# GPU. Each row's micro-batch, accumulation, activation checkpointing and sharding as the table gives them;
# what the table leaves out, from the code that made it (submit_benchmarks.py and sweep.sh at b2a43a1,
# llm-foundry v0.3.0): Composer's amp_bf16 under FSDP mixed precision "DEFAULT" (bf16 parameters gathered
# from fp32 shards, fp32 gradient reduction), FULL_SHARD (--zero 3), attn_impl "triton" (llm-foundry's
# Triton FlashAttention: --attention triton; fp32 gradient reduction: --reduce-dtype fp32), no torch.compile and Composer's per-parameter DecoupledAdamW
# (--runtime eager), no dropout. The MPT models are GPT-2's layout (learned positions, biases, GELU MLP,
# tied head): a gpt2 config, whose parameter count is the table's NumParams.
mpt=(--zero 3 --precision bf16 --dp 8 --attention triton --reduce-dtype fp32 --runtime eager)
run "llm-foundry MPT-350M 2k, 8 x A100" tokens_per_s_per_gpu 58782 --model "$runs/mpt-350m_config.json" "${mpt[@]}" \
  --seq 2048 --gpu A100-80GB --micro-batch 32 --accum 2
run "llm-foundry MPT-1B 2k, 8 x A100" tokens_per_s_per_gpu 20513 --model "$runs/mpt-1b_config.json" "${mpt[@]}" \
  --seq 2048 --gpu A100-80GB --micro-batch 14 --accum 4
run "llm-foundry MPT-3B 2k, 8 x A100" tokens_per_s_per_gpu 10811 --model "$runs/mpt-3b_config.json" "${mpt[@]}" \
  --seq 2048 --gpu A100-80GB --micro-batch 10 --accum 2
run "llm-foundry MPT-7B 2k, 8 x A100" tokens_per_s_per_gpu 4641 --model "$runs/mpt-7b_config.json" "${mpt[@]}" \
  --seq 2048 --gpu A100-80GB --micro-batch 6 --accum 2
run "llm-foundry MPT-13B 2k, 8 x A100" tokens_per_s_per_gpu 2262 --model "$runs/mpt-13b_config.json" "${mpt[@]}" \
  --seq 2048 --gpu A100-80GB --micro-batch 2 --accum 3
run "llm-foundry MPT-30B 2k, 8 x A100, full AC" tokens_per_s_per_gpu 916 --model "$runs/mpt-30b_config.json" \
  "${mpt[@]}" --seq 2048 --gpu A100-80GB --micro-batch 3 --accum 21 --checkpoint full
run "llm-foundry MPT-7B 8k, 8 x A100, full AC" tokens_per_s_per_gpu 3206 --model "$runs/mpt-7b-8k_config.json" \
  "${mpt[@]}" --seq 8192 --gpu A100-80GB --micro-batch 8 --accum 2 --checkpoint full
run "llm-foundry MPT-760M 2k, 8 x H100" tokens_per_s_per_gpu 63147 --model "$runs/mpt-760m_config.json" "${mpt[@]}" \
  --seq 2048 --gpu H100 --micro-batch 24 --accum 2
run "llm-foundry MPT-1B 2k, 8 x H100" tokens_per_s_per_gpu 45455 --model "$runs/mpt-1b_config.json" "${mpt[@]}" \
  --seq 2048 --gpu H100 --micro-batch 14 --accum 1
run "llm-foundry MPT-7B 2k, 8 x H100" tokens_per_s_per_gpu 10643 --model "$runs/mpt-7b_config.json" "${mpt[@]}" \
  --seq 2048 --gpu H100 --micro-batch 6 --accum 1
run "llm-foundry MPT-13B 2k, 8 x H100" tokens_per_s_per_gpu 4792 --model "$runs/mpt-13b_config.json" "${mpt[@]}" \
  --seq 2048 --gpu H100 --micro-batch 2 --accum 1
run "llm-foundry MPT-30B 2k, 8 x H100, full AC" tokens_per_s_per_gpu 2002 --model "$runs/mpt-30b_config.json" \
  "${mpt[@]}" --seq 2048 --gpu H100 --micro-batch 3 --accum 21 --checkpoint full
run "llm-foundry MPT-7B 8k, 8 x H100, full AC" tokens_per_s_per_gpu 6935 --model "$runs/mpt-7b-8k_config.json" \
  "${mpt[@]}" --seq 8192 --gpu H100 --micro-batch 8 --accum 2 --checkpoint full
# Tables 2 and 6, their context-parallel rows: each sequence split over cp ranks (torchtitan 9dec370 applies
# PyTorch's context_parallel to every layer's scaled_dot_product_attention, rotate method "allgather" by
# default, the causal load balance on; FSDP shards over the dp_shard × cp ranks), the FSDP degree the
# table's, local batch 1 per FSDP rank as the cp 1 rows, everything else as those rows. Table 2: 8 GPUs,
# one node (2,540, 1,071 and 548).
t2=(--model "$runs/llama-3.1-8b_config.json" --zero 3 --precision bf16 --micro-batch 1 --checkpoint full --gpu H100
  --gpu-bandwidth 2400 --attention flash "${f8[@]}")
run "torchtitan 8B, 8 x H100, 64k, FSDP 4 x CP 2" tokens_per_s_per_gpu 2540 "${t2[@]}" --seq 65536 --dp 4 --cp 2
run "torchtitan 8B, 8 x H100, 128k, FSDP 2 x CP 4" tokens_per_s_per_gpu 1071 "${t2[@]}" --seq 131072 --dp 2 --cp 4
run "torchtitan 8B, 8 x H100, 256k, FSDP 1 x CP 8" tokens_per_s_per_gpu 548 "${t2[@]}" --seq 262144 --dp 1 --cp 8
# Table 6: the 405B layout above (TP 8 x PP 8, 1F1B, 8 micro-batches of 1), cp × tp GPUs a cp group: its
# ranks in different nodes (47, 31 and 16).
t6=(--model "$runs/llama-3.1-405b_config.json" --zero 1 --precision bf16 --micro-batch 1 --micro-batches 8
  --checkpoint full --gpu H100 --gpu-bandwidth 2400 --attention flash --tp 8 --sequence-parallel --async-tp
  --pp 8 "${f8[@]}")
run "torchtitan 405B, 512 x H100, 64k, FSDP 4 x CP 2" tokens_per_s_per_gpu 47 "${t6[@]}" --seq 65536 --dp 4 --cp 2
run "torchtitan 405B, 512 x H100, 128k, FSDP 2 x CP 4" tokens_per_s_per_gpu 31 "${t6[@]}" --seq 131072 --dp 2 --cp 4
run "torchtitan 405B, 512 x H100, 256k, FSDP 1 x CP 8" tokens_per_s_per_gpu 16 "${t6[@]}" --seq 262144 --dp 1 --cp 8
# A mixture of experts: Megatron-LM's MoE README (megatron/core/transformer/moe/README.md, as at d0df563,
# 2024-12) gives 468 TFLOP/s per GPU for Mixtral 8x7B in bf16 (MCore v0.9) and, in its "Reference Best
# Parallel Mapping" table, the run's layout: 64 H100s, sequence 4096, tp 1, ep 8, pp 4, micro-batch 1,
# global batch 256, dropless, the all-to-all dispatcher; the README does not say in so many words that
# the 468 was measured on that mapping. Its Mixtral script: --moe-grouped-gemm, the distributed optimizer
# with --overlap-grad-reduce and --overlap-param-gather (--zero 1), dropouts 0.0, no recompute,
# --num-layers-per-virtual-pipeline-stage 8 (the table's VP 8: 32 layers over pp 4 is one chunk a stage,
# plain 1F1B). ep borrows dp (dp 16 of 64 / pp 4); 256 / 16 = 16 micro-batches a step. Megatron-LM
# counts TFLOP/s with a token's top-k experts (training.py's num_floating_point_operations), as
# tflops_per_gpu does.
run "Megatron-LM Mixtral 8x7B, 64 x H100 (pp 4, ep 8)" tflops_per_gpu 468 \
  --model "$runs/mixtral-8x7b_config.json" --precision bf16 --zero 1 --micro-batch 1 --seq 4096 --gpu H100 \
  --attention flash --dp 16 --pp 4 --ep 8 --micro-batches 16 --overlap-param-gather
# Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models",
# arXiv 2205.05198), abstract: the 530B GPT-3-style model on 2240 A100s at 54.2% MFU with sequence
# parallelism and selective recompute, against 42.1% with full recompute. The model is Megatron-LM
# 2021's 529.6B row above (h 20480, 105 layers, 128 heads, vocabulary 51,200, sequence 2048), tp 8 ×
# pp 35 as MT-NLG 530B ran it, 2240 GPUs so dp 8. Not stated in the abstract, taken from the 2021 row:
# micro-batch 1, 280 micro-batches a pipeline (global batch 2240), dropout 0.1, the attention core
# materialized; selective recompute recomputes that core (--checkpoint selective). Assumed, with no
# source: the plain 1F1B schedule (the 2021 row interleaves v 3, which here gives 51.0% and 39.3%).
# MFU counts model FLOPs, without the recompute.
k22=(--model "$runs/gpt-529.6b_config.json" --tp 8 --pp 35 --dp 8 --micro-batch 1 --micro-batches 280
  --precision bf16 --seq 2048 --gpus-per-node 8 --gpu A100-80GB --dropout 0.1)
run "Korthikanti 2022 530B, 2240 x A100, SP + selective" mfu 54.2 "${k22[@]}" --sequence-parallel \
  --checkpoint selective
run "Korthikanti 2022 530B, 2240 x A100, full recompute" mfu 42.1 "${k22[@]}" --checkpoint full
# BigScience BLOOM 176B on 384 A100 80GB (Jean Zay): "training throughput: about 150 TFLOPs" (the
# BigScience 176B model page, bigscience.notion.site). Its launch script
# (bigscience-workshop/bigscience train/tr11-176B-ml/tr11-176B-ml.slurm): TP 4, PP 12 (so dp 8),
# micro-batch 2, global batch 2048 (128 micro-batches a pipeline), sequence 2048, bf16 with the BF16
# optimizer's own ZeRO-1 equivalent, --checkpoint-activations (full recompute), Megatron-DeepSpeed's
# fused softmax (materialized scores) with ALiBi; BLOOM's config.json sets both dropouts to 0. The shape
# file is GPT-2's form of BLOOM's (h 14336, 70 layers, 112 heads, the padded vocabulary 250,880): it adds
# learned positions (29 M parameters, 0.02%) where BLOOM has ALiBi and an embedding LayerNorm. Jean Zay's
# nodes have 4 × 100 Gb/s Omni-Path for 8 GPUs: 6.25 GB/s per GPU (--network-bandwidth). Megatron-DeepSpeed
# counts TFLOP/s with the recompute, as tflops_per_gpu does.
run "BigScience BLOOM 176B, 384 x A100 (tp 4, pp 12)" tflops_per_gpu 150 \
  --model "$runs/bloom-176b_shape_config.json" --tp 4 --pp 12 --dp 8 --micro-batch 2 --micro-batches 128 \
  --precision bf16 --zero 1 --seq 2048 --checkpoint full --gpus-per-node 8 --gpu A100-80GB \
  --network-bandwidth 6.25
