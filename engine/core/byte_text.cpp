// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/byte_text.h"

#include <cmath>
#include <cstdio>

namespace shardscope {

namespace {

// `bytes` in the largest of `units` (each `base` times the last) that keeps it
// at or above 1, with three significant digits: "3.10", "31.4", "314".
std::string scaled_bytes(double bytes, double base, const char* const (&units)[6]) {
  int unit = 0;
  double scaled = bytes;
  while (std::fabs(scaled) >= base && unit < 5) {
    scaled /= base;
    ++unit;
  }
  char text[32];
  const double a = std::fabs(scaled);
  std::snprintf(text, sizeof text, a >= 100.0 ? "%.0f %s" : a >= 10.0 ? "%.1f %s" : "%.2f %s", scaled, units[unit]);
  return text;
}

}  // namespace

std::string binary_bytes(std::int64_t bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes > -1024 && bytes < 1024) return std::to_string(bytes) + " B";
  return scaled_bytes(static_cast<double>(bytes), 1024.0, units);
}

std::string decimal_bytes(double bytes) {
  static const char* const units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  if (std::fabs(bytes) < 1000.0) return std::to_string(static_cast<long long>(std::llround(bytes))) + " B";
  return scaled_bytes(bytes, 1000.0, units);
}

}  // namespace shardscope
