// SPDX-License-Identifier: GPL-3.0-or-later
// The planner's chart: one stacked bar per ZeRO stage, side by side, each the
// fullest GPU's bytes by ledger category (parameters, gradients, optimizer
// states, activations, communication, workspace), its total on top, the GPU's
// capacity as a dashed line, and under each bar whether it fits (or why the
// layout refuses that stage). Painted; a click on a bar chooses its stage.
// When the axis spans terabytes and the chosen stage's bar (with the capacity
// line) would be a sliver of it, a zoom beside the bars draws that bar again on
// an axis of its own, so its parts and the capacity stay readable.
#pragma once

#include <QString>
#include <QWidget>

#include <array>
#include <cstdint>
#include <vector>

#include "core/memory_ledger.h"

namespace shardscope::ui {

struct PlannerBar {
  QString title;        // "ZeRO-2"
  bool valid = false;   // false: `caption` says why this stage is refused
  MemoryBytes bytes;    // the fullest rank's, by category
  std::array<QString, kMemoryCategoryCount> formulas;  // the estimator's, shown on hover
  QString caption;      // "fits, 12.3 GB free" / "over by 2.7 TB" / the refusal
  bool fits = false;
};

class PlannerBars : public QWidget {
  Q_OBJECT

 public:
  explicit PlannerBars(QWidget* parent = nullptr);

  // `capacity_label`: "A100-80GB 85.9 GB"; capacity 0: no line.
  void setBars(std::vector<PlannerBar> bars, std::int64_t capacity, const QString& capacity_label, int selected);
  const std::vector<PlannerBar>& bars() const { return bars_; }
  int selected() const { return selected_; }
  QSize minimumSizeHint() const override { return {420, 260}; }
  QSize sizeHint() const override { return {760, 360}; }

 Q_SIGNALS:
  void stageClicked(int stage);

 public:
  // "ZeRO-2 · optimizer states: 10.1 GB = 12Ψ/Nd = ..." for the segment under `pos`; empty elsewhere.
  QString toolTipAt(const QPoint& pos) const;
  // Whether the zoom on the chosen stage's bar is drawn, and where that bar is in it (empty if not).
  bool zoomed() const;
  QRect zoomedBarRect() const;

 protected:
  bool event(QEvent* event) override;  // tool tips: the formula of the segment under the mouse
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;

 private:
  QRect plotArea() const;
  QRect barRect(int index, std::int64_t bytes, std::int64_t base) const;
  QRect columnRect(int index) const;  // a bar's slot, its total above and its caption below
  QRect zoomArea() const;             // right of the bars, when zoomed(): the chosen bar on its own axis
  double zoomMax() const;
  QRect zoomRect(std::int64_t bytes, std::int64_t base) const;
  void paintZoom(class QPainter& p) const;
  double scaleMax() const;
  void paintAxis(class QPainter& p) const;
  void paintLegend(class QPainter& p) const;
  void paintBar(class QPainter& p, int index) const;

  std::vector<PlannerBar> bars_;
  std::int64_t capacity_ = 0;
  QString capacity_label_;
  int selected_ = -1;
};

}  // namespace shardscope::ui
