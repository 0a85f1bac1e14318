// SPDX-License-Identifier: GPL-3.0-or-later
// Byte counts as text, written in one place for the engine, the CLI and the
// views, so that a memory line, a fit check and an out-of-memory error agree.
#pragma once

#include <cstdint>
#include <string>

namespace shardscope {

// 31406250000 -> "31.4 GB"; 1234 -> "1.23 kB"; 0 -> "0 B" (three significant
// digits, powers of 1000: how the ZeRO paper and GPU data sheets count).
std::string decimal_bytes(double bytes);
// 3328599654 -> "3.10 GiB"; 1536 -> "1.50 KiB"; 512 -> "512 B" (three significant
// digits, powers of 1024: how GPU tools and out-of-memory errors count).
std::string binary_bytes(std::int64_t bytes);

}  // namespace shardscope
