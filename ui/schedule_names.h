// SPDX-License-Identifier: GPL-3.0-or-later
// A pipeline schedule's name as the papers write it, from its --schedule key
// (the panel's list, the timeline's header, the schedule comparison). A key the
// engine adds later shows in capitals ("zb-v" → "ZB-V") with no change here.
#pragma once

#include <QString>

namespace shardscope::ui {

inline QString scheduleDisplayName(const QString& key) {
  if (key == QLatin1String("gpipe")) return QStringLiteral("GPipe");
  if (key.startsWith(QLatin1String("interleaved-"))) return QStringLiteral("Interleaved ") + key.mid(12).toUpper();
  return key.toUpper();
}

}  // namespace shardscope::ui
