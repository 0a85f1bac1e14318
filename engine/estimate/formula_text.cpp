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
