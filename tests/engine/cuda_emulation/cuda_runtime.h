// SPDX-License-Identifier: GPL-3.0-or-later
// Stand-in for CUDA's cuda_runtime.h under the CPU emulation (cuda_emulation.h):
// one pretend device whose memory is the host's (cudaMalloc is an aligned
// allocation, copies are memcpy), streams that run everything at once (every
// launch and copy completes before the call returns), and the device queries
// the CUDA backend makes.
#pragma once

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "cuda_emulation.h"

using cudaStream_t = CUstream_st*;  // CUstream_st: cuda_emulation.h

enum cudaError_t { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2, cudaErrorInvalidDevice = 101 };
enum cudaMemcpyKind { cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2,
                      cudaMemcpyDeviceToDevice = 3, cudaMemcpyDefault = 4 };
enum cudaDataType_t { CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14 };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };

inline cudaError_t cudaGetLastError() { return cudaSuccess; }
inline const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    default: return "cudaErrorInvalidValue";
  }
}
inline const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    default: return "invalid argument";
  }
}

// ---- the pretend device --------------------------------------------------------------
namespace cuda_emulation {
inline constexpr std::size_t kDeviceBytes = std::size_t{4} << 30;  // what cudaMemGetInfo reports as total
inline std::mutex allocations_mutex;
inline std::map<void*, std::size_t> allocations;
inline std::size_t allocated_bytes = 0;
}  // namespace cuda_emulation

struct cudaDeviceProp {
  char name[256];
  std::size_t totalGlobalMem;
  int major, minor, multiProcessorCount;
};

inline cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}
inline cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : cudaErrorInvalidDevice; }
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device != 0) return cudaErrorInvalidDevice;
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof prop->name, "%s", "CUDA emulation on the CPU");
  prop->totalGlobalMem = cuda_emulation::kDeviceBytes;
  prop->major = 8;
  prop->minor = 0;
  prop->multiProcessorCount = 1;
  return cudaSuccess;
}
inline cudaError_t cudaMalloc(void** pointer, std::size_t bytes) {
  std::lock_guard lock(cuda_emulation::allocations_mutex);
  if (cuda_emulation::allocated_bytes + bytes > cuda_emulation::kDeviceBytes) return cudaErrorMemoryAllocation;
  void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
  if (p == nullptr) return cudaErrorMemoryAllocation;
  std::memset(p, 0xA5, bytes);  // fresh device memory holds garbage, not zeros
  cuda_emulation::allocations[p] = bytes;
  cuda_emulation::allocated_bytes += bytes;
  *pointer = p;
  return cudaSuccess;
}
template <typename T>
cudaError_t cudaMalloc(T** pointer, std::size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(pointer), bytes);
}
inline cudaError_t cudaFree(void* pointer) {
  if (pointer == nullptr) return cudaSuccess;
  std::lock_guard lock(cuda_emulation::allocations_mutex);
  // A block another module of the program allocated (its own copy of this
  // header's bookkeeping, if its symbols are not shared) is freed all the same.
  auto it = cuda_emulation::allocations.find(pointer);
  if (it != cuda_emulation::allocations.end()) {
    cuda_emulation::allocated_bytes -= it->second;
    cuda_emulation::allocations.erase(it);
  }
  std::free(pointer);
  return cudaSuccess;
}
inline cudaError_t cudaMemGetInfo(std::size_t* free_bytes, std::size_t* total_bytes) {
  std::lock_guard lock(cuda_emulation::allocations_mutex);
  *total_bytes = cuda_emulation::kDeviceBytes;
  *free_bytes = cuda_emulation::kDeviceBytes - cuda_emulation::allocated_bytes;
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind) {
  if (bytes > 0) std::memmove(dst, src, bytes);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, cudaStream_t) {
  return cudaMemcpy(dst, src, bytes, kind);
}
inline cudaError_t cudaMemset(void* dst, int value, std::size_t bytes) {
  if (bytes > 0) std::memset(dst, value, bytes);
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void* dst, int value, std::size_t bytes, cudaStream_t) {
  return cudaMemset(dst, value, bytes);
}
struct CUstream_st {};
inline cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  *stream = new CUstream_st;
  return cudaSuccess;
}
inline cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  delete stream;
  return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }

// Atomics: the emulation's threads are real threads.
template <typename T>
T atomicMin(T* address, T value) {
  std::atomic_ref<T> a(*address);
  T old = a.load();
  while (value < old && !a.compare_exchange_weak(old, value)) {
  }
  return old;
}

template <typename Kernel>
cudaError_t cudaFuncSetAttribute(Kernel, cudaFuncAttribute attribute, int value) {
  if (attribute == cudaFuncAttributeMaxDynamicSharedMemorySize &&
      (value < 0 || static_cast<std::size_t>(value) > cuda_emulation::max_dynamic_shared_bytes))
    return cudaErrorInvalidValue;
  return cudaSuccess;
}
