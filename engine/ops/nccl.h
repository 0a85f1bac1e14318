// SPDX-License-Identifier: GPL-3.0-or-later
// NCCL through its plugin (libshardscope_nccl.so, ops/nccl/nccl_plugin_abi.h),
// loaded with dlopen on first use like the CUDA plugin (ops/device.h), so the
// engine links no NCCL and a machine without it still trains on the CPU or on
// one GPU. parallel/nccl_communicator.h builds the Communicator on these.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "ops/nccl/nccl_plugin_abi.h"

namespace shardscope {

struct NcclAvailability {
  bool available = false;
  std::string reason;  // why not: "no NCCL plugin built ...", "NCCL not found: <dlerror>"
  int version = 0;     // NCCL's version code when available
};

// Never throws. The plugin is looked for next to the executable, then in the
// build directory, then on LD_LIBRARY_PATH; SHARDSCOPE_NCCL_PLUGIN (a file) overrides.
NcclAvailability probe_nccl();

// ncclCommInitAll over `devices`: one context per group rank. Throws
// std::runtime_error with NCCL's message.
std::vector<void*> nccl_init_all(const std::vector<int>& devices);
// ncclGetUniqueId: the bytes that name a new communicator, made by one rank
// and sent to the others (parallel/nccl_communicator.h). Throws.
using NcclUniqueId = std::array<unsigned char, SHARDSCOPE_NCCL_UNIQUE_ID_BYTES>;
NcclUniqueId nccl_unique_id();
// ncclCommInitRank: this process's context as rank `rank` of `nranks` in the
// communicator `id` names, on GPU `device`; returns once every rank joined. Throws.
void* nccl_init_rank(int nranks, const NcclUniqueId& id, int rank, int device);
void nccl_enqueue(void* context, const ShardscopeNcclCall& call);  // throws
// true once the last enqueued call finished; then start/end are GPU times in ms
// since the context's init. Throws on an asynchronous NCCL error.
bool nccl_poll(void* context, double& start_ms, double& end_ms);
void nccl_abort(void* context) noexcept;
void nccl_destroy(void* context) noexcept;

}  // namespace shardscope
