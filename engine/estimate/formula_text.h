// SPDX-License-Identifier: GPL-3.0-or-later
// How the estimator writes numbers into its formulas and tables. Sizes are in
// decimal units (1 GB = 10^9 bytes), as the ZeRO paper and GPU data sheets use.
#pragma once

#include <cstdint>
#include <string>

namespace shardscope {

// 124439808 -> "124,439,808"
std::string grouped(std::int64_t value);
// 31406250000 -> "31.4 GB"; 1234 -> "1.23 kB"; 0 -> "0 B" (three significant digits).
std::string decimal_bytes(double bytes);
// 3328599654 -> "3.10 GiB"; 1536 -> "1.50 KiB"; 512 -> "512 B" (three significant
// digits, powers of 1024: how GPU tools and out-of-memory errors count).
std::string binary_bytes(std::int64_t bytes);
// A double in plain or exponent form with `digits` significant digits: 2.8e+12 -> "2.8e12".
std::string short_number(double value, int digits = 3);

}  // namespace shardscope
