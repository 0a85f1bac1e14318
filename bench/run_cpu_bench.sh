#!/usr/bin/env bash
# ShardScope against PyTorch eager on the same model shape, batch and threads,
# in one run: the two alternate for ROUNDS rounds, so machine noise hits both,
# and the medians and their ratio are printed. PyTorch is optional (pip install
# torch, see tests/tools/README.md); without it only ShardScope is measured.
# BASELINE=path/to/an/older/bench_train adds that build to each round (before
# and after a change, against PyTorch in the same run).
# On a machine other programs keep busy, `chrt -f 10 bash bench/run_cpu_bench.sh` (root) gives
# both sides a real-time priority, so the figures are a quiet machine's (docs/PERFORMANCE.md).
#   [BASELINE=...] bench/run_cpu_bench.sh [ROUNDS]
# SPDX-License-Identifier: GPL-3.0-or-later
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
threads=${THREADS:-2}
bench=build/bench/bench_train
[ -x "$bench" ] || { echo "build first: bash scripts/build.sh" >&2; exit 2; }
have_torch=0
python3 -c "import torch" 2>/dev/null && have_torch=1

# name | shardscope args | pytorch args
shapes=(
  "gpt-tiny B=16 T=64|--model gpt-tiny --batch 16 --seq 64 --steps 30 --warmup 5|--model gpt-tiny --vocab 260 --batch 16 --seq 64 --steps 30 --warmup 5"
  "gpt2-124m B=4 T=64|--model gpt2-124m --batch 4 --seq 64 --steps 8 --warmup 2|--model gpt2-124m --batch 4 --seq 64 --steps 8 --warmup 2"
)
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for shape in "${shapes[@]}"; do
  IFS='|' read -r name ours theirs <<<"$shape"
  ss=(); pt=(); base=()
  for ((r = 0; r < rounds; r++)); do
    if [ -n "${BASELINE:-}" ]; then
      # shellcheck disable=SC2086
      base+=("$($BASELINE $ours --threads "$threads" --json | sed -E 's/.*"tokens_per_s":([0-9.]+).*/\1/')")
    fi
    # shellcheck disable=SC2086
    ss+=("$($bench $ours --threads "$threads" --json | sed -E 's/.*"tokens_per_s":([0-9.]+).*/\1/')")
    if [ $have_torch = 1 ]; then
      # shellcheck disable=SC2086
      pt+=("$(python3 bench/pytorch_gpt_bench.py $theirs --threads "$threads" --json | tail -n 1 \
              | sed -E 's/.*"tokens_per_s": ([0-9.]+).*/\1/')")
    fi
  done
  ss_med=$(printf '%s\n' "${ss[@]}" | median)
  if [ $have_torch = 1 ]; then
    pt_med=$(printf '%s\n' "${pt[@]}" | median)
    printf '%-20s ShardScope %9.1f tok/s | PyTorch eager %9.1f tok/s | ratio %.2f  (rounds: %s | %s)\n' \
      "$name" "$ss_med" "$pt_med" "$(awk "BEGIN {print $ss_med / $pt_med}")" "${ss[*]}" "${pt[*]}"
    if [ -n "${BASELINE:-}" ]; then
      base_med=$(printf '%s\n' "${base[@]}" | median)
      printf '%-20s baseline   %9.1f tok/s | ratio to PyTorch %.2f  (rounds: %s)\n' \
        "$name" "$base_med" "$(awk "BEGIN {print $base_med / $pt_med}")" "${base[*]}"
    fi
  else
    printf '%-20s ShardScope %9.1f tok/s (PyTorch not installed)  (rounds: %s)\n' "$name" "$ss_med" "${ss[*]}"
  fi
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
