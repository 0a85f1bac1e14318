// SPDX-License-Identifier: GPL-3.0-or-later
// The C entry points of libshardscope_cuda.so (cuda_plugin_abi.h). Each turns
// CUDA errors and exceptions into a return code and a message, so the engine,
// which loads this plugin with dlopen, never sees a CUDA type or exception.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_error_text.h"
#include "ops/cuda/cuda_plugin_abi.h"
#include "ops/plugin_entry.h"

namespace {

using shardscope::plugin_entry::guarded;
using shardscope::plugin_entry::report;

int report(char* error, std::size_t error_size, const char* call, cudaError_t status) {
  return report(error, error_size, std::string(call) + ": " + shardscope::cuda_error_text(status));
}

// The CudaBackend behind a Backend* handed back to the plugin; throws for any other backend.
shardscope::CudaBackend& as_cuda(shardscope::Backend* backend) {
  auto* cuda = dynamic_cast<shardscope::CudaBackend*>(backend);
  if (cuda == nullptr)
    throw std::invalid_argument("not a CUDA backend: " + (backend != nullptr ? backend->name() : std::string("null")));
  return *cuda;
}

shardscope::DType sixteen_bit(int dtype) {
  if (dtype != static_cast<int>(shardscope::DType::f16) && dtype != static_cast<int>(shardscope::DType::bf16))
    throw std::invalid_argument("dtype " + std::to_string(dtype) + " is not f16 (1) or bf16 (2)");
  return static_cast<shardscope::DType>(dtype);
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int shardscope_cuda_abi_version(void) {
  return SHARDSCOPE_CUDA_PLUGIN_ABI;
}

__attribute__((visibility("default"))) int shardscope_cuda_device_count(int* count, char* error,
                                                                        std::size_t error_size) {
  *count = 0;
  const cudaError_t status = cudaGetDeviceCount(count);
  if (status != cudaSuccess) {
    *count = 0;
    return report(error, error_size, "cudaGetDeviceCount", status);
  }
  return 0;
}

__attribute__((visibility("default"))) int shardscope_cuda_device_info(int device, ShardscopeCudaDeviceInfo* info,
                                                                       char* error, std::size_t error_size) {
  std::memset(info, 0, sizeof *info);
  cudaDeviceProp prop{};
  cudaError_t status = cudaGetDeviceProperties(&prop, device);
  if (status != cudaSuccess) return report(error, error_size, "cudaGetDeviceProperties", status);
  std::snprintf(info->name, sizeof info->name, "%s", prop.name);
  info->compute_major = prop.major;
  info->compute_minor = prop.minor;
  info->multiprocessors = prop.multiProcessorCount;
  info->total_bytes = prop.totalGlobalMem;
  // No cudaMemGetInfo here: it would create a CUDA context (hundreds of MiB)
  // on every GPU probed, also those the run never uses. free_bytes stays 0;
  // shardscope_cuda_mem_get_info asks one device.
  return 0;
}

__attribute__((visibility("default"))) int shardscope_cuda_create_backend(int device, int gemm_math,
                                                                          shardscope::Backend** backend, char* error,
                                                                          std::size_t error_size) {
  *backend = nullptr;
  return guarded(error, error_size, [&] {
    shardscope::CudaBackendOptions options;
    options.device = device;
    if (gemm_math < 0 || gemm_math > 3) throw std::invalid_argument("gemm math " + std::to_string(gemm_math));
    options.math = static_cast<shardscope::GemmMath>(gemm_math);
    *backend = new shardscope::CudaBackend(options);
  });
}

__attribute__((visibility("default"))) int shardscope_cuda_malloc(int device, std::size_t bytes, void** pointer,
                                                                  char* error, std::size_t error_size) {
  *pointer = nullptr;
  cudaError_t status = cudaSetDevice(device);
  if (status != cudaSuccess) return report(error, error_size, "cudaSetDevice", status);
  if ((status = cudaMalloc(pointer, bytes)) != cudaSuccess) {
    *pointer = nullptr;
    return report(error, error_size, ("cudaMalloc(" + std::to_string(bytes) + " bytes)").c_str(), status);
  }
  return 0;
}

__attribute__((visibility("default"))) int shardscope_cuda_free(int device, void* pointer, char* error,
                                                                std::size_t error_size) {
  cudaError_t status = cudaSetDevice(device);
  if (status != cudaSuccess) return report(error, error_size, "cudaSetDevice", status);
  if ((status = cudaFree(pointer)) != cudaSuccess) return report(error, error_size, "cudaFree", status);
  return 0;
}

__attribute__((visibility("default"))) int shardscope_cuda_memcpy(int device, void* dst, const void* src,
                                                                  std::size_t bytes, int kind, char* error,
                                                                  std::size_t error_size) {
  cudaMemcpyKind cuda_kind;
  switch (kind) {
    case shardscope_copy_host_to_device:
      cuda_kind = cudaMemcpyHostToDevice;
      break;
    case shardscope_copy_device_to_host:
      cuda_kind = cudaMemcpyDeviceToHost;
      break;
    case shardscope_copy_device_to_device:
      cuda_kind = cudaMemcpyDeviceToDevice;
      break;
    default:
      return report(error, error_size, "shardscope_cuda_memcpy: unknown copy kind " + std::to_string(kind));
  }
  cudaError_t status = cudaSetDevice(device);
  if (status != cudaSuccess) return report(error, error_size, "cudaSetDevice", status);
  if ((status = cudaMemcpy(dst, src, bytes, cuda_kind)) != cudaSuccess)
    return report(error, error_size, "cudaMemcpy", status);
  return 0;
}

__attribute__((visibility("default"))) int shardscope_cuda_zero(int device, void* pointer, std::size_t bytes,
                                                                char* error, std::size_t error_size) {
  cudaError_t status = cudaSetDevice(device);
  if (status != cudaSuccess) return report(error, error_size, "cudaSetDevice", status);
  if ((status = cudaMemset(pointer, 0, bytes)) != cudaSuccess) return report(error, error_size, "cudaMemset", status);
  return 0;
}

__attribute__((visibility("default"))) int shardscope_cuda_mem_get_info(int device, std::size_t* free_bytes,
                                                                        std::size_t* total_bytes, char* error,
                                                                        std::size_t error_size) {
  *free_bytes = *total_bytes = 0;
  cudaError_t status = cudaSetDevice(device);
  if (status != cudaSuccess) return report(error, error_size, "cudaSetDevice", status);
  if ((status = cudaMemGetInfo(free_bytes, total_bytes)) != cudaSuccess)
    return report(error, error_size, "cudaMemGetInfo", status);
  return 0;
}

__attribute__((visibility("default"))) int shardscope_cuda_synchronize(shardscope::Backend* backend, char* error,
                                                                       std::size_t error_size) {
  return guarded(error, error_size, [&] { as_cuda(backend).synchronize(); });
}

__attribute__((visibility("default"))) int shardscope_cuda_narrow(shardscope::Backend* backend, int dtype,
                                                                  const float* in, std::uint16_t* out, std::int64_t n,
                                                                  char* error, std::size_t error_size) {
  return guarded(error, error_size, [&] {
    if (sixteen_bit(dtype) == shardscope::DType::f16)
      shardscope::cuda_f32_to_f16(as_cuda(backend), in, out, n);
    else
      shardscope::cuda_f32_to_bf16(as_cuda(backend), in, out, n);
  });
}

__attribute__((visibility("default"))) int shardscope_cuda_widen(shardscope::Backend* backend, int dtype,
                                                                 const std::uint16_t* in, float* out, std::int64_t n,
                                                                 char* error, std::size_t error_size) {
  return guarded(error, error_size, [&] {
    if (sixteen_bit(dtype) == shardscope::DType::f16)
      shardscope::cuda_f16_to_f32(as_cuda(backend), in, out, n);
    else
      shardscope::cuda_bf16_to_f32(as_cuda(backend), in, out, n);
  });
}

__attribute__((visibility("default"))) int shardscope_cuda_first_non_finite(shardscope::Backend* backend, int dtype,
                                                                            const void* values, std::int64_t n,
                                                                            std::int64_t* index, char* error,
                                                                            std::size_t error_size) {
  *index = -1;
  return guarded(error, error_size, [&] {
    shardscope::CudaBackend& cuda = as_cuda(backend);
    if (dtype == static_cast<int>(shardscope::DType::f32)) {
      *index = shardscope::cuda_first_non_finite(cuda, static_cast<const float*>(values), n);
    } else if (sixteen_bit(dtype) == shardscope::DType::f16) {
      *index = shardscope::cuda_first_non_finite_f16(cuda, static_cast<const std::uint16_t*>(values), n);
    } else {
      *index = shardscope::cuda_first_non_finite_bf16(cuda, static_cast<const std::uint16_t*>(values), n);
    }
  });
}

__attribute__((visibility("default"))) int shardscope_cuda_gemm_16bit(shardscope::Backend* backend, int dtype,
                                                                      int trans_a, int trans_b, int M, int N, int K,
                                                                      float alpha, const std::uint16_t* A, int lda,
                                                                      const std::uint16_t* B, int ldb, float beta,
                                                                      std::uint16_t* C, int ldc, char* error,
                                                                      std::size_t error_size) {
  using shardscope::Transpose;
  return guarded(error, error_size, [&] {
    as_cuda(backend).gemm_16bit(sixteen_bit(dtype), trans_a != 0 ? Transpose::yes : Transpose::no,
                                trans_b != 0 ? Transpose::yes : Transpose::no, M, N, K, alpha, A, lda, B, ldb, beta, C,
                                ldc);
  });
}

__attribute__((visibility("default"))) int shardscope_cuda_backend_stream(shardscope::Backend* backend, void** stream,
                                                                          char* error, std::size_t error_size) {
  return guarded(error, error_size, [&] { *stream = as_cuda(backend).stream(); });
}

}  // extern "C"
