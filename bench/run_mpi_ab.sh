#!/usr/bin/env bash
# A/B of the MPI transport between two builds (say main's and a branch's),
# alternated run by run so that a noisy machine slows both alike:
# bench_mpi_allreduce (busbw, median of 5 per run) on 2 and 4 processes, ring
# and native, and gpt-tiny dp 4 tokens/s as threads and as processes.
#   bench/run_mpi_ab.sh BUILD_A BUILD_B [ROUNDS] [SIZES_MB]   (defaults: 3 and 1,16,64)
# e.g. git archive main | tar -x -C build-main/src, build it there, then
#   bench/run_mpi_ab.sh build-main/src/build build 3
# Prints one line per run: "A|B | size | algorithm | ranks | ms | algbw | busbw |"
# (tokens/s in the busbw column for gpt-tiny); medians are for the reader.
# SPDX-License-Identifier: GPL-3.0-or-later
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BUILD_A BUILD_B [ROUNDS] [SIZES_MB]" >&2; exit 2; }
declare -A dir=([A]=$1 [B]=$2)
rounds=${3:-3}
sizes=${4:-1,16,64}
mpi=(mpirun --oversubscribe --bind-to none)
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median_tps() {
  sed -E 's/.*"tokens_per_s":([0-9.eE+-]+).*/\1/' "$1" | tail -n +4 | sort -g | awk '{v[NR]=$1} END {printf "%.0f", v[int((NR+1)/2)]}'
}
train=(train --model gpt-tiny --dp 4 --batch 16 --seq 64 --steps 20 --log-every 1000)
tokens() {  # label build [launch args]
  local label=$1 cli=$2/app/shardscope-cli
  shift 2
  if [ $# -gt 0 ]; then "$cli" launch --nproc-per-node 4 -- "${train[@]}" "$@" --metrics-out "$tmp/m.jsonl"
  else "$cli" "${train[@]}" --metrics-out "$tmp/m.jsonl"; fi >/dev/null 2>&1 || { echo "$label: run failed" >&2; return; }
  echo "$label | gpt-tiny | $( [ -n "${1:-}" ] && echo "processes $2" || echo threads) | 4 | - | - | $(median_tps "$tmp/m.jsonl") |"
}
for _ in $(seq "$rounds"); do
  for n in 2 4; do for algorithm in ring native; do for v in A B; do
    "${mpi[@]}" -np "$n" "${dir[$v]}/bench/bench_mpi_allreduce" --collectives "$algorithm" --sizes-mb "$sizes" | sed "s/^/$v /"
  done; done; done
  for v in A B; do
    tokens "$v" "${dir[$v]}"
    tokens "$v" "${dir[$v]}" --collectives ring
    tokens "$v" "${dir[$v]}" --collectives native
  done
done
