#!/usr/bin/env bash
# Runs on a lent GPU machine, over the bundle tests/gpu/device_bundle.sh made
# (.device/, carried): unpacks its Debian packages into /tmp/shardscope-deps
# (never into /), points the loader at them and at the machine's CUDA, cuBLAS
# and NCCL, then runs each GPU test program and the benchmark with its own time
# limit, so one failure does not hide the rest. Logs go to $OUT (the device
# tool brings them back) or to /tmp/shardscope-gpu. The whole run keeps within
# DEVICE_BUDGET_S seconds (default 540, under the device call's limit): each
# test's limit shrinks so that the benchmark keeps its 200 s. The benchmark prints
# each measured step beside the estimator's model of it on this GPU's profile
# (real / modeled; bench/gpu/run_gpu_bench.sh).
# SPDX-License-Identifier: GPL-3.0-or-later
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/shardscope-gpu}
mkdir -p "$out"
deps=/tmp/shardscope-deps
build=.device/build
[ -d "$build" ] || { echo "device_run: no .device/build: run tests/gpu/device_bundle.sh and carry .device" >&2; exit 2; }
mkdir -p "$deps"
for deb in .device/debs/*.deb; do dpkg -x "$deb" "$deps"; done

# CUDA libraries: the toolkit's, and those pip's nvidia packages hold (NCCL, cuBLAS).
cuda_dirs=""
: >"$out/libraries.txt"
for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
  found=$(find /usr/local/cuda/ /opt /usr/lib /usr/local/lib -name "$lib" 2>/dev/null |
    head -n 1)
  [ -n "$found" ] && cuda_dirs="$cuda_dirs:$(dirname "$found")"
  echo "$lib: ${found:-not found}" >>"$out/libraries.txt"
done
cat "$out/libraries.txt"
export LD_LIBRARY_PATH="$PWD/$build/engine:$deps/usr/lib/x86_64-linux-gnu:$deps/usr/lib/x86_64-linux-gnu/openblas-pthread:$deps/lib/x86_64-linux-gnu${cuda_dirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export QT_QPA_PLATFORM=offscreen QT_PLUGIN_PATH="$deps/usr/lib/x86_64-linux-gnu/qt6/plugins"
export SHARDSCOPE_CUDA_PLUGIN="$PWD/$build/engine/libshardscope_cuda.so"
[ -f "$build/engine/libshardscope_nccl.so" ] && export SHARDSCOPE_NCCL_PLUGIN="$PWD/$build/engine/libshardscope_nccl.so"
nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv | tee "$out/gpu.txt"

status=0
budget=${DEVICE_BUDGET_S:-540}
bench_reserve=200
run() {  # name seconds command...   (the limit is cut to what the budget leaves)
  local name=$1 limit=$2
  shift 2
  local reserve=$bench_reserve
  [ "$name" = gpu_bench ] && reserve=0
  local left=$((budget - SECONDS - reserve))
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -lt 10 ]; then
    echo "== $name: not run (the ${budget}s budget is spent)"
    status=1
    return
  fi
  echo "== $name (limit ${limit}s)"
  local start=$SECONDS
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "== $name: exit $rc after $((SECONDS - start)) s"
  grep -E '^(FAIL|QWARN|QINFO|Totals)|skipped' "$out/$name.log" | head -n 40
  [ "$rc" -eq 0 ] || status=1
}
run test_cuda_gemm 60 "$build/tests/test_cuda_gemm"
run test_cuda_elementwise 60 "$build/tests/test_cuda_elementwise"
run test_cuda_embedding_loss 60 "$build/tests/test_cuda_embedding_loss"
run test_cuda_optimizer 60 "$build/tests/test_cuda_optimizer"
run test_cuda_backend 60 "$build/tests/test_cuda_backend"
run test_cuda_attention 60 "$build/tests/test_cuda_attention"
run test_cuda_ring_attention 60 "$build/tests/test_cuda_ring_attention"
run test_cuda_row_shapes 60 "$build/tests/test_cuda_row_shapes"
run test_cuda_storage 60 "$build/tests/test_cuda_storage"
run test_cuda_training 200 "$build/tests/test_cuda_training"
export SHARDSCOPE_SKIP_BUILD=1
run gpu_bench 200 bash bench/gpu/run_gpu_bench.sh 10 "$build"
cat "$out/gpu_bench.log"
exit "$status"
