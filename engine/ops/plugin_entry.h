// SPDX-License-Identifier: GPL-3.0-or-later
// What the plugins' C entry points share (ops/cuda/cuda_plugin.cpp,
// ops/nccl/nccl_plugin.cpp): no exception crosses dlopen's boundary; a call
// returns 0, or -1 with its message in the caller's buffer, which the engine
// (ops/plugin_loader.h's PluginErrorText) turns back into an exception.
// Includes no CUDA header.
#pragma once

#include <cstddef>
#include <cstdio>
#include <exception>
#include <string>

namespace shardscope::plugin_entry {

// Writes `message` into `error` (NUL-terminated, cut to error_size); returns -1.
inline int report(char* error, std::size_t error_size, const std::string& message) {
  if (error != nullptr && error_size > 0) std::snprintf(error, error_size, "%s", message.c_str());
  return -1;
}

// Runs `body`: 0, or -1 and the message of the exception it threw.
template <typename Body>
int guarded(char* error, std::size_t error_size, Body body) {
  try {
    body();
    return 0;
  } catch (const std::exception& e) {
    return report(error, error_size, e.what());
  }
}

}  // namespace shardscope::plugin_entry
