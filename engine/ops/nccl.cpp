// SPDX-License-Identifier: GPL-3.0-or-later
#include "ops/nccl.h"

#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <mutex>
#include <stdexcept>

// Set by engine/CMakeLists.txt: where the build puts the plugin, empty when it is not built.
#ifndef SHARDSCOPE_NCCL_PLUGIN_DIR
#define SHARDSCOPE_NCCL_PLUGIN_DIR ""
#endif

namespace shardscope {

namespace {

constexpr const char* kPluginFile = "libshardscope_nccl.so";

struct NcclPlugin {
  ShardscopeNcclVersionFn version = nullptr;
  ShardscopeNcclInitAllFn init_all = nullptr;
  ShardscopeNcclEnqueueFn enqueue = nullptr;
  ShardscopeNcclPollFn poll = nullptr;
  ShardscopeNcclAbortFn abort = nullptr;
  ShardscopeNcclDestroyFn destroy = nullptr;
};

struct Load {
  NcclPlugin plugin;
  bool loaded = false;
  std::string reason;
};

bool exists(const std::string& path) {
  return !path.empty() && ::access(path.c_str(), F_OK) == 0;
}

std::string candidate() {
  if (const char* path = std::getenv("SHARDSCOPE_NCCL_PLUGIN"); path != nullptr && *path) return path;
  std::array<char, 4096> buffer{};
  const ssize_t length = ::readlink("/proc/self/exe", buffer.data(), buffer.size() - 1);
  if (length > 0) {
    std::string dir(buffer.data(), static_cast<std::size_t>(length));
    dir = dir.substr(0, dir.rfind('/'));
    if (exists(dir + "/" + kPluginFile)) return dir + "/" + kPluginFile;
  }
  const std::string build = SHARDSCOPE_NCCL_PLUGIN_DIR;
  if (!build.empty() && exists(build + "/" + kPluginFile)) return build + "/" + kPluginFile;
  return kPluginFile;
}

template <typename Fn>
bool symbol(void* handle, const char* name, Fn& out) {
  out = reinterpret_cast<Fn>(::dlsym(handle, name));
  return out != nullptr;
}

const Load& load() {
  static Load result;
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string path = candidate();
    if (path == kPluginFile && std::string(SHARDSCOPE_NCCL_PLUGIN_DIR).empty()) {
      result.reason = "no NCCL plugin built (ShardScope was compiled without NCCL)";
      return;
    }
    ::dlerror();
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* e = ::dlerror();
      result.reason = std::string("NCCL not found: ") + (e != nullptr ? e : "dlopen failed");
      return;
    }
    ShardscopeNcclAbiVersionFn abi = nullptr;
    if (!symbol(handle, "shardscope_nccl_abi_version", abi) || abi() != SHARDSCOPE_NCCL_PLUGIN_ABI) {
      result.reason = "NCCL plugin " + path + " is stale or not ShardScope's (rebuild it with this engine)";
      return;
    }
    NcclPlugin& p = result.plugin;
    if (!symbol(handle, "shardscope_nccl_version", p.version) ||
        !symbol(handle, "shardscope_nccl_init_all", p.init_all) ||
        !symbol(handle, "shardscope_nccl_enqueue", p.enqueue) || !symbol(handle, "shardscope_nccl_poll", p.poll) ||
        !symbol(handle, "shardscope_nccl_abort", p.abort) || !symbol(handle, "shardscope_nccl_destroy", p.destroy)) {
      result.reason = "NCCL plugin " + path + " is incomplete";
      return;
    }
    result.loaded = true;
  });
  return result;
}

const NcclPlugin& plugin(const char* what) {
  const Load& l = load();
  if (!l.loaded) throw std::runtime_error(std::string(what) + ": " + l.reason);
  return l.plugin;
}

using ErrorText = std::array<char, 1024>;

}  // namespace

NcclAvailability probe_nccl() {
  NcclAvailability a;
  const Load& l = load();
  if (!l.loaded) {
    a.reason = l.reason;
    return a;
  }
  ErrorText error{};
  if (l.plugin.version(&a.version, error.data(), error.size()) != 0) {
    a.reason = std::string("NCCL unusable: ") + error.data();
    return a;
  }
  a.available = true;
  return a;
}

std::vector<void*> nccl_init_all(const std::vector<int>& devices) {
  const NcclPlugin& p = plugin("ncclCommInitAll");
  std::vector<void*> contexts(devices.size(), nullptr);
  ErrorText error{};
  if (p.init_all(static_cast<int>(devices.size()), devices.data(), contexts.data(), error.data(), error.size()) != 0)
    throw std::runtime_error(std::string("NCCL init: ") + error.data());
  return contexts;
}

void nccl_enqueue(void* context, const ShardscopeNcclCall& call) {
  ErrorText error{};
  if (plugin("NCCL call").enqueue(context, &call, error.data(), error.size()) != 0)
    throw std::runtime_error(std::string("NCCL call: ") + error.data());
}

bool nccl_poll(void* context, double& start_ms, double& end_ms) {
  ErrorText error{};
  int done = 0;
  if (plugin("NCCL poll").poll(context, &done, &start_ms, &end_ms, error.data(), error.size()) != 0)
    throw std::runtime_error(error.data());
  return done != 0;
}

void nccl_abort(void* context) noexcept {
  const Load& l = load();
  if (l.loaded && context != nullptr) l.plugin.abort(context);
}

void nccl_destroy(void* context) noexcept {
  const Load& l = load();
  if (l.loaded && context != nullptr) l.plugin.destroy(context);
}

}  // namespace shardscope
