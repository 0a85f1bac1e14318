// SPDX-License-Identifier: GPL-3.0-or-later
// A rank's compute on a modeled GPU (--gpu-profile, config/gpu_profiles.h).
// Every op still runs on this machine's CPU; only its virtual duration comes
// from the roofline (Williams, Waterman and Patterson 2009):
//
//   t(op) = max(FLOPs / (peak FLOP/s at the run's precision × efficiency),
//               bytes / memory bandwidth)
//
// with the op's nominal FLOPs and bytes from the shapes it ran with
// (ops/op_work.h: 2·M·N·K per matmul, attention's T×T scores, the bytes of
// layernorm, GELU, AdamW...) and the estimator's efficiency
// (EstimateSettings::efficiency, 0.5), so the clock and the estimator's
// compute_s (estimate/time_model.h) count the same matmul FLOPs at the same
// rate. Memory-bound ops (layernorm, GELU, the optimizer) add their bytes at
// the full data-sheet bandwidth, as the estimator's optimizer_s does.
// No kernel-launch floor: launches queue asynchronously on a GPU and the
// estimator has none; on a model as small as gpt-tiny a real GPU would spend
// ~2-5 us per kernel, which this model leaves out. CPU work outside the ops
// (the host's bookkeeping) costs nothing on the modeled GPU.
// train/run_device_models.h makes one from a run's settings.
#pragma once

#include <cstdint>
#include <string>

namespace shardscope {

struct GpuTimeModel {
  std::string gpu;         // "H100"
  double flops_per_s = 0;  // peak at the run's precision × efficiency
  double bytes_per_s = 0;  // memory bandwidth
  double peak_tflops = 0, efficiency = 0;

  // The roofline above, in ns (at least 1 for an op that moves anything).
  std::int64_t op_ns(double flops, double bytes) const;
  // "H100: 67.0 TFLOP/s x 0.50 efficiency, 3350 GB/s memory"
  std::string describe() const;
};

}  // namespace shardscope
