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
  // Memory: the total nvidia-smi reports (MiB). FLOP/s: dense, without 2:4 sparsity; bf16 equals fp16 on
  // every part here. Links: NVLink's and Infinity Fabric's totals count both directions; a ring uses one,
  // so half. Between nodes: one 400 (or 200) Gb/s InfiniBand NIC per GPU, as in DGX/HGX systems (assumed).
  // Sources, one per part (docs/ESTIMATE.md repeats them):
  //   A100: NVIDIA A100 Tensor Core GPU datasheet (SXM4 column).
  //   H100, H100-PCIe: NVIDIA H100 Tensor Core GPU datasheet (SXM and PCIe columns).
  //   H200: NVIDIA H200 Tensor Core GPU datasheet (SXM column).
  //   B200: NVIDIA HGX B200 / DGX B200 datasheets (1000 W part; per-GPU = system / 8).
  //   RTX 4090: NVIDIA Ada Lovelace architecture whitepaper, appendix (fp16 with fp32 accumulate).
  //   MI300X: AMD Instinct MI300X accelerator datasheet (its "192 GB" are 8 stacks of 24 GiB).
  // FP8 (the last column, dense, fp32 accumulate): the same datasheets' FP8 rows halved where they
  // state sparsity (H100 SXM 3,958 and PCIe 3,026; H200 3,958; HGX B200 72 PFLOPS over 8 GPUs), the Ada
  // whitepaper's "FP8 Tensor TFLOPS with FP32 Accumulate" (330.3 since its v2.02), MI300X's 2,614.9; the
  // A100 has no FP8 tensor cores (0).
  static const std::vector<GpuProfile> profiles = {
      {"A100-40GB", "NVIDIA A100 SXM4 40GB", 40960 * kMiB, 19.5, 156, 312, 1555, 300, "NVLink 3 (600 GB/s total)", 25,
       "HDR InfiniBand 200 Gb/s per GPU", 0},
      {"A100-80GB", "NVIDIA A100 SXM4 80GB", 81920 * kMiB, 19.5, 156, 312, 2039, 300, "NVLink 3 (600 GB/s total)", 25,
       "HDR InfiniBand 200 Gb/s per GPU", 0},
      {"H100", "NVIDIA H100 SXM5 80GB", 81559 * kMiB, 67, 494.7, 989.4, 3350, 450, "NVLink 4 (900 GB/s total)", 50,
       "NDR InfiniBand 400 Gb/s per GPU", 1978.9},
      // Eight PCIe cards talk over PCIe 5.0 x16 (NVLink bridges join pairs only).
      {"H100-PCIe", "NVIDIA H100 PCIe 80GB", 81559 * kMiB, 51, 378, 756, 2000, 64,
       "PCIe 5.0 x16 (128 GB/s total; NVLink bridge pairs only)", 50, "NDR InfiniBand 400 Gb/s per GPU", 1513},
      {"H200", "NVIDIA H200 SXM 141GB", 143771 * kMiB, 67, 494.7, 989.4, 4800, 450, "NVLink 4 (900 GB/s total)", 50,
       "NDR InfiniBand 400 Gb/s per GPU", 1978.9},
      {"B200", "NVIDIA B200 SXM 180GB", 183359 * kMiB, 80, 1100, 2250, 8000, 900, "NVLink 5 (1.8 TB/s total)", 50,
       "NDR InfiniBand 400 Gb/s per GPU", 4500},
      {"RTX4090", "NVIDIA GeForce RTX 4090 24GB", 24564 * kMiB, 82.6, 82.6, 165.2, 1008, 32,
       "PCIe 4.0 x16 (no NVLink; 64 GB/s total)", 12.5, "100 Gb Ethernet", 330.3},
      // fp32: the matrix cores' 163.4 (rocBLAS SGEMM runs on them; the vector units give 81.7).
      {"MI300X", "AMD Instinct MI300X 192GB", 196608 * kMiB, 163.4, 653.7, 1307.4, 5300, 448,
       "Infinity Fabric (7 links, 896 GB/s total)", 50, "NDR InfiniBand 400 Gb/s per GPU", 2614.9},
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
