// SPDX-License-Identifier: GPL-3.0-or-later
// A caching allocator in front of a device's raw allocator, as PyTorch's
// CUDACachingAllocator: a Buffer freed in one training step keeps its block,
// and the same-sized Buffer of the next step gets it back, so a steady run
// calls cudaMalloc only while its first step grows, never afterwards.
//
//   allocate_zeroed(n): round n to its size class; best fit from the free
//     list; else a raw allocation (on failure: return every cached block to
//     the raw allocator and try once more); zero n bytes; hand it out.
//   release(p): the block goes back to the free list, not to the device.
//
// No CUDA here: the raw allocator is an interface (ops/device.cpp gives one
// for cudaMalloc/cudaFree/cudaMemset; the tests give a counting fake).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/memory_ledger.h"

namespace shardscope {

// What the cache allocates from: a device's own allocator, one call per block.
class RawDeviceAllocator {
 public:
  virtual ~RawDeviceAllocator() = default;
  // `bytes` of memory (contents undefined); throws (std::bad_alloc or
  // std::runtime_error, with the device's reason) when there is none.
  virtual void* allocate(std::int64_t bytes) = 0;
  virtual void free(void* pointer) noexcept = 0;
  virtual void zero(void* pointer, std::int64_t bytes) = 0;  // throws as allocate
  virtual std::string name() const = 0;                      // e.g. "cuda:0"
  // The whole device as its driver sees it (cudaMemGetInfo): fills device,
  // used_bytes and total_bytes; false where the device cannot say.
  virtual bool device_usage(DeviceUsage& usage) const {
    (void)usage;
    return false;
  }
};

struct CachingStats {
  std::int64_t reserved_bytes = 0;   // held from the raw allocator: in use + cached
  std::int64_t in_use_bytes = 0;     // in blocks handed out (rounded sizes)
  std::int64_t cached_bytes = 0;     // in free blocks, kept for reuse
  std::int64_t raw_allocations = 0;  // successful raw allocate calls
  std::int64_t raw_frees = 0;        // raw free calls (emptying the cache)
  std::int64_t cache_hits = 0;       // requests served from a free block
  std::int64_t cache_flushes = 0;    // times a failed raw allocation emptied the cache
};

// Thread-safe: one instance per rank, but a mutex guards every call.
class CachingDeviceMemory final : public DeviceMemory {
 public:
  explicit CachingDeviceMemory(std::unique_ptr<RawDeviceAllocator> raw);
  // Returns every block (cached or, a caller's bug, still handed out) to the raw allocator.
  ~CachingDeviceMemory() override;
  CachingDeviceMemory(const CachingDeviceMemory&) = delete;
  CachingDeviceMemory& operator=(const CachingDeviceMemory&) = delete;

  // Zeroed `bytes` (the DeviceMemory contract) in a block of rounded_size(bytes)
  // or a little more. Throws std::runtime_error naming the bytes, what the cache
  // held and the raw allocator's reason when even an emptied cache does not fit.
  void* allocate_zeroed(std::int64_t bytes) override;
  void release(void* pointer) noexcept override;
  std::string name() const override;
  // The raw allocator's view of the device, plus reserved_bytes from the cache.
  bool device_usage(DeviceUsage& usage) const override;

  CachingStats stats() const;
  // Returns every free block to the raw allocator (torch.cuda.empty_cache()).
  void empty_cache();

  // The size class of a request. Requests up to 1 MiB round up to 512 bytes
  // (PyTorch's kMinBlockSize): small buffers (biases, norms, loss scalars) stay
  // small. Larger ones round up to 2 MiB (PyTorch's kLargeBuffer): cudaMalloc
  // maps large allocations in 2 MiB pages anyway, so the rounding costs almost
  // no device memory, and buffers whose sizes differ by a little (the last
  // micro-batch, padded ZeRO shards) share a class and reuse each other's blocks.
  static std::int64_t rounded_size(std::int64_t bytes);
  static constexpr std::int64_t kSmallRound = 512;
  static constexpr std::int64_t kSmallLimit = std::int64_t{1} << 20;
  static constexpr std::int64_t kLargeRound = std::int64_t{2} << 20;

 private:
  void* take_cached_locked(std::int64_t size);  // best fit, or null
  void empty_cache_locked();

  std::unique_ptr<RawDeviceAllocator> raw_;
  mutable std::mutex mutex_;
  // Free blocks by size (best fit: the smallest that is large enough), one pool
  // for each side of kSmallLimit so a small request never pins a large block.
  std::multimap<std::int64_t, void*> free_small_, free_large_;
  std::unordered_map<void*, std::int64_t> in_use_;  // handed-out block -> its size
  CachingStats stats_;
};

// Host memory posing as a device of `capacity` bytes, for running the cache
// (and out-of-memory reports) on the CPU: the trainer's test hook
// (RunConfig::test_device_capacity) puts each rank on one. Its device_usage is
// device 0, its live bytes of `capacity`.
class HostRawAllocator final : public RawDeviceAllocator {
 public:
  explicit HostRawAllocator(std::int64_t capacity) : capacity_(capacity) {}
  void* allocate(std::int64_t bytes) override;  // throws std::runtime_error past the capacity
  void free(void* pointer) noexcept override;
  void zero(void* pointer, std::int64_t bytes) override;
  std::string name() const override { return "test device"; }
  bool device_usage(DeviceUsage& usage) const override;

 private:
  mutable std::mutex mutex_;
  std::int64_t capacity_, live_ = 0;
  std::unordered_map<void*, std::int64_t> sizes_;
};

}  // namespace shardscope
