#!/usr/bin/env bash
# Training throughput and model FLOPs utilisation on one GPU: ShardScope's
# CUDA backend against PyTorch eager (and torch.compile where it works) on the
# same GPU, model and shapes, in one run. Default: gpt2-124m, B=16, T=1024, bf16.
#   bench/gpu/run_gpu_bench.sh [STEPS] [BUILD_DIR]
# Env: MODEL, BATCH, SEQ, PRECISION (bf16|fp16|fp32), GPU (index), PEAK_TFLOPS
# (the GPU's dense 16-bit peak; default from its name: H100/H200 989, A100 312,
# RTX 4090 165), GPU_PROFILE (the estimator's profile, default from the name).
# Prints "skipped: no GPU (...)" and exits 0 where none is usable.
# Under each measured line, the estimator's prediction for the same model, shape
# and precision on that profile (estimate --time-model kernels and flat), and
# real / modeled: the first GPU run checks the time model (docs/PERFORMANCE.md).
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

# The estimator's profile for this GPU (GPU_PROFILE overrides; none: no modeled column).
if [ -z "${GPU_PROFILE:-}" ]; then
  case "$gpu_name" in
    *H100*PCIe*) GPU_PROFILE=H100-PCIe ;;
    *H100*|*H800*) GPU_PROFILE=H100 ;;
    *H200*) GPU_PROFILE=H200 ;;
    *A100*80GB*|*A800*80GB*) GPU_PROFILE=A100-80GB ;;
    *A100*|*A800*) GPU_PROFILE=A100-40GB ;;
    *B200*) GPU_PROFILE=B200 ;;
    *4090*) GPU_PROFILE=RTX4090 ;;
    *) GPU_PROFILE="" ;;
  esac
fi

# report NAME JSON [ESTIMATE-FLAGS...]: the measured line, then the estimator's prediction for the
# same model, shape and precision on $GPU_PROFILE under both time models, real over modeled.
report() {
  local name=$1 line=$2
  shift 2
  python3 - "$name" "$line" "$layers" "$channels" "$seq" "$PEAK_TFLOPS" "$GPU_PROFILE" "$build_dir/app/shardscope-cli" \
    --model "$model" --micro-batch "$batch" --seq "$seq" --precision "$precision" "$@" <<'PY'
import json, subprocess, sys
name, line, L, C, T, peak = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
profile, cli, flags = sys.argv[7], sys.argv[8], sys.argv[9:]
r = json.loads(line)
flops_per_token = 6 * r["parameters"] + 12 * L * C * T
mfu = r["tokens_per_s"] * flops_per_token / (peak * 1e12) if peak > 0 else float("nan")
print(f"{name:24s} {r['tokens_per_s']:12.0f} tokens/s   median step {r['median_step_s'] * 1e3:8.1f} ms   MFU {mfu * 100:5.1f}%")
if not profile:
    print(f"{'':24s} modeled: no GPU profile for this GPU (set GPU_PROFILE, e.g. H100)")
    sys.exit(0)
for model in ("kernels", "flat"):
    run = subprocess.run([cli, "estimate", "--json", "--gpu", profile, "--time-model", model, *flags],
                         capture_output=True, text=True)
    if run.returncode != 0:
        print(f"{'':24s} modeled ({model}): estimate failed: {run.stderr.strip()[:200]}")
        continue
    t = json.loads(run.stdout)["time"]
    print(f"{'':24s} {t['tokens_per_s']:12.0f} tokens/s   modeled step {t['step_time_s'] * 1e3:8.3f} ms   MFU {t['mfu'] * 100:5.1f}%"
          f"   ({model} model on {profile}; real / modeled {r['tokens_per_s'] / t['tokens_per_s']:.3g})")
PY
}
echo "$model B=$batch T=$seq $precision on $gpu_name (dense 16-bit peak ${PEAK_TFLOPS} TFLOP/s), $steps steps after 3 warm-up"
# ShardScope keeps fp32 storage (--activations shardscope) and runs its fused attention in 16 bits only.
attention=materialized
[ "$precision" = fp32 ] || attention=flash
report "shardscope ($precision)" "$line" --device cuda --activations shardscope --attention "$attention"
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  torch_model=$model
  for mode in eager compile; do
    flag=""; [ "$mode" = compile ] && flag="--compile"
    if out=$(CUDA_VISIBLE_DEVICES=$gpu python3 bench/pytorch_gpt_bench.py --model "$torch_model" --batch "$batch" \
        --seq "$seq" --device cuda --dtype "$precision" --steps "$steps" --warmup 3 --json $flag 2>&1 | tail -n 1); then
      report "pytorch $mode ($precision)" "$out" --device cuda --attention flash
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
