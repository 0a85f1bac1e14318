#!/usr/bin/env bash
# Training throughput and model FLOPs utilisation on one GPU: ShardScope's
# CUDA backend against PyTorch eager (and torch.compile where it works) on the
# same GPU, model and shapes, in one run. Default: gpt2-124m, B=16, T=1024, bf16.
#   bench/gpu/run_gpu_bench.sh [STEPS] [BUILD_DIR]
# Env: MODEL, BATCH, SEQ, PRECISION (bf16|fp16|fp32), GPU (index), PEAK_TFLOPS
# (the GPU's dense 16-bit peak; default from its name: H100/H200 989, A100 312,
# RTX 4090 165). Prints "skipped: no GPU (...)" and exits 0 where none is usable.
# MFU = tokens/s x (6N + 12 L C T) / peak (PaLM, appendix B; N = parameters).
# Then the row ops alone (layernorm, attention softmax, cross-entropy, bias and
# embedding gradients) at gpt2-124m widths: bench_row_ops, GB/s against the
# GPU's peak bandwidth, beside PyTorch eager's (bench/gpu/pytorch_row_ops.py).
# Last, bench_train --profile-ops: the time of each backend op in a step.
# SPDX-License-Identifier: GPL-3.0-or-later
set -euo pipefail
cd "$(dirname "$0")/../.."
steps=${1:-10}
build_dir=${2:-build}
model=${MODEL:-gpt2-124m} batch=${BATCH:-16} seq=${SEQ:-1024} precision=${PRECISION:-bf16} gpu=${GPU:-0}
if [ "${SHARDSCOPE_SKIP_BUILD:-0}" != 1 ]; then  # 1: binaries already there (tests/gpu/device_run.sh)
  [ -f "$build_dir/CMakeCache.txt" ] || cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release
  cmake --build "$build_dir" --target bench_train bench_row_ops shardscope-cli shardscope_cuda --parallel "$(nproc)" >/dev/null
fi
# Is a GPU usable? A one-step cuda run says so, or says why not.
probe=$("$build_dir/app/shardscope-cli" train --device cuda --gpus "$gpu" --model gpt-tiny --steps 1 --batch 1 --seq 8 2>&1)
if note=$(grep -o 'note: --device cuda: .*' <<<"$probe"); then
  echo "skipped: no GPU (${note#note: --device cuda: })"
  exit 0
fi

line=$("$build_dir/bench/bench_train" --model "$model" --batch "$batch" --seq "$seq" --precision "$precision" \
  --device cuda --gpu "$gpu" --steps "$steps" --warmup 3 --json 2>&1 | tail -n 1)
backend=$(sed -nE 's/.*"backend":"([^"]*)".*/\1/p' <<<"$line")
case "$backend" in
  cuda:*) ;;
  *) echo "skipped: no GPU (bench_train ran on '${backend:-?}': $line)"; exit 0 ;;
esac
gpu_name=$(sed -E 's/^cuda:[0-9]+ \((.*)\)$/\1/' <<<"$backend")
if [ -z "${PEAK_TFLOPS:-}" ]; then
  case "$gpu_name" in
    *H100*|*H200*|*H800*|*H20*) PEAK_TFLOPS=989 ;;
    *A100*|*A800*) PEAK_TFLOPS=312 ;;
    *4090*) PEAK_TFLOPS=165 ;;
    *) PEAK_TFLOPS=0 ;;
  esac
fi
# Layers and width for the attention term, from the preset table of the CLI.
read -r layers channels < <("$build_dir/app/shardscope-cli" presets | awk -v m="$model" '$1 == m {print $6, $5}')

report() {  # name json
  python3 - "$1" "$2" "$layers" "$channels" "$seq" "$PEAK_TFLOPS" <<'PY'
import json, sys
name, line, L, C, T, peak = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
r = json.loads(line)
flops_per_token = 6 * r["parameters"] + 12 * L * C * T
mfu = r["tokens_per_s"] * flops_per_token / (peak * 1e12) if peak > 0 else float("nan")
print(f"{name:24s} {r['tokens_per_s']:12.0f} tokens/s   median step {r['median_step_s'] * 1e3:8.1f} ms   MFU {mfu * 100:5.1f}%")
PY
}
echo "$model B=$batch T=$seq $precision on $gpu_name (dense 16-bit peak ${PEAK_TFLOPS} TFLOP/s), $steps steps after 3 warm-up"
report "shardscope ($precision)" "$line"
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  torch_model=$model
  for mode in eager compile; do
    flag=""; [ "$mode" = compile ] && flag="--compile"
    if out=$(CUDA_VISIBLE_DEVICES=$gpu python3 bench/pytorch_gpt_bench.py --model "$torch_model" --batch "$batch" \
        --seq "$seq" --device cuda --dtype "$precision" --steps "$steps" --warmup 3 --json $flag 2>&1 | tail -n 1); then
      report "pytorch $mode ($precision)" "$out"
    else
      echo "pytorch $mode: failed: ${out:0:300}"
    fi
  done
else
  echo "pytorch: not measured (no torch with CUDA in this environment)"
fi

echo
# A failure here (or in PyTorch's twin) is reported and the script goes on to the profile.
CUDA_VISIBLE_DEVICES=$gpu "$build_dir/bench/bench_row_ops" --batch "$batch" --seq "$seq" ||
  echo "bench_row_ops: failed (exit $?)"
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  CUDA_VISIBLE_DEVICES=$gpu python3 bench/gpu/pytorch_row_ops.py --batch "$batch" --seq "$seq" ||
    echo "pytorch row ops: failed"
fi

# Where ShardScope's step goes, op by op (each op timed between two device
# waits, so the total is above the plain run's step): what to speed up next.
echo
echo "shardscope per-op profile ($model B=$batch T=$seq $precision, 3 steps after 2 warm-up):"
"$build_dir/bench/bench_train" --model "$model" --batch "$batch" --seq "$seq" --precision "$precision" \
  --device cuda --gpu "$gpu" --steps 3 --warmup 2 --profile-ops | sed -n '/^rank 0, per step/,$p'
