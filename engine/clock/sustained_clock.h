// SPDX-License-Identifier: GPL-3.0-or-later
// The clock a GPU's tensor cores hold through a training run, as a fraction of
// the clock its microbenchmark ran at (clock/kernel_model.h: XLA's GEMM table,
// kernels of tens of microseconds each, at the boost clock). A step of dense
// GEMMs keeps the GPU at its power limit, and the driver lowers the SM clock
// until the board's power fits; memory clocks do not move, so only the
// GEMMs' FLOP rate scales (estimate --time-model kernels).
//   A100 (400 W): 1305 of 1410 MHz, the clock NVIDIA states an A100 sustains at
//     its power limit under HPL's dense matmuls and computes its HPL peak from
//     (G. Lockwood, "Peak FLOPS", glennklockwood.com/garden/peak-FLOPS).
//   H100 and H200 SXM (700 W, the same Hopper die): 1575 of 1980 MHz, measured
//     on Hopper GEMMs overlapped with communication, as a training step runs
//     them, that passed the power limit (deepseek-ai/DeepGEMM issue #120).
//   Other profiles: no measurement found, so the microbenchmark's clock (1.0);
//     docs/PERFORMANCE.md lists them.
#pragma once

#include <string_view>

#include "clock/kernel_model.h"

namespace shardscope {

struct SustainedClock {
  double fraction = 1;       // sustained MHz / the microbenchmark's (boost) MHz
  double sustained_mhz = 0;  // 0: not measured
  double boost_mhz = 0;
  std::string_view source;  // "" when not measured
};

// By GPU profile name (config/gpu_profiles.h).
SustainedClock sustained_clock(std::string_view gpu);

// The measured kernel model (clock/kernel_model.h) of a GPU as a training step runs it: the GEMMs'
// FLOP rate at sustained_clock(gpu), the bandwidth as measured. The one model both the estimator's
// compute_s (estimate/time_model.h) and the virtual clock's GPU profiles (train/run_device_models.h)
// price kernels with.
KernelModel sustained_kernel_model(std::string_view gpu, double peak_tflops, double memory_gbps);
// The same for FP8 GEMMs (estimate --float8): clock/kernel_model.h's FP8 fraction at the same sustained clock.
KernelModel sustained_float8_kernel_model(std::string_view gpu, double fp8_peak_tflops, double memory_gbps);

// The bus bandwidth NCCL's collectives reach inside a node, GB/s per direction, where published
// nccl-tests runs measure it (0: none found, the datasheet's link). all_reduce: an all-reduce;
// other: all-gather, reduce-scatter and the rest, which NVLink SHARP does not accelerate.
//   A100 SXM, NVLink 3: about 200 of the 300 for both (NVIDIA/nccl-tests issues #149, HPE Apollo
//     6500 8 × A100 80GB, ~200 GB/s busbw, and #178, two A100s over their 12 NVLinks, 208 GB/s).
//   H100 and H200 SXM, NVLink 4 (450 per direction): all-reduce 476 through NVLink SHARP
//     (nccl-tests #290, 8 × H100, which NCCL's developers call the expected range; #272, 8 × H200,
//     475); the others about 360 (NVIDIA/nccl #1281, 8 × H100: reduce-scatter 360, all-gather
//     350; nccl-tests #212, NCCL's developer: ~370 effective after the protocol's overhead).
struct NodeBusBandwidth {
  double all_reduce = 0, other = 0;
};
NodeBusBandwidth measured_node_bus_gbps(std::string_view gpu);

}  // namespace shardscope
