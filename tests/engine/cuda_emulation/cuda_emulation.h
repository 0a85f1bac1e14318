// SPDX-License-Identifier: GPL-3.0-or-later
// Runs CUDA kernel sources on the CPU, to test kernels where no GPU is: a
// test includes this header, then the kernel's .cu file itself, built as C++
// with this folder first on the include path (its cuda_runtime.h, mma.h,
// cuda_bf16.h, cuda_fp16.h and cublas_v2.h stand in for CUDA's).
//
// A launch (SS_LAUNCH, ops/cuda/cuda_common.cuh) runs the grid's blocks one
// after another; each block's threads are real threads, so __syncthreads is a
// barrier between them and a missing one can show as a wrong result. Dynamic
// shared memory is one buffer (blocks run one at a time), filled with 0xFF
// bytes (NaN as float, bf16 and fp16) before each block, so a read of shared
// memory nothing wrote shows as NaN. The wmma calls check what the hardware
// requires (256-bit aligned pointers, leading dimensions a multiple of 8
// 16-bit or 4 float elements). Each thread runs a warp-wide wmma call whole,
// on its own copy of the fragment; only lane 0 stores, so a warp's result
// appears once. Not modelled: warps diverging around a wmma call, shuffles,
// atomics, streams (every launch runs synchronously).
#pragma once

#include <barrier>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__
#define __shared__
#define __align__(n)
#define __launch_bounds__(...)

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

inline thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;

inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }

namespace cuda_emulation {

// The dynamic shared memory a launch may use (the test points it at the
// kernel file's `shared` array) and the most a block may ask for.
inline unsigned char* shared_memory = nullptr;
inline std::size_t shared_memory_bytes = 0;
inline std::size_t max_dynamic_shared_bytes = 99 * 1024;  // sm_86/89, the smallest of the targets
inline thread_local std::barrier<>* block_barrier = nullptr;

[[noreturn]] inline void fail(const std::string& what) { throw std::logic_error("CUDA emulation: " + what); }

template <typename Kernel>
struct Launch {
  Kernel kernel;
  dim3 grid, block;
  std::size_t bytes;
  template <typename... Args>
  void operator()(Args... args) const {
    if (bytes > shared_memory_bytes) fail("a block asks for " + std::to_string(bytes) + " bytes of shared memory");
    const unsigned threads = block.x * block.y * block.z;
    if (threads == 0 || threads > 1024) fail("a block of " + std::to_string(threads) + " threads");
    for (unsigned z = 0; z < grid.z; ++z)
      for (unsigned y = 0; y < grid.y; ++y)
        for (unsigned x = 0; x < grid.x; ++x) {
          std::memset(shared_memory, 0xFF, shared_memory_bytes);
          std::barrier<> barrier(static_cast<std::ptrdiff_t>(threads));
          std::vector<std::exception_ptr> errors(threads);
          std::vector<std::thread> pool;
          pool.reserve(threads);
          for (unsigned t = 0; t < threads; ++t)
            pool.emplace_back([&, t] {
              threadIdx = dim3(t % block.x, t / block.x % block.y, t / (block.x * block.y));
              blockIdx = dim3(x, y, z);
              blockDim = block;
              gridDim = grid;
              block_barrier = &barrier;
              try {
                kernel(args...);
              } catch (...) {
                errors[t] = std::current_exception();
                barrier.arrive_and_drop();  // the others must not wait for it
                return;
              }
            });
          for (auto& th : pool) th.join();
          for (auto& e : errors)
            if (e) std::rethrow_exception(e);
        }
  }
};

template <typename Kernel>
Launch<Kernel> launch(Kernel kernel, dim3 grid, dim3 block, std::size_t bytes) {
  return Launch<Kernel>{kernel, grid, block, bytes};
}

}  // namespace cuda_emulation

inline void __syncthreads() { cuda_emulation::block_barrier->arrive_and_wait(); }

#define SS_LAUNCH(kernel, grid, block, shared_bytes, stream) \
  ::cuda_emulation::launch((kernel), dim3(grid), dim3(block), static_cast<std::size_t>(shared_bytes))
