// SPDX-License-Identifier: GPL-3.0-or-later
// Finding and opening a ShardScope plugin with dlopen, the one way for both:
// the CUDA plugin (ops/device.cpp) and the NCCL plugin (ops/nccl.cpp). The
// engine links only the dynamic loader (${CMAKE_DL_LIBS}), never CUDA or NCCL,
// so a program starts where they are missing and the reason says why. An
// opened plugin is never closed, so what it made stays valid until the
// process ends.
#pragma once

#include <array>
#include <string>

namespace shardscope {

// Where a plugin is looked for, and the words of its reasons.
struct PluginSearch {
  const char* library;        // "CUDA": "no CUDA plugin built", "CUDA plugin <path> is incomplete"
  const char* runtime;        // "CUDA runtime": "<runtime> not found: <dlerror>" when its libraries are missing
  const char* built_without;  // "nvcc": "ShardScope was compiled without <built_without>"
  const char* file;           // "libshardscope_cuda.so"
  const char* environment;    // "SHARDSCOPE_CUDA_PLUGIN": a file that overrides the search
  const char* build_dir;      // where the build puts the plugin; empty when it was not built
  const char* abi_symbol;     // "shardscope_cuda_abi_version"
  int abi_version;            // the plugin ABI this engine was built against
};

struct OpenedPlugin {
  void* handle = nullptr;  // null when not opened; then `reason` says why
  std::string path;        // the file opened (or tried)
  std::string reason;
};

// The file to open: the environment override if set, else the first that
// exists of next-to-the-executable (/proc/self/exe) and the build directory,
// else the bare name (dlopen then searches LD_LIBRARY_PATH and the loader's
// paths).
std::string plugin_candidate(const PluginSearch& search);

// dlopen()s the candidate and checks its ABI version, first, so that a stale
// plugin is named as stale, not as incomplete. Never throws. Reasons: "no
// <library> plugin built ...", "<runtime> not found: <dlerror>" (the plugin is
// there but not the libraries it links), "<library> plugin <path> is not a
// ShardScope <library> plugin: ...", "... has ABI version N, expected M ...".
OpenedPlugin open_plugin(const PluginSearch& search);

// The reason when an entry point of an opened plugin is missing (with dlerror).
std::string incomplete_plugin_reason(const PluginSearch& search, const std::string& path);

void* plugin_symbol(void* handle, const char* symbol);

// Looks `symbol` up as the entry point type Fn; false when the plugin lacks it.
template <typename Fn>
bool find_symbol(void* handle, const char* symbol, Fn& out) {
  out = reinterpret_cast<Fn>(plugin_symbol(handle, symbol));
  return out != nullptr;
}

// Where a plugin entry point writes its message when it returns non-zero.
using PluginErrorText = std::array<char, 1024>;

}  // namespace shardscope
