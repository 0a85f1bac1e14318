#!/usr/bin/env bash
# Throughput and rank-0 peak memory of gpt-tiny under each parallel layout, on
# the same global batch, in one run (medians over the steps). On a 2-core CPU
# the ranks time-share the cores, so this shows the cost of each strategy's
# communication and bookkeeping, not a speed-up.
#   bench/run_parallel_bench.sh [STEPS]
# SPDX-License-Identifier: GPL-3.0-or-later
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-20}
bench=build/bench/bench_train
[ -x "$bench" ] || { echo "build first: bash scripts/build.sh" >&2; exit 2; }
layouts=(
  "1 rank|"
  "DDP dp 4|--dp 4"
  "naive DataParallel dp 4|--dp 4 --naive"
  "ZeRO-1 dp 4|--dp 4 --zero 1"
  "ZeRO-2 dp 4|--dp 4 --zero 2"
  "ZeRO-3 dp 4|--dp 4 --zero 3"
  "pp 4 GPipe m 8|--pp 4 --micro-batches 8 --schedule gpipe"
  "pp 4 1F1B m 8|--pp 4 --micro-batches 8 --schedule 1f1b"
  "dp 2 x pp 2 1F1B m 4|--dp 2 --pp 2 --micro-batches 4"
  "1 rank, checkpointing|--checkpoint"
  "1 rank, fp16|--precision fp16"
  "1 rank, bf16|--precision bf16"
  "ZeRO-1 dp 4, fp16|--dp 4 --zero 1 --precision fp16"
  "ZeRO-2 dp 4, fp16|--dp 4 --zero 2 --precision fp16"
  "ZeRO-3 dp 4, fp16|--dp 4 --zero 3 --precision fp16"
)
printf '%-26s %12s %16s\n' layout "tokens/s" "rank-0 peak MiB"
for entry in "${layouts[@]}"; do
  IFS='|' read -r name flags <<<"$entry"
  # shellcheck disable=SC2086
  line=$($bench --model gpt-tiny --batch 32 --seq 64 --steps "$steps" --warmup 3 --threads 2 --json $flags)
  tps=$(sed -E 's/.*"tokens_per_s":([0-9.]+).*/\1/' <<<"$line")
  peak=$(sed -E 's/.*"peak_bytes_rank0":([0-9]+).*/\1/' <<<"$line")
  printf '%-26s %12.0f %16.1f\n' "$name" "$tps" "$(awk "BEGIN {print $peak / 1048576}")"
done
