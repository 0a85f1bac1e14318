// SPDX-License-Identifier: GPL-3.0-or-later
#include "ops/plugin_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>

namespace shardscope {

namespace {

bool file_exists(const std::string& path) {
  return !path.empty() && ::access(path.c_str(), F_OK) == 0;
}

std::string executable_dir() {
  std::array<char, 4096> buffer{};
  const ssize_t length = ::readlink("/proc/self/exe", buffer.data(), buffer.size() - 1);
  if (length <= 0) return {};
  const std::string exe(buffer.data(), static_cast<std::size_t>(length));
  const auto slash = exe.rfind('/');
  return slash == std::string::npos ? std::string() : exe.substr(0, slash);
}

std::string last_dl_error() {
  const char* error = ::dlerror();
  return error != nullptr ? error : "unknown dlopen error";
}

std::string not_found_reason(const PluginSearch& search, const std::string& candidate) {
  const std::string library = search.library, build_dir = search.build_dir;
  if (candidate != search.file)
    return "no " + library + " plugin built: " + candidate + " does not exist (" + search.environment + ")";
  if (build_dir.empty())
    return "no " + library + " plugin built (ShardScope was compiled without " + search.built_without + ")";
  return "no " + library + " plugin built: " + search.file + " is not next to the executable (" + executable_dir() +
         "), in the build directory (" + build_dir + ") or on LD_LIBRARY_PATH";
}

}  // namespace

std::string plugin_candidate(const PluginSearch& search) {
  if (const char* override_path = std::getenv(search.environment); override_path != nullptr && *override_path)
    return override_path;
  const std::string file = search.file;
  if (const std::string dir = executable_dir(); !dir.empty() && file_exists(dir + "/" + file)) return dir + "/" + file;
  if (const std::string build_dir = search.build_dir; !build_dir.empty() && file_exists(build_dir + "/" + file))
    return build_dir + "/" + file;
  return file;
}

OpenedPlugin open_plugin(const PluginSearch& search) {
  OpenedPlugin opened;
  opened.path = plugin_candidate(search);
  const std::string library = search.library;
  if (opened.path != search.file && !file_exists(opened.path)) {
    opened.reason = not_found_reason(search, opened.path);
    return opened;
  }
  ::dlerror();
  void* handle = ::dlopen(opened.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const std::string error = last_dl_error();
    // The bare name not found at all means no plugin; anything else is the
    // plugin found but the libraries it links (libcudart, libnccl) missing.
    if (opened.path == search.file && error.rfind(opened.path + ":", 0) == 0)
      opened.reason = not_found_reason(search, opened.path);
    else
      opened.reason = std::string(search.runtime) + " not found: " + error;
    return opened;
  }
  using AbiVersionFn = int (*)();
  AbiVersionFn abi_version = nullptr;
  if (!find_symbol(handle, search.abi_symbol, abi_version)) {
    opened.reason =
        library + " plugin " + opened.path + " is not a ShardScope " + library + " plugin: " + last_dl_error();
    return opened;
  }
  if (const int version = abi_version(); version != search.abi_version) {
    opened.reason = library + " plugin " + opened.path + " has ABI version " + std::to_string(version) + ", expected " +
                    std::to_string(search.abi_version) + " (rebuild it with this engine)";
    return opened;
  }
  opened.handle = handle;
  return opened;
}

std::string incomplete_plugin_reason(const PluginSearch& search, const std::string& path) {
  return std::string(search.library) + " plugin " + path + " is incomplete: " + last_dl_error();
}

void* plugin_symbol(void* handle, const char* symbol) {
  return ::dlsym(handle, symbol);
}

}  // namespace shardscope
