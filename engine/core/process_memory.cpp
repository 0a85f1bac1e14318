// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/process_memory.h"

#include <fstream>
#include <string>

namespace shardscope {

namespace {
// "VmRSS:	  123456 kB" -> 123456 * 1024; -1 when the line is not `key`.
std::int64_t kilobytes_field(const std::string& line, const std::string& key) {
  if (!line.starts_with(key)) return -1;
  try {
    return std::stoll(line.substr(key.size())) * 1024;
  } catch (const std::exception&) {
    return -1;
  }
}
}  // namespace

std::optional<ProcessMemory> process_memory() {
  std::ifstream status("/proc/self/status");
  if (!status) return std::nullopt;
  ProcessMemory m{-1, -1};
  for (std::string line; std::getline(status, line);) {
    if (const std::int64_t v = kilobytes_field(line, "VmRSS:"); v >= 0) m.resident_bytes = v;
    if (const std::int64_t v = kilobytes_field(line, "VmHWM:"); v >= 0) m.peak_resident_bytes = v;
  }
  if (m.resident_bytes < 0 || m.peak_resident_bytes < 0) return std::nullopt;
  return m;
}

}  // namespace shardscope
