// SPDX-License-Identifier: GPL-3.0-or-later
// Includes QCustomPlot under QT_NO_KEYWORDS: its header uses `signals`,
// `slots`, `emit` and `foreach`, which that define removes (we need it because
// the engine's EventSink has a method named emit). The keywords are mapped to
// their Q_ forms for this header only.
#pragma once

#define signals Q_SIGNALS
#define slots Q_SLOTS
#define emit Q_EMIT
#define foreach Q_FOREACH
#include <qcustomplot.h>
#undef foreach
#undef emit
#undef slots
#undef signals
