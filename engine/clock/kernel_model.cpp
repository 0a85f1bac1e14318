// SPDX-License-Identifier: GPL-3.0-or-later
#include "clock/kernel_model.h"

#include <algorithm>

namespace shardscope {

namespace {
// XLA's sm_90 table, bf16 x bf16 -> bf16 (kernel_model.h): three shapes and their measured seconds.
constexpr double kH100PeakFlops = 989.4e12, kH100Bandwidth = 3350e9;
// 256 x 512 x 256: 655 kB for 67 MFLOP, memory-bound (its FLOPs would take 0.08 us).
constexpr double kSmallBytes = 2.0 * (256.0 * 256 + 256.0 * 512 + 256.0 * 512);
constexpr double kSmallS = 2.0 * 256 * 512 * 256 / 11'459'846'994'535;
// 4 x 4096 x 4096 x 256: 151 MB for 34 GFLOP, memory-bound.
constexpr double kFlatBytes = 2.0 * 4 * (4096.0 * 256 + 256.0 * 4096 + 4096.0 * 4096);
constexpr double kFlatS = 2.0 * 4 * 4096 * 4096 * 256 / 503'874'974'234'136;
// 4096³: 137 GFLOP, compute-bound.
constexpr double kLargeFlops = 2.0 * 4096 * 4096 * 4096;
constexpr double kLargeS = kLargeFlops / 783'328'793'548'203;

// The two memory-bound entries differ only in bytes: their difference in time gives the
// bandwidth, what is left of the small one the floor, what is left of the large one the FLOP rate.
constexpr double kMemoryFraction = (kFlatBytes - kSmallBytes) / (kFlatS - kSmallS) / kH100Bandwidth;
constexpr double kFloorS = kSmallS - kSmallBytes / (kH100Bandwidth * kMemoryFraction);
constexpr double kGemmFraction = kLargeFlops / (kLargeS - kFloorS) / kH100PeakFlops;

// DeepGEMM's H800 table (kernel_model.h): 4096 x 7168 x 16384 in FP8 at 1358 TFLOP/s, of 1978.9 dense.
constexpr double kH800Fp8PeakFlops = 1978.9e12;
constexpr double kFp8Flops = 2.0 * 4096 * 7168 * 16384;
constexpr double kFp8S = kFp8Flops / 1358e12;
constexpr double kFloat8GemmFraction = kFp8Flops / (kFp8S - kFloorS) / kH800Fp8PeakFlops;
}  // namespace

double KernelModel::gemm_s(double flops, double bytes) const {
  return gemm_floor_s + std::max(flops / (peak_flops * gemm_fraction), memory_s(bytes));
}

double KernelModel::memory_s(double bytes) const {
  return bytes / (bytes_per_s * memory_fraction);
}

KernelModel measured_kernel_model(double peak_tflops, double memory_gbps) {
  return {peak_tflops * 1e12, memory_gbps * 1e9, kGemmFraction, kMemoryFraction, kFloorS};
}

KernelModel measured_float8_kernel_model(double fp8_peak_tflops, double memory_gbps) {
  return {fp8_peak_tflops * 1e12, memory_gbps * 1e9, kFloat8GemmFraction, kMemoryFraction, kFloorS};
}

double float8_gemm_fraction() {
  return kFloat8GemmFraction;
}

KernelModel flat_kernel_model(double peak_tflops, double memory_gbps, double efficiency) {
  return {peak_tflops * 1e12, memory_gbps * 1e9, efficiency, 1.0, 0.0};
}

}  // namespace shardscope
