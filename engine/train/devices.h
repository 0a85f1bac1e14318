// SPDX-License-Identifier: GPL-3.0-or-later
// The devices a run can train on, for the settings a user picks them from
// (ui/config_panel.h): the CPU always, and the GPUs the CUDA plugin finds
// (ops/device.h). The views and panels ask here, not the ops layer.
#pragma once

#include "ops/device.h"

namespace shardscope {

// The GPUs a run with --device cuda can use, or why there are none. Never throws.
inline DeviceProbe probe_training_devices() {
  return probe_cuda();
}

}  // namespace shardscope
