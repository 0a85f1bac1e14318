// SPDX-License-Identifier: GPL-3.0-or-later
// The virtual devices of a run, from its settings: the GPU whose op times the
// compute spans take (--gpu-profile, clock/gpu_time_model.h) and the link
// between the devices (--link, clock/link_model.h).
#pragma once

#include <memory>
#include <optional>

#include "clock/gpu_time_model.h"
#include "clock/link_model.h"
#include "config/run_config.h"

namespace shardscope {

class Backend;
class DeviceClock;
struct GpuProfile;

// The flat assumption: every FLOP at `efficiency` of peak, bytes at the full bandwidth.
GpuTimeModel make_gpu_time_model(const GpuProfile& gpu, Precision precision, double efficiency);
// The measured kernel model (clock/kernel_model.h) on this GPU's data-sheet figures, at the
// microbenchmark's clock or (`sustained`) at the clock a training step holds (sustained_kernel_model).
GpuTimeModel make_measured_gpu_time_model(const GpuProfile& gpu, Precision precision, bool sustained = false);

// The run's model: none without --gpu-profile (or on the wall clock). The
// estimator's for the same settings (settings_for_run): the kernel model at the
// sustained clock, as estimate_time's compute_s prices the step's kernels.
std::optional<GpuTimeModel> run_gpu_time_model(const RunConfig& config);
// The run's link: --link, else (auto) the GPU profile's own link (NVLink at
// its bandwidth for A100/H100/H200, PCIe 4.0 for the RTX 4090), else host.
LinkModel run_link_model(const RunConfig& config);

// Wraps a rank's backend: each op run on `clock`'s compute thread advances its
// compute stream by the op's modeled time (DeviceClock::add_modeled_op).
std::unique_ptr<Backend> make_gpu_timed_backend(std::unique_ptr<Backend> inner, DeviceClock& clock);

}  // namespace shardscope
