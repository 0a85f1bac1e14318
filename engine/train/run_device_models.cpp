// SPDX-License-Identifier: GPL-3.0-or-later
#include "train/run_device_models.h"

#include "clock/device_clock.h"
#include "clock/sustained_clock.h"
#include "config/gpu_profiles.h"
#include "estimate/estimate_settings.h"
#include "ops/op_work.h"

namespace shardscope {

GpuTimeModel make_gpu_time_model(const GpuProfile& gpu, Precision precision, double efficiency) {
  GpuTimeModel model;
  model.gpu = gpu.name;
  model.peak_tflops = gpu.peak_tflops(precision);
  model.efficiency = efficiency;
  model.flops_per_s = model.peak_tflops * 1e12 * efficiency;
  model.bytes_per_s = gpu.memory_gbps * 1e9;
  model.kernels = flat_kernel_model(model.peak_tflops, gpu.memory_gbps, efficiency);
  return model;
}

GpuTimeModel make_measured_gpu_time_model(const GpuProfile& gpu, Precision precision, bool sustained) {
  GpuTimeModel model;
  model.gpu = gpu.name;
  model.peak_tflops = gpu.peak_tflops(precision);
  model.measured = true;
  model.kernels = sustained ? sustained_kernel_model(gpu.name, model.peak_tflops, gpu.memory_gbps)
                            : measured_kernel_model(model.peak_tflops, gpu.memory_gbps);
  model.efficiency = model.kernels.gemm_fraction;
  model.flops_per_s = model.kernels.peak_flops * model.kernels.gemm_fraction;
  model.bytes_per_s = model.kernels.bytes_per_s;
  return model;
}

namespace {
const GpuProfile* run_gpu_profile(const RunConfig& config) {
  if (config.gpu_profile == "none" || config.clock != ClockKind::virtual_device) return nullptr;
  return &find_gpu_profile(config.gpu_profile);
}

// Runs the op, then prices it on the modeled GPU.
class GpuTimedObserver final : public OpObserver {
 public:
  explicit GpuTimedObserver(DeviceClock& clock) : clock_(clock) {}
  void observe(Backend&, const OpCall& call) override {
    call.run();
    clock_.add_modeled_op(call.flops, call.bytes, call.gemms);
  }

 private:
  DeviceClock& clock_;
};
}  // namespace

std::optional<GpuTimeModel> run_gpu_time_model(const RunConfig& config) {
  const GpuProfile* gpu = run_gpu_profile(config);
  if (gpu == nullptr) return std::nullopt;
  // The estimator's time model (the kernel model unless its settings say flat), op by op.
  const EstimateSettings settings = settings_for_run(config);
  if (!settings.measured_kernels) return make_gpu_time_model(*gpu, config.precision, settings.efficiency);
  return make_measured_gpu_time_model(*gpu, config.precision, true);
}

LinkModel run_link_model(const RunConfig& config) {
  if (config.link) return make_link_model(*config.link);
  const GpuProfile* gpu = run_gpu_profile(config);
  if (gpu == nullptr) return make_link_model(LinkKind::host);
  // The profile's GPU-to-GPU link at its data-sheet bandwidth, with the latency of that kind of link.
  LinkModel link = make_link_model(gpu->link.starts_with("NVLink") ? LinkKind::nvlink : LinkKind::pcie4);
  link.bytes_per_s = gpu->link_gbps * 1e9;
  return link;
}

std::unique_ptr<Backend> make_gpu_timed_backend(std::unique_ptr<Backend> inner, DeviceClock& clock) {
  return make_observed_backend(std::move(inner), std::make_unique<GpuTimedObserver>(clock));
}

}  // namespace shardscope
