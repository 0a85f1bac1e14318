// SPDX-License-Identifier: GPL-3.0-or-later
// The C entry points of the CUDA plugin (libshardscope_cuda.so). The engine
// dlopen()s the plugin and looks these names up (ops/device.cpp), so a program
// without CUDA libraries still starts. No entry point throws: each returns 0 on
// success or -1 with a message in `error` (NUL-terminated, cut to error_size).
// Shared by the plugin and the engine; includes no CUDA header.
#pragma once

#include <cstddef>
#include <cstdint>

namespace shardscope {
class Backend;
}

// Bumped whenever an entry point or backend.h's Backend changes, so a stale
// plugin is refused instead of called with the wrong layout.
#define SHARDSCOPE_CUDA_PLUGIN_ABI 7

extern "C" {

enum ShardscopeCudaCopy {
  shardscope_copy_host_to_device = 0,
  shardscope_copy_device_to_host = 1,
  shardscope_copy_device_to_device = 2
};

struct ShardscopeCudaDeviceInfo {
  char name[256];
  std::size_t total_bytes;
  std::size_t free_bytes;  // 0: not measured (it would create a context on every GPU)
  int compute_major;
  int compute_minor;
  int multiprocessors;
};

int shardscope_cuda_abi_version(void);
// Number of GPUs; -1 with the CUDA error when there is no driver or no device.
int shardscope_cuda_device_count(int* count, char* error, std::size_t error_size);
int shardscope_cuda_device_info(int device, ShardscopeCudaDeviceInfo* info, char* error, std::size_t error_size);
// A new CudaBackend for `device`. The engine deletes it through Backend's
// virtual destructor, which runs the plugin's own code (the plugin stays loaded).
// gemm_math: 0 fp32, 1 TF32, 2 bf16 operands, 3 fp16 operands (CudaBackendOptions).
int shardscope_cuda_create_backend(int device, int gemm_math, shardscope::Backend** backend, char* error,
                                   std::size_t error_size);
// Device memory of `device`: cudaMalloc, cudaFree, cudaMemcpy (synchronous; it
// waits for work queued by the backends, whose streams are blocking streams).
int shardscope_cuda_malloc(int device, std::size_t bytes, void** pointer, char* error, std::size_t error_size);
int shardscope_cuda_free(int device, void* pointer, char* error, std::size_t error_size);
int shardscope_cuda_memcpy(int device, void* dst, const void* src, std::size_t bytes, int kind, char* error,
                           std::size_t error_size);

// cudaMemset to zero (synchronous, ordered like shardscope_cuda_memcpy).
int shardscope_cuda_zero(int device, void* pointer, std::size_t bytes, char* error, std::size_t error_size);
// cudaMemGetInfo on `device`: its free and total bytes, as the driver counts them.
int shardscope_cuda_mem_get_info(int device, std::size_t* free_bytes, std::size_t* total_bytes, char* error,
                                 std::size_t error_size);
// Waits for every op queued on a backend made by shardscope_cuda_create_backend
// (for host timing of GPU work).
int shardscope_cuda_synchronize(shardscope::Backend* backend, char* error, std::size_t error_size);

// Mixed precision on a backend made by shardscope_cuda_create_backend, on its
// stream. dtype is shardscope::DType as an int: 0 f32, 1 f16, 2 bf16.
int shardscope_cuda_narrow(shardscope::Backend* backend, int dtype, const float* in, std::uint16_t* out, std::int64_t n,
                           char* error, std::size_t error_size);
int shardscope_cuda_widen(shardscope::Backend* backend, int dtype, const std::uint16_t* in, float* out, std::int64_t n,
                          char* error, std::size_t error_size);
// *index = the first inf or NaN, or -1 (synchronizes).
int shardscope_cuda_first_non_finite(shardscope::Backend* backend, int dtype, const void* values, std::int64_t n,
                                     std::int64_t* index, char* error, std::size_t error_size);
// CudaBackend::gemm_16bit; trans_a, trans_b: 0 no, 1 yes.
int shardscope_cuda_gemm_16bit(shardscope::Backend* backend, int dtype, int trans_a, int trans_b, int M, int N, int K,
                               float alpha, const std::uint16_t* A, int lda, const std::uint16_t* B, int ldb,
                               float beta, std::uint16_t* C, int ldc, char* error, std::size_t error_size);

// The cudaStream_t of a backend made by shardscope_cuda_create_backend (for
// the NCCL plugin, which runs collectives on a rank's streams).
int shardscope_cuda_backend_stream(shardscope::Backend* backend, void** stream, char* error, std::size_t error_size);

using ShardscopeCudaAbiVersionFn = int (*)(void);
using ShardscopeCudaDeviceCountFn = int (*)(int*, char*, std::size_t);
using ShardscopeCudaDeviceInfoFn = int (*)(int, ShardscopeCudaDeviceInfo*, char*, std::size_t);
using ShardscopeCudaCreateBackendFn = int (*)(int, int, shardscope::Backend**, char*, std::size_t);
using ShardscopeCudaMallocFn = int (*)(int, std::size_t, void**, char*, std::size_t);
using ShardscopeCudaFreeFn = int (*)(int, void*, char*, std::size_t);
using ShardscopeCudaMemcpyFn = int (*)(int, void*, const void*, std::size_t, int, char*, std::size_t);
using ShardscopeCudaZeroFn = int (*)(int, void*, std::size_t, char*, std::size_t);
using ShardscopeCudaMemGetInfoFn = int (*)(int, std::size_t*, std::size_t*, char*, std::size_t);
using ShardscopeCudaSynchronizeFn = int (*)(shardscope::Backend*, char*, std::size_t);
using ShardscopeCudaNarrowFn = int (*)(shardscope::Backend*, int, const float*, std::uint16_t*, std::int64_t, char*,
                                       std::size_t);
using ShardscopeCudaWidenFn = int (*)(shardscope::Backend*, int, const std::uint16_t*, float*, std::int64_t, char*,
                                      std::size_t);
using ShardscopeCudaFirstNonFiniteFn = int (*)(shardscope::Backend*, int, const void*, std::int64_t, std::int64_t*,
                                               char*, std::size_t);
using ShardscopeCudaGemm16bitFn = int (*)(shardscope::Backend*, int, int, int, int, int, int, float,
                                          const std::uint16_t*, int, const std::uint16_t*, int, float, std::uint16_t*,
                                          int, char*, std::size_t);

using ShardscopeCudaBackendStreamFn = int (*)(shardscope::Backend*, void**, char*, std::size_t);

}  // extern "C"
