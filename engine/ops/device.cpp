// SPDX-License-Identifier: GPL-3.0-or-later
// Loading the CUDA plugin (ops/cuda/cuda_plugin_abi.h) through ops/plugin_loader.h:
// the engine links only the dynamic loader, never CUDA. A loaded plugin is never
// unloaded, so backends it made stay valid until the process ends.
#include "ops/device.h"

#include <deque>
#include <mutex>
#include <stdexcept>
#include <string>

#include "core/caching_device_memory.h"
#include "ops/cuda/cuda_plugin_abi.h"
#include "ops/plugin_loader.h"

// Set by engine/CMakeLists.txt: where the build puts the plugin, empty when nvcc was not found.
#ifndef SHARDSCOPE_CUDA_PLUGIN_DIR
#define SHARDSCOPE_CUDA_PLUGIN_DIR ""
#endif

namespace shardscope {

namespace {

constexpr PluginSearch kCudaPlugin{"CUDA",
                                   "CUDA runtime",
                                   "nvcc",
                                   "libshardscope_cuda.so",
                                   "SHARDSCOPE_CUDA_PLUGIN",
                                   SHARDSCOPE_CUDA_PLUGIN_DIR,
                                   "shardscope_cuda_abi_version",
                                   SHARDSCOPE_CUDA_PLUGIN_ABI};

struct Plugin {
  std::string path;
  ShardscopeCudaDeviceCountFn device_count = nullptr;
  ShardscopeCudaDeviceInfoFn device_info = nullptr;
  ShardscopeCudaCreateBackendFn create_backend = nullptr;
  ShardscopeCudaMallocFn malloc = nullptr;
  ShardscopeCudaFreeFn free = nullptr;
  ShardscopeCudaMemcpyFn memcpy = nullptr;
  ShardscopeCudaZeroFn zero = nullptr;
  ShardscopeCudaMemGetInfoFn mem_get_info = nullptr;
  ShardscopeCudaSynchronizeFn synchronize = nullptr;
  ShardscopeCudaNarrowFn narrow = nullptr;
  ShardscopeCudaWidenFn widen = nullptr;
  ShardscopeCudaFirstNonFiniteFn first_non_finite = nullptr;
  ShardscopeCudaGemm16bitFn gemm_16bit = nullptr;
  ShardscopeCudaBackendStreamFn backend_stream = nullptr;
};

struct PluginLoad {
  const Plugin* plugin = nullptr;  // null when not loaded; then `reason` says why
  std::string reason;
};

PluginLoad load_plugin() {
  static std::mutex mutex;
  static std::deque<Plugin> loaded;  // stable addresses; handles are never closed
  const std::lock_guard lock(mutex);
  const std::string candidate = plugin_candidate(kCudaPlugin);
  for (const Plugin& plugin : loaded)
    if (plugin.path == candidate) return {&plugin, {}};

  const OpenedPlugin opened = open_plugin(kCudaPlugin);
  if (opened.handle == nullptr) return {nullptr, opened.reason};
  void* handle = opened.handle;
  Plugin plugin;
  plugin.path = opened.path;
  if (!find_symbol(handle, "shardscope_cuda_device_count", plugin.device_count) ||
      !find_symbol(handle, "shardscope_cuda_device_info", plugin.device_info) ||
      !find_symbol(handle, "shardscope_cuda_create_backend", plugin.create_backend) ||
      !find_symbol(handle, "shardscope_cuda_malloc", plugin.malloc) ||
      !find_symbol(handle, "shardscope_cuda_free", plugin.free) ||
      !find_symbol(handle, "shardscope_cuda_memcpy", plugin.memcpy) ||
      !find_symbol(handle, "shardscope_cuda_zero", plugin.zero) ||
      !find_symbol(handle, "shardscope_cuda_mem_get_info", plugin.mem_get_info) ||
      !find_symbol(handle, "shardscope_cuda_synchronize", plugin.synchronize) ||
      !find_symbol(handle, "shardscope_cuda_narrow", plugin.narrow) ||
      !find_symbol(handle, "shardscope_cuda_widen", plugin.widen) ||
      !find_symbol(handle, "shardscope_cuda_first_non_finite", plugin.first_non_finite) ||
      !find_symbol(handle, "shardscope_cuda_gemm_16bit", plugin.gemm_16bit) ||
      !find_symbol(handle, "shardscope_cuda_backend_stream", plugin.backend_stream))
    return {nullptr, incomplete_plugin_reason(kCudaPlugin, plugin.path)};
  loaded.push_back(plugin);
  return {&loaded.back(), {}};
}

const Plugin& require_plugin(const char* what) {
  const PluginLoad load = load_plugin();
  if (load.plugin == nullptr) throw std::runtime_error(std::string(what) + ": CUDA unavailable: " + load.reason);
  return *load.plugin;
}

void copy(int device, void* dst, const void* src, std::size_t bytes, int kind, const char* what) {
  const Plugin& plugin = require_plugin(what);
  PluginErrorText error{};
  if (plugin.memcpy(device, dst, src, bytes, kind, error.data(), error.size()) != 0)
    throw std::runtime_error(std::string(what) + " on cuda:" + std::to_string(device) + ": " + error.data());
}

// Throws with the plugin's message when a call returned non-zero.
void check_call(int status, const PluginErrorText& error, const char* what) {
  if (status != 0) throw std::runtime_error(std::string(what) + ": " + error.data());
}

}  // namespace

std::string_view device_kind_name(DeviceKind kind) {
  return kind == DeviceKind::cuda ? "cuda" : "cpu";
}

DeviceProbe probe_cuda() {
  DeviceProbe probe;
  try {
    const PluginLoad load = load_plugin();
    if (load.plugin == nullptr) {
      probe.reason = load.reason;
      return probe;
    }
    const Plugin& plugin = *load.plugin;
    probe.plugin_path = plugin.path;
    PluginErrorText error{};
    int count = 0;
    if (plugin.device_count(&count, error.data(), error.size()) != 0) {
      probe.reason = std::string("no CUDA driver or GPU: ") + error.data();
      return probe;
    }
    if (count <= 0) {
      probe.reason = "no CUDA driver or GPU: the driver reports no CUDA device";
      return probe;
    }
    for (int i = 0; i < count; ++i) {
      ShardscopeCudaDeviceInfo info{};
      if (plugin.device_info(i, &info, error.data(), error.size()) != 0) {
        probe.gpus.clear();
        probe.reason = "CUDA device " + std::to_string(i) + " cannot be queried: " + error.data();
        return probe;
      }
      DeviceInfo gpu;
      gpu.kind = DeviceKind::cuda;
      gpu.index = i;
      gpu.name = info.name;
      gpu.total_bytes = info.total_bytes;
      gpu.free_bytes = info.free_bytes;
      gpu.compute_major = info.compute_major;
      gpu.compute_minor = info.compute_minor;
      gpu.multiprocessors = info.multiprocessors;
      probe.gpus.push_back(gpu);
    }
  } catch (const std::exception& e) {  // e.g. bad_alloc: still a reason, never a crash
    probe.gpus.clear();
    probe.reason = std::string("CUDA probe failed: ") + e.what();
  }
  return probe;
}

std::unique_ptr<Backend> make_cuda_backend(int device, std::string_view matmul) {
  const int math = matmul == "fp32" ? 0 : matmul == "tf32" ? 1 : matmul == "bf16" ? 2 : matmul == "fp16" ? 3 : -1;
  if (math < 0) throw std::invalid_argument("make_cuda_backend: matmul must be fp32, tf32, bf16 or fp16");
  const DeviceProbe probe = probe_cuda();
  if (!probe.available()) throw std::runtime_error("CUDA backend unavailable: " + probe.reason);
  if (device < 0 || device >= static_cast<int>(probe.gpus.size()))
    throw std::runtime_error("CUDA backend unavailable: no GPU " + std::to_string(device) + " (" +
                             std::to_string(probe.gpus.size()) + " found)");
  const Plugin& plugin = require_plugin("make_cuda_backend");
  PluginErrorText error{};
  Backend* backend = nullptr;
  if (plugin.create_backend(device, math, &backend, error.data(), error.size()) != 0 || backend == nullptr)
    throw std::runtime_error(std::string("CUDA backend for cuda:") + std::to_string(device) + ": " + error.data());
  // Deleting through the virtual destructor runs the plugin's own code (it stays loaded).
  return std::unique_ptr<Backend>(backend);
}

void* cuda_device_alloc(int device, std::size_t bytes) {
  const Plugin& plugin = require_plugin("cuda_device_alloc");
  PluginErrorText error{};
  void* pointer = nullptr;
  if (plugin.malloc(device, bytes, &pointer, error.data(), error.size()) != 0)
    throw std::runtime_error("cuda_device_alloc on cuda:" + std::to_string(device) + ": " + error.data());
  return pointer;
}

void cuda_device_free(int device, void* pointer) {
  if (pointer == nullptr) return;
  const Plugin& plugin = require_plugin("cuda_device_free");
  PluginErrorText error{};
  if (plugin.free(device, pointer, error.data(), error.size()) != 0)
    throw std::runtime_error("cuda_device_free on cuda:" + std::to_string(device) + ": " + error.data());
}

void cuda_copy_to_device(int device, void* device_dst, const void* host_src, std::size_t bytes) {
  copy(device, device_dst, host_src, bytes, shardscope_copy_host_to_device, "cuda_copy_to_device");
}

void cuda_copy_to_host(int device, void* host_dst, const void* device_src, std::size_t bytes) {
  copy(device, host_dst, device_src, bytes, shardscope_copy_device_to_host, "cuda_copy_to_host");
}

void cuda_zero(int device, void* device_dst, std::size_t bytes) {
  PluginErrorText error{};
  check_call(require_plugin("cuda_zero").zero(device, device_dst, bytes, error.data(), error.size()), error,
             ("cuda_zero on cuda:" + std::to_string(device)).c_str());
}

void cuda_mem_get_info(int device, std::size_t& free_bytes, std::size_t& total_bytes) {
  PluginErrorText error{};
  check_call(
      require_plugin("cuda_mem_get_info").mem_get_info(device, &free_bytes, &total_bytes, error.data(), error.size()),
      error, ("cuda_mem_get_info on cuda:" + std::to_string(device)).c_str());
}

void cuda_synchronize(Backend& cuda_backend) {
  PluginErrorText error{};
  check_call(require_plugin("cuda_synchronize").synchronize(&cuda_backend, error.data(), error.size()), error,
             "cuda_synchronize");
}

void* cuda_stream(Backend& cuda_backend) {
  PluginErrorText error{};
  void* stream = nullptr;
  check_call(require_plugin("cuda_stream").backend_stream(&cuda_backend, &stream, error.data(), error.size()), error,
             "cuda_stream");
  return stream;
}

void cuda_narrow(Backend& cuda_backend, DType dtype, const float* in, std::uint16_t* out, std::int64_t n) {
  PluginErrorText error{};
  check_call(require_plugin("cuda_narrow")
                 .narrow(&cuda_backend, static_cast<int>(dtype), in, out, n, error.data(), error.size()),
             error, "cuda_narrow");
}

void cuda_widen(Backend& cuda_backend, DType dtype, const std::uint16_t* in, float* out, std::int64_t n) {
  PluginErrorText error{};
  check_call(require_plugin("cuda_widen")
                 .widen(&cuda_backend, static_cast<int>(dtype), in, out, n, error.data(), error.size()),
             error, "cuda_widen");
}

std::int64_t cuda_find_non_finite(Backend& cuda_backend, DType dtype, const void* values, std::int64_t n) {
  PluginErrorText error{};
  std::int64_t index = -1;
  check_call(
      require_plugin("cuda_find_non_finite")
          .first_non_finite(&cuda_backend, static_cast<int>(dtype), values, n, &index, error.data(), error.size()),
      error, "cuda_find_non_finite");
  return index;
}

void cuda_gemm_16bit(Backend& cuda_backend, DType dtype, Transpose trans_a, Transpose trans_b, int M, int N, int K,
                     float alpha, const std::uint16_t* A, int lda, const std::uint16_t* B, int ldb, float beta,
                     std::uint16_t* C, int ldc) {
  PluginErrorText error{};
  check_call(require_plugin("cuda_gemm_16bit")
                 .gemm_16bit(&cuda_backend, static_cast<int>(dtype), trans_a == Transpose::yes ? 1 : 0,
                             trans_b == Transpose::yes ? 1 : 0, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc,
                             error.data(), error.size()),
             error, "cuda_gemm_16bit");
}

namespace {
// cudaMalloc, cudaFree and cudaMemset through the plugin: the raw allocator
// under a rank's CachingDeviceMemory. Ordering: a cached block freed while the
// backend's kernels may still read it is safe to hand out again, because its
// cudaMemset runs on the legacy default stream, which waits for all earlier
// work on the backends' blocking streams (and later kernels wait for it).
class CudaRawAllocator final : public RawDeviceAllocator {
 public:
  CudaRawAllocator(int device, Backend* zero_on) : device_(device), zero_on_(zero_on) {}
  void* allocate(std::int64_t bytes) override { return cuda_device_alloc(device_, static_cast<std::size_t>(bytes)); }
  void free(void* pointer) noexcept override {
    try {
      cuda_device_free(device_, pointer);
    } catch (...) {  // a failing free (the context is gone) must not end the process in a destructor
    }
  }
  void zero(void* pointer, std::int64_t bytes) override {
    if (zero_on_ != nullptr) zero_on_->zero(pointer, bytes);  // cudaMemsetAsync on the rank's stream
    else cuda_zero(device_, pointer, static_cast<std::size_t>(bytes));
  }
  std::string name() const override { return "cuda:" + std::to_string(device_); }
  bool device_usage(DeviceUsage& usage) const override {
    try {
      std::size_t free_bytes = 0, total_bytes = 0;
      cuda_mem_get_info(device_, free_bytes, total_bytes);
      usage.device = device_;
      usage.total_bytes = static_cast<std::int64_t>(total_bytes);
      usage.used_bytes = static_cast<std::int64_t>(total_bytes - free_bytes);
      return true;
    } catch (const std::exception&) {  // a sample without device figures, not a failed step
      return false;
    }
  }

 private:
  int device_;
  Backend* zero_on_;
};
}  // namespace

std::unique_ptr<DeviceMemory> make_cuda_device_memory(int device, Backend* zero_on) {
  return std::make_unique<CachingDeviceMemory>(std::make_unique<CudaRawAllocator>(device, zero_on));
}

}  // namespace shardscope
