// SPDX-License-Identifier: GPL-3.0-or-later
#include "clock/gpu_time_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace shardscope {

std::int64_t GpuTimeModel::op_ns(double flops, double bytes) const {
  const double seconds = std::max(flops / flops_per_s, bytes / bytes_per_s);
  return std::max<std::int64_t>(1, std::llround(seconds * 1e9));
}

std::string GpuTimeModel::describe() const {
  char text[160];
  std::snprintf(text, sizeof text, "%s: %.1f TFLOP/s x %.2f efficiency, %.0f GB/s memory", gpu.c_str(), peak_tflops,
                efficiency, bytes_per_s / 1e9);
  return text;
}

}  // namespace shardscope
