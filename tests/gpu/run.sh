#!/usr/bin/env bash
# GPU tests: builds ShardScope where needed, then runs every CUDA backend op
# against the CPU backend (tests/gpu/test_cuda_gemm.cpp, test_cuda_elementwise.cpp,
# test_cuda_embedding_loss.cpp, test_cuda_optimizer.cpp, test_cuda_backend.cpp,
# test_cuda_attention.cpp, test_cuda_ring_attention.cpp, test_cuda_row_shapes.cpp,
# test_cuda_storage.cpp), 20 training steps
# on the GPU against the CPU, dp 2 / ZeRO-1/2/3 / pp 2 with ranks sharing GPU 0,
# one rank per GPU over NCCL where there are two, and a failing rank stopping
# the others (tests/gpu/test_cuda_training.cpp); killed after 8 minutes in all. Where no GPU is usable it prints
# "skipped: no GPU (<reason>)" and exits 0, so CI without a GPU passes.
#   usage: tests/gpu/run.sh [build-dir]     (default: build, or $SHARDSCOPE_BUILD_DIR)
# SPDX-License-Identifier: GPL-3.0-or-later
set -euo pipefail
cd "$(dirname "$0")/../.."
build_dir="${1:-${SHARDSCOPE_BUILD_DIR:-build}}"

if [ "${SHARDSCOPE_SKIP_BUILD:-0}" != 1 ]; then  # 1: binaries already there (tests/gpu/device_run.sh)
  if [ ! -f "$build_dir/CMakeCache.txt" ]; then
    cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release
  fi
  if ! grep -q '^CMAKE_CUDA_COMPILER:[A-Z]*=.*nvcc$' "$build_dir/CMakeCache.txt"; then
    echo "skipped: no GPU (the CUDA backend is not compiled: $build_dir was configured without nvcc or with SHARDSCOPE_WITH_CUDA=OFF)"
    exit 0
  fi
  cmake --build "$build_dir" --target test_cuda_gemm test_cuda_elementwise test_cuda_embedding_loss test_cuda_optimizer test_cuda_backend test_cuda_attention test_cuda_ring_attention test_cuda_row_shapes test_cuda_storage test_cuda_training shardscope_cuda \
    $(grep -q '^SHARDSCOPE_NCCL_LIBRARY:.*nccl' "$build_dir/CMakeCache.txt" && echo shardscope_nccl) \
    --parallel "$(nproc)"
fi

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
timeout 480 bash -c "\"$build_dir/tests/test_cuda_gemm\" && \"$build_dir/tests/test_cuda_elementwise\" &&
  \"$build_dir/tests/test_cuda_embedding_loss\" && \"$build_dir/tests/test_cuda_optimizer\" &&
  \"$build_dir/tests/test_cuda_backend\" && \"$build_dir/tests/test_cuda_attention\" &&
  \"$build_dir/tests/test_cuda_ring_attention\" &&
  \"$build_dir/tests/test_cuda_row_shapes\" && \"$build_dir/tests/test_cuda_storage\" &&
  \"$build_dir/tests/test_cuda_training\"" 2>&1 | tee "$log" ||
  status=$?
if grep -q 'skipped: no GPU' "$log"; then
  echo "$(grep -o 'skipped: no GPU.*' "$log" | head -n 1)"
fi
if [ "$status" -eq 124 ]; then echo "GPU tests: killed after 8 minutes" >&2; fi
exit "$status"
