#!/usr/bin/env bash
# Packs what a lent GPU machine needs to run the GPU tests and the benchmark
# without building there: that machine has nvcc, CMake, PyTorch and the CUDA
# libraries but none of Debian's packages (Qt, OpenBLAS, ...) and no network.
# Builds here (same x86-64), copies the GPU test programs, the CLI, bench_train
# and the plugins into .device/build (the build tree's layout), and downloads
# the Debian packages of the shared libraries they need beyond glibc and
# libstdc++ into .device/debs. tests/gpu/device_run.sh unpacks them there.
#   tests/gpu/device_bundle.sh [BUILD_DIR]    (default: build)
# Then, through the device tool: carry [".device"], command
#   "bash tests/gpu/device_run.sh", timeout ~540 s (see that script).
# .device/ is ignored through .git/info/exclude (added here), never committed.
# SPDX-License-Identifier: GPL-3.0-or-later
set -euo pipefail
cd "$(dirname "$0")/../.."
build_dir="${1:-build}"
bundle=.device
grep -qx '/.device/' .git/info/exclude 2>/dev/null || echo '/.device/' >>.git/info/exclude

[ -f "$build_dir/CMakeCache.txt" ] || cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release
grep -q '^CMAKE_CUDA_COMPILER:[A-Z]*=.*nvcc$' "$build_dir/CMakeCache.txt" ||
  { echo "device_bundle: $build_dir has no CUDA compiler configured" >&2; exit 1; }
programs=(tests/test_cuda_gemm tests/test_cuda_elementwise tests/test_cuda_embedding_loss tests/test_cuda_optimizer tests/test_cuda_backend tests/test_cuda_attention tests/test_cuda_ring_attention tests/test_cuda_row_shapes tests/test_cuda_storage tests/test_cuda_training bench/bench_train app/shardscope-cli)
extra=()
grep -q 'bench_row_ops' "$build_dir/build.ninja" && extra+=(bench/bench_row_ops)
targets=(test_cuda_gemm test_cuda_elementwise test_cuda_embedding_loss test_cuda_optimizer test_cuda_backend test_cuda_attention test_cuda_ring_attention test_cuda_row_shapes test_cuda_storage test_cuda_training bench_train shardscope-cli shardscope_cuda)
grep -q '^SHARDSCOPE_NCCL_LIBRARY:.*nccl' "$build_dir/CMakeCache.txt" && targets+=(shardscope_nccl)
for p in "${extra[@]}"; do targets+=("$(basename "$p")"); programs+=("$p"); done
cmake --build "$build_dir" --target "${targets[@]}" --parallel "$(nproc)"

rm -rf "$bundle"
mkdir -p "$bundle/build/engine" "$bundle/debs"
for p in "${programs[@]}"; do
  mkdir -p "$bundle/build/$(dirname "$p")"
  cp "$build_dir/$p" "$bundle/build/$p"
  strip --strip-unneeded "$bundle/build/$p"
done
for so in libshardscope_cuda.so libshardscope_nccl.so; do
  [ -f "$build_dir/engine/$so" ] && cp "$build_dir/engine/$so" "$bundle/build/engine/$so"
done

# The packages behind every library the programs load, except those any
# Linux with a C++ toolchain has (glibc, libstdc++, libgcc, zlib, zstd) and
# the CUDA ones (the GPU machine's own).
libs=$(for p in "${programs[@]}"; do ldd "$build_dir/$p"; done | awk '/=> \//{print $3}' | sort -u)
packages=$(for lib in $libs; do dpkg -S "$(readlink -f "$lib")" 2>/dev/null || dpkg -S "$lib" 2>/dev/null; done |
  cut -d: -f1 | sort -u | grep -v -E '^(libc6|libstdc\+\+6|libgcc-s1|zlib1g|libzstd1)$' || true)
(cd "$bundle/debs" && apt-get download $packages >/dev/null)
echo "packages: $(echo $packages)"
du -sh "$bundle"
total=$(du -sb "$bundle" | cut -f1)
tree=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -n 1 | cut -f1)
echo "bundle $((total / 1048576)) MiB + working tree $((tree / 1048576)) MiB (the device tool carries 64 MiB in all)"
[ $((total + tree)) -lt $((60 * 1048576)) ] || { echo "device_bundle: too big to carry" >&2; exit 1; }
