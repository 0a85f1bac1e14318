// SPDX-License-Identifier: GPL-3.0-or-later
// The per-rank memory ledger: every allocation of a rank is tagged with one of
// six categories, and the ledger keeps current and peak bytes for each. The
// memory view, the metrics and the estimator all use these names.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace shardscope {

enum class MemoryCategory {
  parameters,        // model weights as used by forward/backward
  gradients,         // parameter gradients
  optimizer_states,  // AdamW m and v (and fp32 master weights under mixed precision)
  activations,       // values saved in forward for backward
  communication,     // buffers for collectives (buckets, gather buffers)
  workspace,         // scratch: activation gradients in backward, temporaries
};

inline constexpr std::size_t kMemoryCategoryCount = 6;

inline constexpr std::array<MemoryCategory, kMemoryCategoryCount> kAllMemoryCategories = {
    MemoryCategory::parameters,  MemoryCategory::gradients,     MemoryCategory::optimizer_states,
    MemoryCategory::activations, MemoryCategory::communication, MemoryCategory::workspace};

constexpr std::string_view memory_category_name(MemoryCategory category) {
  switch (category) {
    case MemoryCategory::parameters: return "parameters";
    case MemoryCategory::gradients: return "gradients";
    case MemoryCategory::optimizer_states: return "optimizer_states";
    case MemoryCategory::activations: return "activations";
    case MemoryCategory::communication: return "communication";
    case MemoryCategory::workspace: return "workspace";
  }
  return "?";
}

// Bytes by category, as a plain value (a snapshot of the ledger or a prediction).
struct MemoryBytes {
  std::array<std::int64_t, kMemoryCategoryCount> bytes{};

  std::int64_t& operator[](MemoryCategory category) { return bytes[static_cast<std::size_t>(category)]; }
  std::int64_t operator[](MemoryCategory category) const { return bytes[static_cast<std::size_t>(category)]; }
  std::int64_t total() const;
};

// A device's memory beside the ledger: what its driver says is in use
// (cudaMemGetInfo: total - free, every process and context included) and what
// the caching allocator holds from it. The ledger counts only live Buffers.
struct DeviceUsage {
  int device = -1;                  // the GPU ordinal
  std::int64_t used_bytes = 0;      // in use on the whole device
  std::int64_t total_bytes = 0;     // the device's memory
  std::int64_t reserved_bytes = 0;  // held by this rank's caching allocator (core/caching_device_memory.h)
};

// Where a rank's buffers live when not in host memory (a GPU's): Buffer
// allocates through the ledger's DeviceMemory when it has one.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  // `bytes` of zeroed memory; throws (std::bad_alloc or std::runtime_error) when there is none.
  virtual void* allocate_zeroed(std::int64_t bytes) = 0;
  virtual void release(void* pointer) noexcept = 0;
  virtual std::string name() const = 0;  // e.g. "cuda:0", for out-of-memory messages
  // Fills `usage` for a real device; false where there is none to ask (host memory).
  virtual bool device_usage(DeviceUsage& usage) const {
    (void)usage;
    return false;
  }
};

// Thread-safe: the owning rank allocates, other threads (metrics, UI) read.
class MemoryLedger {
 public:
  // Host memory unless a device's is set (before the rank allocates anything).
  void set_device_memory(DeviceMemory* memory) { device_memory_ = memory; }
  DeviceMemory* device_memory() const { return device_memory_; }

  void allocate(MemoryCategory category, std::int64_t bytes);
  void release(MemoryCategory category, std::int64_t bytes);

  MemoryBytes current() const;
  MemoryBytes peak() const;        // peak of each category on its own
  std::int64_t current_total() const { return total_current_.load(std::memory_order_relaxed); }
  std::int64_t peak_total() const { return total_peak_.load(std::memory_order_relaxed); }

 private:
  std::array<std::atomic<std::int64_t>, kMemoryCategoryCount> current_{};
  std::array<std::atomic<std::int64_t>, kMemoryCategoryCount> peak_{};
  std::atomic<std::int64_t> total_current_{0};
  std::atomic<std::int64_t> total_peak_{0};
  DeviceMemory* device_memory_ = nullptr;
};

}  // namespace shardscope
