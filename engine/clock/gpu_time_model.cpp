// SPDX-License-Identifier: GPL-3.0-or-later
#include "clock/gpu_time_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace shardscope {

std::int64_t GpuTimeModel::op_ns(double flops, double bytes, int gemms) const {
  double seconds = std::max(flops / flops_per_s, bytes / bytes_per_s);
  if (measured) {
    const int kernels_run = std::max(gemms, flops > 0 ? 1 : 0);
    seconds = kernels_run * kernels.gemm_floor_s +
              std::max(flops / (kernels.peak_flops * kernels.gemm_fraction), kernels.memory_s(bytes));
  }
  return std::max<std::int64_t>(1, std::llround(seconds * 1e9));
}

std::string GpuTimeModel::describe() const {
  char text[200];
  if (measured) {
    // The clock's fraction is in the model's peak (sustained_kernel_model); 1 at the table's clock.
    const double clock = kernels.peak_flops / (peak_tflops * 1e12);
    std::snprintf(text, sizeof text,
                  "%s: %.1f TFLOP/s; GEMMs at %.2f of it x %.3f sustained clock + %.2f us each, memory at %.2f of "
                  "%.0f GB/s (XLA's H100 GEMM table)",
                  gpu.c_str(), peak_tflops, kernels.gemm_fraction, clock, kernels.gemm_floor_s * 1e6,
                  kernels.memory_fraction, kernels.bytes_per_s / 1e9);
    return text;
  }
  std::snprintf(text, sizeof text, "%s: %.1f TFLOP/s x %.2f efficiency, %.0f GB/s memory", gpu.c_str(), peak_tflops,
                efficiency, bytes_per_s / 1e9);
  return text;
}

}  // namespace shardscope
