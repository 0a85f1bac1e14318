// SPDX-License-Identifier: GPL-3.0-or-later
// A memory size for the panel and the views, written as the engine writes it
// (core/byte_text.h's binary_bytes: three significant digits in powers
// of 1024), so the fit check, the GPU line and an out-of-memory error agree,
// and a small model on a large GPU reads MiB, not 0.00 GiB.
#pragma once

#include <QString>
#include <cstdint>

#include "core/byte_text.h"

namespace shardscope::ui {

inline QString byteText(std::int64_t bytes) {
  return QString::fromStdString(binary_bytes(bytes));
}

}  // namespace shardscope::ui
