// SPDX-License-Identifier: GPL-3.0-or-later
// Floats of scratch in a backend's memory that grow to the largest size asked
// for: tensor and sequence parallelism's token blocks and loss pieces
// (model/tensor_parallel.cpp, model/sequence_parallel.cpp). On a host backend
// a vector, not charged to the ledger (as these always were on the CPU); on a
// device a workspace Buffer in the ledger's device memory.
#pragma once

#include <cstdint>
#include <vector>

#include "core/buffer.h"
#include "core/memory_ledger.h"
#include "ops/backend.h"

namespace shardscope {

class BackendScratch {
 public:
  float* fit(Backend& backend, MemoryLedger& ledger, std::int64_t floats) {
    if (backend.host_memory()) {
      if (static_cast<std::int64_t>(host_.size()) < floats) host_.resize(static_cast<std::size_t>(floats));
      return host_.data();
    }
    const auto bytes = floats * static_cast<std::int64_t>(sizeof(float));
    if (device_.bytes() < bytes) {
      backend.synchronize();  // no queued op still reads or writes the old block
      device_ = Buffer();
      device_ = Buffer(ledger, MemoryCategory::workspace, bytes);
    }
    return device_.floats();
  }

 private:
  std::vector<float> host_;
  Buffer device_;
};

}  // namespace shardscope
