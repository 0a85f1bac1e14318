// SPDX-License-Identifier: GPL-3.0-or-later
// Which devices this process can train on. The CPU is always there; GPUs come
// through the CUDA plugin (libshardscope_cuda.so), loaded with dlopen on first
// use, so the engine links no CUDA library and a program built with CUDA still
// starts where the CUDA libraries, the driver or the GPU are missing: the probe
// then says why, in words a user can act on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/memory_ledger.h"
#include "ops/backend.h"

namespace shardscope {

enum class DeviceKind { cpu, cuda };

std::string_view device_kind_name(DeviceKind kind);  // "cpu", "cuda"

struct DeviceInfo {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;                // CUDA device ordinal
  std::string name;             // "NVIDIA H200"
  std::size_t total_bytes = 0;  // device memory
  std::size_t free_bytes = 0;   // 0: the probe does not measure it (a context on every GPU); cuda_mem_get_info
  int compute_major = 0;        // compute capability, e.g. 9.0
  int compute_minor = 0;
  int multiprocessors = 0;
};

struct DeviceProbe {
  std::vector<DeviceInfo> gpus;  // empty when no GPU can be used
  std::string reason;            // why gpus is empty; empty when GPUs were found
  std::string plugin_path;       // the plugin that answered, if one was loaded
  bool available() const { return !gpus.empty(); }
};

// Looks for GPUs through the plugin: next to the executable (/proc/self/exe),
// then in the build directory, then on LD_LIBRARY_PATH (the environment
// variable SHARDSCOPE_CUDA_PLUGIN, a file path, overrides the search). Never
// throws. Reasons: "no CUDA plugin built ...", "CUDA runtime not found: <dlerror>",
// "no CUDA driver or GPU: <cuda error>". The plugin stays loaded for the process.
DeviceProbe probe_cuda();

// A CUDA backend for GPU `device` (its pointers are device memory). Throws
// std::runtime_error naming the reason when no GPU is usable. The plugin stays
// loaded for the life of the process, so the backend may outlive any caller.
// `matmul`: how its fp32 gemms multiply (ops/cuda/cuda_backend.h's GemmMath):
// "fp32" (full precision, PyTorch's default), "tf32", or "bf16" / "fp16"
// (operands rounded for the tensor cores, fp32 accumulation: torch.autocast's
// matmuls in a mixed-precision run). std::invalid_argument for another name.
std::unique_ptr<Backend> make_cuda_backend(int device, std::string_view matmul = "fp32");

// Device memory through the plugin, for host code that links no CUDA. Copies
// are synchronous and ordered after every op queued by the CUDA backends.
// Each throws std::runtime_error with the CUDA error.
void* cuda_device_alloc(int device, std::size_t bytes);
void cuda_device_free(int device, void* pointer);
void cuda_copy_to_device(int device, void* device_dst, const void* host_src, std::size_t bytes);
void cuda_copy_to_host(int device, void* host_dst, const void* device_src, std::size_t bytes);
void cuda_zero(int device, void* device_dst, std::size_t bytes);  // as Buffer's zero fill
// cudaMemGetInfo: the device's free and total bytes (every process counted).
void cuda_mem_get_info(int device, std::size_t& free_bytes, std::size_t& total_bytes);
// GPU `device`'s memory for a rank's ledger (MemoryLedger::set_device_memory):
// a CachingDeviceMemory (core/caching_device_memory.h) over cudaMalloc, so
// every Buffer of the rank is a zeroed block charged to its category, and
// steps after the first reuse the blocks instead of calling cudaMalloc.
// zero_on: the rank's compute backend (from make_cuda_backend on `device`),
// whose stream zeroes each block handed out: after the kernels that used a
// reused block, and without waiting for the rest of the GPU (other ranks,
// collectives). Null: a cudaMemset on the legacy default stream, which waits
// for every blocking stream of the device. Code that then uses a fresh block
// on another stream waits for zero_on's stream first.
std::unique_ptr<DeviceMemory> make_cuda_device_memory(int device, Backend* zero_on = nullptr);
// Waits for every op queued on a backend from make_cuda_backend: GPU ops are
// asynchronous, so host clocks around them measure only the launch without this.
void cuda_synchronize(Backend& cuda_backend);
// The cudaStream_t (as void*) a backend from make_cuda_backend queues its ops on.
void* cuda_stream(Backend& cuda_backend);

// Mixed precision on a backend from make_cuda_backend (device pointers, its
// stream), through the plugin. Each throws std::runtime_error for another
// backend, a dtype other than f16/bf16 (f32 too for the check), or a CUDA error.
// narrow/widen round exactly as core/half.h; first_non_finite synchronizes and
// returns the index of the first inf or NaN, or -1.
void cuda_narrow(Backend& cuda_backend, DType dtype, const float* in, std::uint16_t* out, std::int64_t n);
void cuda_widen(Backend& cuda_backend, DType dtype, const std::uint16_t* in, float* out, std::int64_t n);
std::int64_t cuda_find_non_finite(Backend& cuda_backend, DType dtype, const void* values, std::int64_t n);
// C (M, N) = alpha op(A) op(B) + beta C in f16 or bf16 storage, summed in fp32 (row-major, as Backend::gemm).
void cuda_gemm_16bit(Backend& cuda_backend, DType dtype, Transpose trans_a, Transpose trans_b, int M, int N, int K,
                     float alpha, const std::uint16_t* A, int lda, const std::uint16_t* B, int ldb, float beta,
                     std::uint16_t* C, int ldc);

}  // namespace shardscope
