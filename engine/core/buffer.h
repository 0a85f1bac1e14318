// SPDX-License-Identifier: GPL-3.0-or-later
// A Buffer is one aligned host allocation, tagged with a memory category and
// charged to a rank's ledger for as long as it lives. Tensors are views into it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/memory_ledger.h"

namespace shardscope {

class Buffer {
 public:
  Buffer() = default;
  // Zero-filled, in the ledger's device memory if it has one, else on the host.
  // Throws OutOfMemory (core/error.h) naming the memory, category and size.
  Buffer(MemoryLedger& ledger, MemoryCategory category, std::int64_t bytes);
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  float* floats() const { return static_cast<float*>(data_); }
  std::int64_t bytes() const { return bytes_; }
  MemoryCategory category() const { return category_; }
  bool empty() const { return data_ == nullptr; }
  MemoryLedger* ledger() const { return ledger_; }  // null for an empty buffer

 private:
  void free_now();

  void* data_ = nullptr;
  std::int64_t bytes_ = 0;
  MemoryCategory category_ = MemoryCategory::workspace;
  MemoryLedger* ledger_ = nullptr;
};

}  // namespace shardscope
