// SPDX-License-Identifier: GPL-3.0-or-later
// Puts a QCustomPlot's legend in a row of its own under the axes, entries side
// by side, so it never hides a line (the live plots have one entry per rank).
#pragma once

#include "views/qcustomplot_include.h"

namespace shardscope::ui {

inline void placeLegendBelow(QCustomPlot* plot, int columns) {
  plot->legend->setVisible(true);
  plot->axisRect()->insetLayout()->take(plot->legend);
  const int row = plot->plotLayout()->rowCount();
  plot->plotLayout()->addElement(row, 0, plot->legend);
  plot->plotLayout()->setRowStretchFactor(row, 0.001);  // as tall as its entries
  plot->legend->setFillOrder(QCPLegend::foColumnsFirst);
  plot->legend->setWrap(columns);
  plot->legend->setBorderPen(Qt::NoPen);
  plot->legend->setMargins(QMargins(4, 0, 4, 2));
}

}  // namespace shardscope::ui
