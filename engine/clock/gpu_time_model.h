// SPDX-License-Identifier: GPL-3.0-or-later
// A rank's compute on a modeled GPU (--gpu-profile, config/gpu_profiles.h).
// Every op still runs on this machine's CPU; only its virtual duration comes
// from the kernel model of clock/kernel_model.h, the one the estimator's
// compute_s uses (estimate/time_model.h):
//
//   t(op) = gemms × floor + max(FLOPs / (peak FLOP/s at the run's precision × gemm fraction),
//                               bytes / (memory bandwidth × memory fraction))
//
// with the op's nominal FLOPs, bytes and GEMM kernels from the shapes it ran
// with (ops/op_work.h: 2·M·N·K per matmul, attention's T×T scores, the bytes
// of layernorm, GELU, AdamW...). A run's clock takes the measured constants
// (XLA's H100 GEMM table) at the GPU's sustained clock, from the same
// sustained_kernel_model() (clock/sustained_clock.h) as the estimator's default; make_gpu_time_model(..., efficiency) builds the old
// single assumption (every FLOP at `efficiency` of peak, bytes at the full
// bandwidth, no floor), which estimate --efficiency X still offers.
// The floor is charged per GEMM kernel only: the table times GEMMs, and the
// launches of other kernels are not in it. CPU work outside the ops (the host's
// bookkeeping) costs nothing on the modeled GPU.
// train/run_device_models.h makes one from a run's settings.
#pragma once

#include <cstdint>
#include <string>

#include "clock/kernel_model.h"

namespace shardscope {

struct GpuTimeModel {
  std::string gpu;         // "H100"
  double flops_per_s = 0;  // peak at the run's precision × efficiency
  double bytes_per_s = 0;  // memory bandwidth
  double peak_tflops = 0, efficiency = 0;
  bool measured = false;  // kernels holds the microbenchmark's constants, not the flat assumption
  KernelModel kernels;

  // The time above, in ns (at least 1). `gemms`: the GEMM kernels the op launches.
  std::int64_t op_ns(double flops, double bytes, int gemms = 0) const;
  // "H100: 67.0 TFLOP/s x 0.50 efficiency, 3350 GB/s memory", or with the measured constants
  // "H100: 67.0 TFLOP/s; GEMMs at 0.82 of it + 5.86 us each, memory at 0.72 of 3350 GB/s (XLA's H100 table)"
  std::string describe() const;
};

}  // namespace shardscope
