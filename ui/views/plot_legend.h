// SPDX-License-Identifier: GPL-3.0-or-later
// What the plots share: a QCustomPlot filling its widget under a bold
// title; for the live plots also a legend in a row of its own under the axes (entries side by side, so
// it never hides a line; the live plots have one entry per rank), and a colour
// per rank.
#pragma once

#include <QColor>
#include <QVBoxLayout>
#include <QWidget>

#include "views/qcustomplot_include.h"

namespace shardscope::ui {

// Lays `plot` out to fill `owner` (in a QVBoxLayout, owner->layout(), that
// more widgets may join below) and adds an (empty) bold title row on top;
// returns the title.
inline QCPTextElement* installTitledPlot(QWidget* owner, QCustomPlot* plot, int minimum_height = 180) {
  auto* layout = new QVBoxLayout(owner);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(plot);
  owner->setMinimumHeight(minimum_height);
  plot->plotLayout()->insertRow(0);
  auto* title = new QCPTextElement(plot, QString(), QFont(owner->font().family(), -1, QFont::Bold));
  plot->plotLayout()->addElement(0, 0, title);
  return title;
}

// Matplotlib's tab10 order, so rank r has the same colour in every live plot.
inline QColor rankColor(int rank) {
  static const QColor colors[] = {QColor(31, 119, 180),  QColor(255, 127, 14),  QColor(44, 160, 44),
                                  QColor(214, 39, 40),   QColor(148, 103, 189), QColor(140, 86, 75),
                                  QColor(227, 119, 194), QColor(127, 127, 127)};
  return colors[rank % 8];
}

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
  QFont small = plot->font();  // as the memory bars' legend: more room for the axes on a small screen
  small.setPointSizeF(small.pointSizeF() * 0.85);
  plot->legend->setFont(small);
}

}  // namespace shardscope::ui
