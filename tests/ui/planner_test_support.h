// SPDX-License-Identifier: GPL-3.0-or-later
// What the planner's tests share: the engine's own estimate of the planner's
// request, the bytes its bars draw, and where a test's screenshot goes.
#pragma once

#include <QCoreApplication>
#include <QDir>
#include <QString>
#include <array>
#include <cstdint>
#include <vector>

#include "planner/planner_bars.h"
#include "planner/planner_dialog.h"

namespace shardscope::planner_test {

// The engine's own estimate of the planner's request at `stage`.
inline Estimate engineEstimate(const ui::PlannerDialog& planner, int stage) {
  EstimateRequest r = planner.request();
  r.settings.zero_stage = stage;
  return compute_estimate(r);
}

using BarBytes = std::vector<std::array<std::int64_t, kMemoryCategoryCount>>;
inline BarBytes barBytes(const ui::PlannerDialog& planner) {
  BarBytes out;
  for (const auto& bar : planner.bars()->bars()) out.push_back(bar.bytes.bytes);
  return out;
}
inline constexpr std::size_t kActivations = static_cast<std::size_t>(MemoryCategory::activations);
inline constexpr std::size_t kParameters = static_cast<std::size_t>(MemoryCategory::parameters);

inline QString shotPath(const QString& name) {
  return QDir(QCoreApplication::applicationDirPath()).filePath(name);
}

}  // namespace shardscope::planner_test
