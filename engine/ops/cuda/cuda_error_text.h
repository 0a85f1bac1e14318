// SPDX-License-Identifier: GPL-3.0-or-later
// A CUDA runtime error as every message of ShardScope writes it, name and
// description: "cudaErrorMemoryAllocation (out of memory)". Shared by the
// CUDA backend (cuda_common.cuh) and both plugins' entry points.
#pragma once

#include <cuda_runtime.h>

#include <string>

namespace shardscope {

inline std::string cuda_error_text(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
}

}  // namespace shardscope
