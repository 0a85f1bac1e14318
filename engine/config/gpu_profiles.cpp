// SPDX-License-Identifier: GPL-3.0-or-later
#include "config/gpu_profiles.h"

#include <cctype>
#include <charconv>
#include <cmath>

#include "core/did_you_mean.h"
#include "core/error.h"

namespace shardscope {

namespace {
constexpr std::int64_t kMiB = 1ll << 20;

std::string normalized(std::string_view text) {
  std::string out;
  for (char c : text)
    if (c != '-' && c != ' ' && c != '_') out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}
}  // namespace

const std::vector<GpuProfile>& gpu_profiles() {
  // Memory: the total nvidia-smi reports (MiB). FLOP/s: dense, without 2:4 sparsity.
  // Links: NVLink's total bandwidth is both directions; the ring uses one, so half.
  // Between nodes: one InfiniBand NIC per GPU, as in DGX systems (an assumption).
  static const std::vector<GpuProfile> profiles = {
      {"A100-40GB", "NVIDIA A100 SXM4 40GB", 40960 * kMiB, 19.5, 156, 312, 1555, 300, "NVLink 3 (600 GB/s total)", 25,
       "HDR InfiniBand 200 Gb/s per GPU"},
      {"A100-80GB", "NVIDIA A100 SXM4 80GB", 81920 * kMiB, 19.5, 156, 312, 2039, 300, "NVLink 3 (600 GB/s total)", 25,
       "HDR InfiniBand 200 Gb/s per GPU"},
      {"H100", "NVIDIA H100 SXM5 80GB", 81559 * kMiB, 67, 494.7, 989.4, 3350, 450, "NVLink 4 (900 GB/s total)", 50,
       "NDR InfiniBand 400 Gb/s per GPU"},
      {"H200", "NVIDIA H200 SXM 141GB", 143771 * kMiB, 67, 494.7, 989.4, 4800, 450, "NVLink 4 (900 GB/s total)", 50,
       "NDR InfiniBand 400 Gb/s per GPU"},
      {"RTX4090", "NVIDIA GeForce RTX 4090 24GB", 24564 * kMiB, 82.6, 82.6, 165.2, 1008, 32,
       "PCIe 4.0 x16 (no NVLink; 64 GB/s total)", 12.5, "100 Gb Ethernet"},
  };
  return profiles;
}

const GpuProfile& find_gpu_profile(std::string_view name) {
  std::string known;
  std::vector<std::string> names;  // normalized, as they are compared
  const std::string wanted = normalized(name);
  for (const auto& p : gpu_profiles()) {
    if (normalized(p.name) == wanted) return p;
    known += (known.empty() ? "" : ", ") + p.name;
    names.push_back(normalized(p.name));
  }
  std::string guess;
  if (const std::string near = nearest_name(wanted, names); !near.empty())
    for (const auto& p : gpu_profiles())
      if (normalized(p.name) == near) guess = "; did you mean '" + p.name + "'?";
  throw ConfigError("--gpu: unknown GPU profile '" + std::string(name) + "'" + guess + " (known: " + known +
                    "; or give --gpu-mem SIZE)");
}

std::int64_t parse_memory_size(std::string_view text) {
  // Spaces and '_' (digit groups) are dropped, but not '-': here it is a sign, not a separator as in GPU names.
  std::string compact;
  for (char c : text)
    if (c != ' ' && c != '_') compact += c;
  const char* begin = compact.data();
  const char* end = begin + compact.size();
  double value = 0;
  const auto [ptr, ec] = std::from_chars(begin, end, value);
  std::string unit;
  for (const char* c = ptr; c != end; ++c) unit += static_cast<char>(std::toupper(static_cast<unsigned char>(*c)));
  double scale = 0;
  if (unit.empty() || unit == "GB" || unit == "G")
    scale = 1e9;
  else if (unit == "GIB")
    scale = 1ll << 30;
  else if (unit == "MB" || unit == "M")
    scale = 1e6;
  else if (unit == "MIB")
    scale = 1ll << 20;
  else if (unit == "TB" || unit == "T")
    scale = 1e12;
  else if (unit == "TIB")
    scale = 1ll << 40;
  const std::string given = "--gpu-mem: '" + std::string(text) + "' ";
  if (ec != std::errc() || ptr == begin || scale == 0 || !std::isfinite(value))
    throw ConfigError(given + "is not a memory size (e.g. 80GB, 80GiB, 24576MiB)");
  if (value <= 0) throw ConfigError(given + "is not a positive memory size (e.g. 80GB, 80GiB, 24576MiB)");
  if (value > 1e6) throw ConfigError(given + "is too large (at most 1000000 of its unit, e.g. 1000000TB)");
  return static_cast<std::int64_t>(std::llround(value * scale));
}

}  // namespace shardscope
