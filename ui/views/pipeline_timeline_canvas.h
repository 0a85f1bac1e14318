// SPDX-License-Identifier: GPL-3.0-or-later
// The painted part of the pipeline timeline (pipeline_timeline_paint.cpp): the
// stage rows with their boxes and communication lanes, the send → receive
// arrows, the time axis and the legend. Keeps the visible time window.
#pragma once

#include <QWidget>
#include <cstdint>

#include "views/pipeline_timeline.h"

namespace shardscope::ui {

class TimelineCanvas : public QWidget {
 public:
  explicit TimelineCanvas(PipelineTimelineView* owner);
  void fit();
  // The shown step's drawn extent (PipelineTimelineView::stepRect), at the current window.
  QRectF stepRect();

 protected:
  void paintEvent(QPaintEvent*) override;
  void wheelEvent(QWheelEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseReleaseEvent(QMouseEvent*) override { dragging_ = false; }
  void mouseDoubleClickEvent(QMouseEvent*) override { fit(); }
  void mouseMoveEvent(QMouseEvent* e) override;
  bool event(QEvent* e) override;

 private:
  static constexpr int kLeft = 92, kTop = 8, kBottom = 44, kRight = 12;
  // Below the rows: the time axis, then the legend in legend_rows_ rows (more than one where the canvas is narrow).
  QRectF plotRect() const;
  QFont smallFont() const;
  // Lays the legend out from (kLeft, top), wrapping at the right margin; paints it when p is given. Returns its rows.
  int paintLegend(QPainter* p, double top) const;
  double xOf(double t) const { return plotRect().left() + (t - t0_) / (t1_ - t0_) * plotRect().width(); }
  double tOf(double x) const { return t0_ + (x - plotRect().left()) / plotRect().width() * (t1_ - t0_); }
  // A stage's row: its compute band (the boxes) and, under DDP, its communication lane below.
  double rowHeight() const;
  QRectF computeBand(int stage) const;
  QRectF laneBand(int stage) const;
  QRectF boxRect(const TimelineBox& b) const;
  QRectF bucketRect(const TimelineBucketSpan& s) const;
  QLineF arrowLine(const TimelineTransfer& t) const;
  // The shown step's first start (time 0 of the axis) and its last end.
  void measureStep();
  void updateWindow();
  void paintRows(QPainter& p) const;
  void paintBoxes(QPainter& p) const;
  void paintBuckets(QPainter& p) const;
  void paintArrows(QPainter& p) const;
  void paintAxis(QPainter& p) const;
  QString toolTipAt(QPointF pos) const;
  QString boxToolTip(const TimelineBox& b) const;
  QString transferToolTip(const TimelineTransfer& t) const;
  QString bucketToolTip(const TimelineBucketSpan& s) const;
  double ms(std::int64_t ns) const { return static_cast<double>(ns - origin_) / 1e6; }
  // "One step, slowly": what the cursor has reached (ns since the run started); past the step's end otherwise.
  std::int64_t cursor() const;
  // A box as far as the cursor has drawn it (empty: not reached yet).
  QRectF shownRect(QRectF rect, std::int64_t start_ns, std::int64_t end_ns) const;

  PipelineTimelineView* owner_;
  double t0_ = 0, t1_ = 1;  // visible window, ns since the step's first span
  bool zoomed_ = false, dragging_ = false;
  double drag_x_ = 0;
  std::int64_t origin_ = 0, end_ = 0;       // the shown step's first start and last end (ns since the run started)
  int legend_rows_ = 1, legend_row_h_ = 0;  // measured at each paint
};

}  // namespace shardscope::ui
