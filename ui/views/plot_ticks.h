// SPDX-License-Identifier: GPL-3.0-or-later
// Tick labels a learner reads at a glance: 16.8M tokens/s rather than
// 1.67772·10⁷, a loss scale of 16Mi (2^24) rather than 1.67772·10⁷.
#pragma once

#include <QLocale>
#include <QString>
#include <algorithm>
#include <cmath>

#include "views/qcustomplot_include.h"

namespace shardscope::ui {

// `value` with an SI prefix (k, M, G, T) and at most three significant digits.
inline QString siText(double value) {
  static const char* const prefixes[] = {"", "k", "M", "G", "T"};
  int power = 0;
  double scaled = value;
  while (std::abs(scaled) >= 1000.0 && power < 4) {
    scaled /= 1000.0;
    ++power;
  }
  return QString::number(scaled, 'g', 3) + QLatin1String(prefixes[power]);
}

// `value` with a binary prefix (Ki = 2^10, Mi = 2^20, Gi = 2^30): a power of two reads 1Ki, 16Mi.
inline QString binaryText(double value) {
  static const char* const prefixes[] = {"", "Ki", "Mi", "Gi", "Ti"};
  int power = 0;
  double scaled = value;
  while (std::abs(scaled) >= 1024.0 && power < 4) {
    scaled /= 1024.0;
    ++power;
  }
  return QString::number(scaled, 'g', 4) + QLatin1String(prefixes[power]);
}

// A linear axis labelled with SI prefixes.
class SiAxisTicker : public QCPAxisTicker {
 protected:
  QString getTickLabel(double tick, const QLocale&, QChar, int) override { return siText(tick); }
};

// A log-2 axis (a loss scale) labelled with binary prefixes.
class BinaryLogAxisTicker : public QCPAxisTickerLog {
 public:
  BinaryLogAxisTicker() { setLogBase(2); }

 protected:
  QString getTickLabel(double tick, const QLocale&, QChar, int) override { return binaryText(tick); }
};

// Value ticks a label apart on a short axis: one per ~32 px of the axis rect's
// height (2 to 6), so a plot squeezed under the views never stacks "12.5 10
// 7.5 5" into one another. The height is the last layout's (a replot lays out
// after this check), so a changed count asks for one more replot.
inline void spaceValueTicks(QCustomPlot* plot) {
  QObject::connect(plot, &QCustomPlot::afterLayout, plot, [plot] {
    const int count = std::clamp(plot->axisRect()->height() / 32, 2, 6);
    if (plot->yAxis->ticker()->tickCount() == count) return;
    plot->yAxis->ticker()->setTickCount(count);
    plot->yAxis2->ticker()->setTickCount(count);
    plot->replot(QCustomPlot::rpQueuedReplot);
  });
}

}  // namespace shardscope::ui
