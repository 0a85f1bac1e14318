// SPDX-License-Identifier: GPL-3.0-or-later
#include "clock/sustained_clock.h"

namespace shardscope {

SustainedClock sustained_clock(std::string_view gpu) {
  if (gpu == "A100-40GB" || gpu == "A100-80GB")
    return {1305.0 / 1410.0, 1305, 1410, "NVIDIA's HPL clock for the A100 at its 400 W limit"};
  if (gpu == "H100" || gpu == "H200")
    return {1575.0 / 1980.0, 1575, 1980, "Hopper GEMMs beside communication at the 700 W limit (DeepGEMM #120)"};
  return {};
}

KernelModel sustained_kernel_model(std::string_view gpu, double peak_tflops, double memory_gbps) {
  KernelModel kernels = measured_kernel_model(peak_tflops, memory_gbps);
  kernels.peak_flops *= sustained_clock(gpu).fraction;
  return kernels;
}

KernelModel sustained_float8_kernel_model(std::string_view gpu, double fp8_peak_tflops, double memory_gbps) {
  KernelModel kernels = measured_float8_kernel_model(fp8_peak_tflops, memory_gbps);
  kernels.peak_flops *= sustained_clock(gpu).fraction;
  return kernels;
}

NodeBusBandwidth measured_node_bus_gbps(std::string_view gpu) {
  if (gpu == "A100-40GB" || gpu == "A100-80GB") return {200, 200};
  if (gpu == "H100" || gpu == "H200") return {476, 360};
  return {};
}

}  // namespace shardscope
