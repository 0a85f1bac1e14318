// SPDX-License-Identifier: GPL-3.0-or-later
// How the estimator writes numbers into its formulas and tables. Sizes are in
// decimal units (1 GB = 10^9 bytes), as the ZeRO paper and GPU data sheets use
// (core/byte_text.h writes them).
#pragma once

#include <cstdint>
#include <string>

#include "core/byte_text.h"  // decimal_bytes, binary_bytes: the formulas' sizes

namespace shardscope {

// 124439808 -> "124,439,808"
std::string grouped(std::int64_t value);
// A double in plain or exponent form with `digits` significant digits: 2.8e+12 -> "2.8e12".
std::string short_number(double value, int digits = 3);

}  // namespace shardscope
