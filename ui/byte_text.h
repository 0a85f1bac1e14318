// SPDX-License-Identifier: GPL-3.0-or-later
// A memory size for the panel and the views: GiB with one decimal from 1 GiB
// up, MiB below, so a small model on a large GPU does not read 0.0 GiB.
#pragma once

#include <QString>
#include <cstdint>

namespace shardscope::ui {

inline QString byteText(std::int64_t bytes) {
  constexpr double kMiB = 1024.0 * 1024.0, kGiB = 1024.0 * kMiB;
  const auto b = static_cast<double>(bytes);
  return b >= kGiB ? QStringLiteral("%1 GiB").arg(b / kGiB, 0, 'f', 1)
                   : QStringLiteral("%1 MiB").arg(b / kMiB, 0, 'f', 1);
}

}  // namespace shardscope::ui
