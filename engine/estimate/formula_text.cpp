// SPDX-License-Identifier: GPL-3.0-or-later
#include "estimate/formula_text.h"

#include <cmath>
#include <cstdio>

namespace shardscope {

std::string grouped(std::int64_t value) {
  const bool negative = value < 0;
  std::string digits = std::to_string(negative ? -value : value), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return negative ? "-" + out : out;
}

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

std::string short_number(double value, int digits) {
  char text[48];
  std::snprintf(text, sizeof text, "%.*g", digits, value);
  std::string out = text;
  // "2.8e+12" -> "2.8e12", "1e-05" -> "1e-5"
  if (const auto e = out.find('e'); e != std::string::npos) {
    std::string mantissa = out.substr(0, e), exponent = out.substr(e + 1);
    const bool negative = !exponent.empty() && exponent[0] == '-';
    if (!exponent.empty() && (exponent[0] == '+' || exponent[0] == '-')) exponent.erase(0, 1);
    while (exponent.size() > 1 && exponent[0] == '0') exponent.erase(0, 1);
    out = mantissa + "e" + (negative ? "-" : "") + exponent;
  }
  return out;
}

}  // namespace shardscope
