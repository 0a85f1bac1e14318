// SPDX-License-Identifier: GPL-3.0-or-later
// How long one GPU kernel takes, from one microbenchmark: XLA's table of
// cuBLAS GEMM throughput measured on an H100 SXM (sm_90) at every shape
// b × m × n × k with b in {1, 2, 4} and m, n, k in {256, ..., 4096}, bf16
// (openxla/xla, xla/service/gpu/model/matmul_interpolator_data.h,
// kDefaultMatmulPTable; docs/ESTIMATE.md cites it). Three entries of that
// table give the three constants, and the same three serve every GPU profile
// and every precision (times that GPU's data-sheet peak and bandwidth):
//
//   t(GEMM) = floor + max(FLOPs / (peak × gemm_fraction),
//                         bytes / (bandwidth × memory_fraction))
//   t(memory-bound kernel) = bytes / (bandwidth × memory_fraction)
//
//   memory_fraction: 256 × 512 × 256 (655 kB of bf16 in and out) runs in 5.86 us,
//     4 × 4096 × 4096 × 256 (151 MB) in 68.2 us; both are memory-bound, so the
//     150 MB between them took 62.3 us: 2.41 TB/s, 0.720 of the H100's 3.35 TB/s.
//   floor: what is left of the small GEMM, 5.58 us: the time of a GEMM too
//     small to fill the GPU (launch, ramp, tail).
//   gemm_fraction: 4096³ runs at 783.3 TFLOP/s (79% of 989.4); less the floor,
//     its FLOPs go at 0.818 of peak.
// A 16-bit GEMM of known shape (gemm_s with m, n, k) runs at the table's own
// fraction at that shape in place of gemm_fraction: every b × 4096 × n × k entry,
// b in {1, 2, 4}, n and k in {512, ..., 4096}, read like 4096³ (FLOPs over its
// time less the floor), interpolated in log2 of the sizes (table_gemm_fraction).
// Narrow GEMMs reach less: 0.79 at 2 × 4096 × 2048 × 2048, 0.64 at 4096 × 512 × 512.
// The rest of the table checks the form (2048³, 1024 × 2048 × 2048 and
// 4096 × 512 × 512 against their measured figures (tests/engine/test_gpu_profile_clock.cpp holds these). Nothing
// here is fitted to a training run.
//
// FP8 GEMMs (estimate --float8): XLA's sm_90 table has no FP8 entries, so one
// measured FP8 table of the same kind: DeepGEMM's (deepseek-ai/DeepGEMM README
// at its first commit a6d97a1, "Normal GEMMs for dense models", H800 SXM5,
// NVCC 12.8; the H800's tensor cores are the H100 SXM's, 1978.9 dense FP8
// TFLOP/s). Its largest compute-bound shape, 4096 × 7168 × 16384, runs at
// 1358 TFLOP/s; less the same floor its FLOPs go at 0.692 of the FP8 peak
// (float8_gemm_fraction). The floor and the memory fraction stay the table's
// above: they are the GPU's, not the data type's. DeepGEMM scales in blocks of
// 128 (its promotion adds CUDA-core work per block) where a tensorwise FP8
// GEMM scales once, so tensorwise kernels may reach more of the peak.
#pragma once

namespace shardscope {

struct KernelModel {
  double peak_flops = 0;       // the data sheet's, at the run's precision
  double bytes_per_s = 0;      // the data sheet's memory bandwidth
  double gemm_fraction = 1;    // of peak_flops, for a GEMM's FLOPs
  double memory_fraction = 1;  // of bytes_per_s, for every kernel's bytes
  double gemm_floor_s = 0;     // added once per GEMM kernel
  bool shape_fractions = false;  // 16-bit GEMMs of a known shape: the table's fraction at that shape

  // One GEMM kernel (or a batch of them launched as one) of `flops` FLOPs moving `bytes`, at gemm_fraction.
  double gemm_s(double flops, double bytes) const;
  // `batch` GEMMs (m × k) · (k × n) in one kernel, moving `bytes`: at table_gemm_fraction(m · batch, n, k)
  // when shape_fractions is set, else at gemm_fraction.
  double gemm_s(double m, double n, double k, double batch, double bytes) const;
  // A kernel without matmuls (a norm, an activation, the optimizer): its bytes only.
  double memory_s(double bytes) const;
};

// The fraction of peak a 16-bit GEMM with an m × n output and inner size k runs at once the floor is
// off: XLA's table at that shape (kernel_model.cpp keeps the entries it needs).
double table_gemm_fraction(double m, double n, double k);
// The microbenchmark's three constants on a GPU of these data-sheet figures.
KernelModel measured_kernel_model(double peak_tflops, double memory_gbps);
// The same model for FP8 GEMMs (E4M3/E5M2 in, 16-bit out) at a GPU's dense FP8 peak: DeepGEMM's fraction.
KernelModel measured_float8_kernel_model(double fp8_peak_tflops, double memory_gbps);
// DeepGEMM's measured fraction of the FP8 peak (above), for the tests and the printout.
double float8_gemm_fraction();
// The old single assumption: every FLOP at `efficiency` of peak, bytes at the
// full bandwidth, no floor (estimate --efficiency X).
KernelModel flat_kernel_model(double peak_tflops, double memory_gbps, double efficiency);

}  // namespace shardscope
