#!/usr/bin/env bash
# The BLAS kernel check (engine/ops/cpu/blas_kernel.h) measured: training
# throughput of bench_train with OpenBLAS on
#   own      - the kernel OpenBLAS picks for this CPU, checked by ShardScope;
#   fallback - SHARDSCOPE_SIMULATE_BLAS_FALLBACK=Prescott: OpenBLAS put on its
#              SSE3 kernel first, as on a CPU newer than its tables, then
#              corrected by ShardScope's check;
#   forced   - OPENBLAS_CORETYPE set to the best kernel for this CPU by hand;
#   sse3     - OPENBLAS_CORETYPE=Prescott: the fallback left uncorrected (the
#              check keeps a kernel the environment asks for).
# The four alternate for ROUNDS rounds; medians and their ratio to `forced`.
#   bench/run_blas_kernel_bench.sh [ROUNDS]      (default 5; THREADS=2)
# SPDX-License-Identifier: GPL-3.0-or-later
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
threads=${THREADS:-2}
bench=build/bench/bench_train
[ -x "$bench" ] || { echo "build first: bash scripts/build.sh" >&2; exit 2; }
best=$(env -u OPENBLAS_CORETYPE "$bench" --model gpt-tiny --batch 2 --seq 8 --steps 1 --warmup 0 --json |
  sed -E 's/.*"blas":"OpenBLAS ([A-Za-z0-9_]+)".*/\1/')
echo "kernel ShardScope runs on this CPU: $best"
shapes=(
  "gpt-tiny B=16 T=64|--model gpt-tiny --batch 16 --seq 64 --steps 20 --warmup 3"
  "gpt2-124m B=4 T=64|--model gpt2-124m --batch 4 --seq 64 --steps 4 --warmup 1"
)
modes=(own fallback forced sse3)
run_mode() {  # mode, bench args -> tokens/s
  local mode=$1
  shift
  case $mode in
    own) env -u OPENBLAS_CORETYPE "$bench" "$@" ;;
    fallback) env -u OPENBLAS_CORETYPE SHARDSCOPE_SIMULATE_BLAS_FALLBACK=Prescott "$bench" "$@" ;;
    forced) env OPENBLAS_CORETYPE="$best" "$bench" "$@" ;;
    sse3) env OPENBLAS_CORETYPE=Prescott "$bench" "$@" ;;
  esac | sed -E 's/.*"tokens_per_s":([0-9.]+).*"blas":"([^"]*)".*/\1 \2/'
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for shape in "${shapes[@]}"; do
  IFS='|' read -r name args <<<"$shape"
  declare -A all=() kernel=()
  for ((r = 0; r < rounds; r++)); do
    for mode in "${modes[@]}"; do
      # shellcheck disable=SC2086
      read -r tps blas <<<"$(run_mode "$mode" $args --threads "$threads" --json)"
      all[$mode]+="$tps "
      kernel[$mode]=$blas
    done
  done
  forced_med=$(printf '%s\n' ${all[forced]} | median)
  echo
  echo "$name, $threads threads, median of $rounds alternating rounds:"
  for mode in "${modes[@]}"; do
    med=$(printf '%s\n' ${all[$mode]} | median)
    printf '  %-9s %-22s %9.0f tok/s  x%.2f of forced  (rounds: %s)\n' "$mode" "${kernel[$mode]}" "$med" \
      "$(awk "BEGIN {print $med / $forced_med}")" "${all[$mode]}"
  done
  unset all kernel
done
