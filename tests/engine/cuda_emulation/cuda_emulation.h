// SPDX-License-Identifier: GPL-3.0-or-later
// Runs CUDA kernel sources on the CPU, to test kernels where no GPU is: a
// test includes this header, then the kernel's .cu file itself, built as C++
// with this folder first on the include path (its cuda_runtime.h, mma.h,
// cuda_bf16.h, cuda_fp16.h and cublas_v2.h stand in for CUDA's).
//
// A launch (SS_LAUNCH, ops/cuda/cuda_common.cuh) runs the grid's blocks one
// after another; each block's threads are real threads, so __syncthreads is a
// barrier between them and a missing one can show as a wrong result, and a
// warp's shuffles (__shfl_xor_sync, __shfl_sync) exchange values through a
// barrier of its 32 lanes. Shared memory is shared by a block's threads: static
// __shared__ arrays become function statics, and the dynamic shared memory
// (SS_DYNAMIC_SHARED) is one buffer; blocks run one at a time, and the buffer
// is filled with 0xFF bytes (NaN as float, bf16 and fp16) before each block, so
// a read of shared memory nothing wrote shows as NaN. The wmma calls check what the hardware
// requires (256-bit aligned pointers, leading dimensions a multiple of 8
// 16-bit or 4 float elements). Each thread runs a warp-wide wmma call whole,
// on its own copy of the fragment; only lane 0 stores, so a warp's result
// appears once. Not modelled: warps diverging around a wmma call, shuffles,
// atomics, streams (every launch runs synchronously).
#pragma once

#include <math.h>

#include <array>
#include <barrier>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <memory>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__
#define __shared__ static
#define __align__(n)
#define __launch_bounds__(...)

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

inline thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;

struct CUstream_st;

inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }

namespace cuda_emulation {

// The dynamic shared memory of a block, and the most a block may ask for
// (cudaFuncSetAttribute refuses more).
alignas(128) inline unsigned char shared_memory[256 * 1024];
inline constexpr std::size_t shared_memory_bytes = sizeof shared_memory;
inline std::size_t max_dynamic_shared_bytes = 99 * 1024;  // sm_86/89, the smallest of the targets
inline thread_local std::barrier<>* block_barrier = nullptr;

// The 32 lanes of a warp meet here to shuffle.
struct Warp {
  std::barrier<> barrier{32};
  std::array<std::uint64_t, 32> slots{};
};
inline thread_local Warp* current_warp = nullptr;

// Every lane publishes its value, then reads lane `source` (after a barrier),
// then waits until all have read before a later shuffle overwrites the slots.
template <typename T, typename Source>
T exchange(T value, Source source) {
  static_assert(sizeof(T) <= sizeof(std::uint64_t));
  Warp& w = *current_warp;
  const int lane = static_cast<int>(threadIdx.x % 32);
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  w.slots[static_cast<std::size_t>(lane)] = bits;
  w.barrier.arrive_and_wait();
  const std::uint64_t got = w.slots[static_cast<std::size_t>(source(lane) & 31)];
  w.barrier.arrive_and_wait();
  T out;
  std::memcpy(&out, &got, sizeof(T));
  return out;
}

[[noreturn]] inline void fail(const std::string& what) { throw std::logic_error("CUDA emulation: " + what); }

template <typename Kernel>
struct Launch {
  Kernel kernel;
  dim3 grid, block;
  std::size_t bytes;
  // One thread per thread of a block, kept for the whole grid; between blocks
  // they meet at `between`, and thread 0 refills the shared memory and makes
  // the block's fresh barriers. A thread that returns from the kernel leaves
  // the block's barriers (arrive_and_drop), as an exited GPU thread no longer
  // holds up __syncthreads.
  template <typename... Args>
  void operator()(Args... args) const {
    if (bytes > shared_memory_bytes) fail("a block asks for " + std::to_string(bytes) + " bytes of shared memory");
    const unsigned threads = block.x * block.y * block.z;
    if (threads == 0 || threads > 1024 || threads % 32 != 0)
      fail("a block of " + std::to_string(threads) + " threads (whole warps of 32 only)");
    std::barrier<> between(static_cast<std::ptrdiff_t>(threads));
    std::unique_ptr<std::barrier<>> barrier;
    std::vector<std::unique_ptr<Warp>> warps;
    std::vector<std::exception_ptr> errors(threads);
    auto worker = [&](unsigned t) {
      threadIdx = dim3(t % block.x, t / block.x % block.y, t / (block.x * block.y));
      blockDim = block;
      gridDim = grid;
      for (unsigned z = 0; z < grid.z; ++z)
        for (unsigned y = 0; y < grid.y; ++y)
          for (unsigned x = 0; x < grid.x; ++x) {
            between.arrive_and_wait();  // the previous block is done
            if (t == 0) {
              std::memset(shared_memory, 0xFF, shared_memory_bytes);
              barrier = std::make_unique<std::barrier<>>(static_cast<std::ptrdiff_t>(threads));
              warps.clear();
              for (unsigned w = 0; w < threads / 32; ++w) warps.push_back(std::make_unique<Warp>());
            }
            between.arrive_and_wait();  // this block's memory and barriers are ready
            blockIdx = dim3(x, y, z);
            block_barrier = barrier.get();
            current_warp = warps[t / 32].get();
            try {
              kernel(args...);
            } catch (...) {
              if (!errors[t]) errors[t] = std::current_exception();
            }
            block_barrier->arrive_and_drop();
            current_warp->barrier.arrive_and_drop();
          }
    };
    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker, t);
    for (auto& th : pool) th.join();
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
  }
};

// Every launch runs synchronously, so the stream only has to be a stream.
template <typename Kernel>
Launch<Kernel> launch(Kernel kernel, dim3 grid, dim3 block, std::size_t bytes, CUstream_st* /*stream*/) {
  return Launch<Kernel>{kernel, grid, block, bytes};
}

}  // namespace cuda_emulation

inline void __syncthreads() { cuda_emulation::block_barrier->arrive_and_wait(); }

// Full-warp shuffles only (mask 0xffffffff, width 32), as the kernels use them.
template <typename T>
T __shfl_xor_sync(unsigned /*mask*/, T value, int lane_mask) {
  return cuda_emulation::exchange(value, [lane_mask](int lane) { return lane ^ lane_mask; });
}
template <typename T>
T __shfl_sync(unsigned /*mask*/, T value, int source_lane) {
  return cuda_emulation::exchange(value, [source_lane](int) { return source_lane; });
}

#define SS_DYNAMIC_SHARED(name) unsigned char* const name = ::cuda_emulation::shared_memory

#define SS_LAUNCH(kernel, grid, block, shared_bytes, stream) \
  ::cuda_emulation::launch((kernel), dim3(grid), dim3(block), static_cast<std::size_t>(shared_bytes), (stream))
