// SPDX-License-Identifier: GPL-3.0-or-later
// Stand-in for CUDA's cuda_runtime.h under the CPU emulation (cuda_emulation.h),
// implemented by libshardscope_cudart_emulated.so (cuda_runtime_emulated.cpp),
// which every emulated module of a program shares as they would share
// libcudart: pretend devices (one, or SHARDSCOPE_EMULATED_GPUS) whose memory
// is the host's (cudaMalloc is an aligned allocation holding garbage, within
// each device's size: 4 GiB, or SHARDSCOPE_EMULATED_GPU_BYTES),
// asynchronous streams (each a worker thread running its kernels, copies and
// cuBLAS calls in order while the host goes on), events whose waits keep the
// record they saw (a later record or a destroy does not change them), and the
// legacy default stream's rules: work on it (stream 0, cudaMemcpy, cudaMemset)
// waits for every blocking stream of its device and runs at once on the
// calling thread (a GPU would run a memset or device copy asynchronously);
// cudaStreamCreateWithFlags(cudaStreamNonBlocking) makes a stream it does not
// wait for; cudaFree waits for every stream of the device. So a missing stream
// synchronization shows here as it would on a GPU. What a GPU refuses is
// refused: a kernel or cuBLAS call on another device's stream, an event
// recorded on another device's stream, a pointer argument (kernels, cuBLAS,
// copies, NCCL) outside the device's memory, more than 48 KiB of dynamic
// shared memory without cudaFuncSetAttribute.
// A failure inside a stream's work (an emulation check, such as a barrier not
// every thread reaches) is printed and returned, sticky, as
// cudaErrorLaunchFailure by the synchronizing calls, as a GPU fault would be.
// A wait during which no stream finishes any work for SHARDSCOPE_EMULATED_WAIT_S
// seconds (default 120) ends the program with the waiting call named: a
// deadlock, which on a GPU would hang. cudaStreamDestroy waits for the
// stream's work (CUDA's returns at once and lets it finish).
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>

#include "cuda_emulation.h"

using cudaStream_t = CUstream_st*;  // CUstream_st: cuda_emulation.h
struct CUevent_st;
using cudaEvent_t = CUevent_st*;

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorLaunchFailure = 719,
};
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
};
enum cudaDataType_t { CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14 };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
inline constexpr unsigned cudaStreamDefault = 0, cudaStreamNonBlocking = 1;
inline constexpr unsigned cudaEventDefault = 0, cudaEventDisableTiming = 2;

struct cudaDeviceProp {
  char name[256];
  std::size_t totalGlobalMem;
  int major, minor, multiProcessorCount;
};

#define SS_CUDART_API __attribute__((visibility("default")))

SS_CUDART_API cudaError_t cudaGetLastError();
SS_CUDART_API const char* cudaGetErrorName(cudaError_t e);
SS_CUDART_API const char* cudaGetErrorString(cudaError_t e);
SS_CUDART_API cudaError_t cudaGetDeviceCount(int* count);
SS_CUDART_API cudaError_t cudaSetDevice(int device);
SS_CUDART_API cudaError_t cudaGetDevice(int* device);
SS_CUDART_API cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
SS_CUDART_API cudaError_t cudaDeviceSynchronize();
SS_CUDART_API cudaError_t cudaMalloc(void** pointer, std::size_t bytes);
SS_CUDART_API cudaError_t cudaFree(void* pointer);
SS_CUDART_API cudaError_t cudaMemGetInfo(std::size_t* free_bytes, std::size_t* total_bytes);
SS_CUDART_API cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind);
SS_CUDART_API cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                                          cudaStream_t stream);
SS_CUDART_API cudaError_t cudaMemset(void* dst, int value, std::size_t bytes);
SS_CUDART_API cudaError_t cudaMemsetAsync(void* dst, int value, std::size_t bytes, cudaStream_t stream);
SS_CUDART_API cudaError_t cudaStreamCreate(cudaStream_t* stream);
SS_CUDART_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags);
SS_CUDART_API cudaError_t cudaStreamDestroy(cudaStream_t stream);
SS_CUDART_API cudaError_t cudaStreamSynchronize(cudaStream_t stream);
SS_CUDART_API cudaError_t cudaStreamQuery(cudaStream_t stream);
SS_CUDART_API cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags);
SS_CUDART_API cudaError_t cudaEventCreate(cudaEvent_t* event);
SS_CUDART_API cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags);
SS_CUDART_API cudaError_t cudaEventDestroy(cudaEvent_t event);
SS_CUDART_API cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
SS_CUDART_API cudaError_t cudaEventQuery(cudaEvent_t event);
SS_CUDART_API cudaError_t cudaEventSynchronize(cudaEvent_t event);
SS_CUDART_API cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);

template <typename T>
cudaError_t cudaMalloc(T** pointer, std::size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(pointer), bytes);
}

namespace cuda_emulation {
// Each pretend device's size unless SHARDSCOPE_EMULATED_GPU_BYTES says otherwise.
inline constexpr std::size_t kDeviceBytes = std::size_t{4} << 30;
// Runs `work` in stream order: queued on `stream`'s worker, or (stream 0) at
// once on the calling thread once the device's blocking streams are idle, where
// an exception it throws reaches the caller.
SS_CUDART_API void enqueue(cudaStream_t stream, std::function<void()> work);
}  // namespace cuda_emulation

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
cudaError_t cudaFuncSetAttribute(Kernel kernel, cudaFuncAttribute attribute, int value) {
  if (attribute != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaSuccess;
  if (value < 0 || static_cast<std::size_t>(value) > cuda_emulation::max_dynamic_shared_bytes)
    return cudaErrorInvalidValue;
  std::lock_guard lock(cuda_emulation::attributes_mutex);
  cuda_emulation::dynamic_shared_limit[reinterpret_cast<const void*>(kernel)] = static_cast<std::size_t>(value);
  return cudaSuccess;
}
