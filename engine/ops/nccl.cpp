// SPDX-License-Identifier: GPL-3.0-or-later
// Loading the NCCL plugin (ops/nccl/nccl_plugin_abi.h) through
// ops/plugin_loader.h, as the CUDA plugin is loaded.
#include "ops/nccl.h"

#include <mutex>
#include <stdexcept>

#include "ops/plugin_loader.h"

// Set by engine/CMakeLists.txt: where the build puts the plugin, empty when it is not built.
#ifndef SHARDSCOPE_NCCL_PLUGIN_DIR
#define SHARDSCOPE_NCCL_PLUGIN_DIR ""
#endif

namespace shardscope {

namespace {

constexpr PluginSearch kNcclPlugin{"NCCL",
                                   "NCCL",
                                   "NCCL",
                                   "libshardscope_nccl.so",
                                   "SHARDSCOPE_NCCL_PLUGIN",
                                   SHARDSCOPE_NCCL_PLUGIN_DIR,
                                   "shardscope_nccl_abi_version",
                                   SHARDSCOPE_NCCL_PLUGIN_ABI};

struct NcclPlugin {
  ShardscopeNcclVersionFn version = nullptr;
  ShardscopeNcclInitAllFn init_all = nullptr;
  ShardscopeNcclUniqueIdFn unique_id = nullptr;
  ShardscopeNcclInitRankFn init_rank = nullptr;
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

// Loaded on the first call, once per process: SHARDSCOPE_NCCL_PLUGIN must be set before it.
const Load& load() {
  static Load result;
  static std::once_flag once;
  std::call_once(once, [] {
    const OpenedPlugin opened = open_plugin(kNcclPlugin);
    if (opened.handle == nullptr) {
      result.reason = opened.reason;
      return;
    }
    void* handle = opened.handle;
    NcclPlugin& p = result.plugin;
    if (!find_symbol(handle, "shardscope_nccl_version", p.version) ||
        !find_symbol(handle, "shardscope_nccl_init_all", p.init_all) ||
        !find_symbol(handle, "shardscope_nccl_unique_id", p.unique_id) ||
        !find_symbol(handle, "shardscope_nccl_init_rank", p.init_rank) ||
        !find_symbol(handle, "shardscope_nccl_enqueue", p.enqueue) ||
        !find_symbol(handle, "shardscope_nccl_poll", p.poll) ||
        !find_symbol(handle, "shardscope_nccl_abort", p.abort) ||
        !find_symbol(handle, "shardscope_nccl_destroy", p.destroy)) {
      result.reason = incomplete_plugin_reason(kNcclPlugin, opened.path);
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

}  // namespace

NcclAvailability probe_nccl() {
  NcclAvailability a;
  const Load& l = load();
  if (!l.loaded) {
    a.reason = l.reason;
    return a;
  }
  PluginErrorText error{};
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
  PluginErrorText error{};
  if (p.init_all(static_cast<int>(devices.size()), devices.data(), contexts.data(), error.data(), error.size()) != 0)
    throw std::runtime_error(std::string("NCCL init: ") + error.data());
  return contexts;
}

NcclUniqueId nccl_unique_id() {
  NcclUniqueId id{};
  PluginErrorText error{};
  if (plugin("ncclGetUniqueId").unique_id(id.data(), error.data(), error.size()) != 0)
    throw std::runtime_error(std::string("NCCL unique id: ") + error.data());
  return id;
}

void* nccl_init_rank(int nranks, const NcclUniqueId& id, int rank, int device) {
  void* context = nullptr;
  PluginErrorText error{};
  if (plugin("ncclCommInitRank").init_rank(nranks, id.data(), rank, device, &context, error.data(), error.size()) != 0)
    throw std::runtime_error("NCCL init of rank " + std::to_string(rank) + " of " + std::to_string(nranks) +
                             " on GPU " + std::to_string(device) + ": " + error.data());
  return context;
}

void nccl_enqueue(void* context, const ShardscopeNcclCall& call) {
  PluginErrorText error{};
  if (plugin("NCCL call").enqueue(context, &call, error.data(), error.size()) != 0)
    throw std::runtime_error(std::string("NCCL call: ") + error.data());
}

bool nccl_poll(void* context, double& start_ms, double& end_ms) {
  PluginErrorText error{};
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
