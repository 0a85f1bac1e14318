#!/usr/bin/env bash
# Ranks as processes against ranks as threads, measured in one run:
#  1. all-reduce bandwidth (nccl-tests' algbw and busbw, medians) for 1-256 MB
#     on 2 and 4 ranks: MPI processes with the ring algorithm (every chunk an
#     event) and with MPI's native all-reduce, in-process threads with the same
#     ring, and single-thread memcpy of the same size;
#  2. gpt-tiny dp 4 training throughput (median tokens/s of the steps after the
#     first 3): 4 threads of one process vs 4 processes (shardscope-cli launch).
# On a 2-core machine 4 ranks oversubscribe the cores in both cases.
#   bench/run_mpi_bench.sh [SIZES_MB] [STEPS]     (defaults: 1,4,16,64,256 and 20)
# SPDX-License-Identifier: GPL-3.0-or-later
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${1:-1,4,16,64,256}
steps=${2:-20}
for exe in build/bench/bench_mpi_allreduce build/bench/bench_allreduce build/app/shardscope-cli; do
  [ -x "$exe" ] || { echo "build first: bash scripts/build.sh ($exe is missing)" >&2; exit 2; }
done
mpi=(mpirun --oversubscribe --bind-to none)
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)

echo "## All-reduce, processes over MPI (GB = 1e9 bytes, median of 5)"
echo
echo "| size | algorithm | ranks | time ms | algbw GB/s | busbw GB/s |"
echo "|---:|---|---:|---:|---:|---:|"
for n in 2 4; do
  for algorithm in ring native; do
    "${mpi[@]}" -np "$n" build/bench/bench_mpi_allreduce --collectives "$algorithm" --sizes-mb "$sizes"
  done
done
echo
echo "## All-reduce, threads of one process (same ring), beside memcpy"
echo
build/bench/bench_allreduce --sizes-mb "$sizes" --ranks 2,4 | tail -n +3

# Median tokens/s of steps 4.. from a --metrics-out file (one JSON object per line).
median_tps() {
  sed -E 's/.*"tokens_per_s":([0-9.eE+-]+).*/\1/' "$1" | tail -n +4 | sort -g | awk '{v[NR]=$1} END {printf "%.0f", v[int((NR+1)/2)]}'
}
echo
echo "## gpt-tiny dp 4, $steps steps, batch 16 x 64"
echo
echo "| ranks run as | median tokens/s |"
echo "|---|---:|"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
train=(train --model gpt-tiny --dp 4 --batch 16 --seq 64 --steps "$steps" --log-every 1000)
# Each run's output is kept and shown only if it fails.
run() { "$@" >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 1; }; }
run build/app/shardscope-cli "${train[@]}" --metrics-out "$tmp/threads.jsonl"
echo "| threads | $(median_tps "$tmp/threads.jsonl") |"
run build/app/shardscope-cli launch --nproc-per-node 4 -- "${train[@]}" --metrics-out "$tmp/processes.jsonl"
echo "| processes (MPI ring) | $(median_tps "$tmp/processes.jsonl") |"
run build/app/shardscope-cli launch --nproc-per-node 4 -- "${train[@]}" --collectives native \
  --metrics-out "$tmp/native.jsonl"
echo "| processes (MPI native) | $(median_tps "$tmp/native.jsonl") |"
