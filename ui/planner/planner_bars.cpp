// SPDX-License-Identifier: GPL-3.0-or-later
#include "planner/planner_bars.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QToolTip>
#include <QPainter>

#include <algorithm>
#include <cmath>

#include "estimate/formula_text.h"
#include "views/memory_bars.h"

namespace shardscope::ui {

namespace {
constexpr int kLegendHeight = 22;
constexpr int kTotalHeight = 18;   // the total above a bar
constexpr int kAxisWidth = 66;     // tick labels: "2.50 TB"
constexpr int kCaptionHeight = 56;  // title and verdict under a bar
constexpr int kZoomWidth = 200;     // the zoom's panel, its gap to the bars included
constexpr int kZoomGap = 16;
constexpr double kZoomRatio = 8.0;  // zoom when the chosen bar and the capacity are under 1/8 of the axis

QString bytesText(double bytes) { return QString::fromStdString(decimal_bytes(bytes)); }

// 1, 2 or 5 times a power of ten, at least `raw`.
double niceStep(double raw) {
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw) return m * power;
  return 10.0 * power;
}
}  // namespace

PlannerBars::PlannerBars(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("plannerBars"));
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void PlannerBars::setBars(std::vector<PlannerBar> bars, std::int64_t capacity, const QString& capacity_label,
                          int selected) {
  bars_ = std::move(bars);
  capacity_ = capacity;
  capacity_label_ = capacity_label;
  selected_ = selected;
  update();
}

QRect PlannerBars::plotArea() const {
  const int zoom = zoomed() ? kZoomWidth : 0;
  return QRect(kAxisWidth, kLegendHeight + kTotalHeight, std::max(1, width() - kAxisWidth - 12 - zoom),
               std::max(1, height() - kLegendHeight - kTotalHeight - kCaptionHeight));
}

bool PlannerBars::zoomed() const {
  if (selected_ < 0 || selected_ >= static_cast<int>(bars_.size())) return false;
  const PlannerBar& bar = bars_[static_cast<std::size_t>(selected_)];
  if (!bar.valid || bar.bytes.total() <= 0) return false;
  const double shown = std::max(static_cast<double>(bar.bytes.total()), static_cast<double>(capacity_));
  return shown * kZoomRatio < scaleMax();
}

QRect PlannerBars::zoomArea() const {
  const QRect area = plotArea();
  return QRect(area.right() + kZoomGap, area.top(), kZoomWidth - kZoomGap, area.height());
}

// The zoom's axis: the chosen bar or the capacity line, whichever is higher, with room above.
double PlannerBars::zoomMax() const {
  const PlannerBar& bar = bars_[static_cast<std::size_t>(selected_)];
  return std::max(static_cast<double>(bar.bytes.total()), static_cast<double>(capacity_)) * 1.1;
}

// The part of the zoomed bar from `base` to `base + bytes`, right of the zoom's tick labels.
QRect PlannerBars::zoomRect(std::int64_t bytes, std::int64_t base) const {
  const QRect area = zoomArea();
  const int left = area.left() + kAxisWidth - 8, center = (left + area.right()) / 2;
  const int bar_width = std::min(60, area.right() - left - 16);
  const double scale = area.height() / zoomMax();
  const int y0 = area.bottom() - static_cast<int>(std::lround(static_cast<double>(base) * scale));
  const int y1 = area.bottom() - static_cast<int>(std::lround(static_cast<double>(base + bytes) * scale));
  return QRect(QPoint(center - bar_width / 2, y1), QPoint(center + bar_width / 2, y0));
}

QRect PlannerBars::zoomedBarRect() const {
  return zoomed() ? zoomRect(bars_[static_cast<std::size_t>(selected_)].bytes.total(), 0) : QRect();
}

double PlannerBars::scaleMax() const {
  double top = static_cast<double>(capacity_);
  for (const PlannerBar& b : bars_)
    if (b.valid) top = std::max(top, static_cast<double>(b.bytes.total()));
  return top > 0 ? top * 1.05 : 1.0;
}

// The part of bar `index` from `base` to `base + bytes`.
QRect PlannerBars::barRect(int index, std::int64_t bytes, std::int64_t base) const {
  const QRect area = plotArea();
  const double slot = static_cast<double>(area.width()) / static_cast<double>(std::max<std::size_t>(1, bars_.size()));
  const int bar_width = static_cast<int>(std::min(slot * 0.45, 120.0));
  const int center = area.left() + static_cast<int>(slot * (index + 0.5));
  const double scale = area.height() / scaleMax();
  const int y0 = area.bottom() - static_cast<int>(std::lround(static_cast<double>(base) * scale));
  const int y1 = area.bottom() - static_cast<int>(std::lround(static_cast<double>(base + bytes) * scale));
  return QRect(QPoint(center - bar_width / 2, y1), QPoint(center + bar_width / 2, y0));
}

void PlannerBars::paintAxis(QPainter& p) const {
  const QRect area = plotArea();
  const double top = scaleMax();
  const double step = niceStep(top / 5.0);
  p.setPen(QColor(120, 120, 120));
  for (double v = 0; v <= top; v += step) {
    const int y = area.bottom() - static_cast<int>(std::lround(v / top * area.height()));
    p.setPen(QColor(225, 225, 225));
    p.drawLine(area.left(), y, area.right(), y);
    p.setPen(QColor(90, 90, 90));
    p.drawText(QRect(0, y - 9, kAxisWidth - 6, 18), Qt::AlignRight | Qt::AlignVCenter, bytesText(v));
  }
  p.drawLine(area.bottomLeft(), area.bottomRight());
  if (capacity_ > 0) {
    const int y = area.bottom() - static_cast<int>(std::lround(static_cast<double>(capacity_) / top * area.height()));
    p.setPen(QPen(QColor(200, 30, 30), 2, Qt::DashLine));
    p.drawLine(area.left(), y, area.right(), y);
  }
}

void PlannerBars::paintLegend(QPainter& p) const {
  int x = kAxisWidth;
  const QFontMetrics fm(p.font());
  for (MemoryCategory c : kAllMemoryCategories) {
    const QString label = MemoryBars::categoryLabel(c);
    p.fillRect(QRect(x, 5, 12, 12), MemoryBars::categoryColor(c));
    p.setPen(palette().color(QPalette::WindowText));
    p.drawText(QRect(x + 16, 0, fm.horizontalAdvance(label) + 2, kLegendHeight), Qt::AlignVCenter, label);
    x += 16 + fm.horizontalAdvance(label) + 14;
  }
  if (capacity_ <= 0) return;
  // The capacity line's key: at the right of the legend, or on its own line under it when the row is full.
  const int label_width = fm.horizontalAdvance(capacity_label_) + 4;
  const int right = width() - 12;
  const int y = x + 28 + label_width <= right ? 0 : kLegendHeight - 4;
  const int left = right - label_width - 28;
  p.setPen(QPen(QColor(200, 30, 30), 2, Qt::DashLine));
  p.drawLine(left, y + kLegendHeight / 2, left + 22, y + kLegendHeight / 2);
  p.setPen(QColor(170, 20, 20));
  p.drawText(QRect(left + 28, y, label_width, kLegendHeight), Qt::AlignVCenter, capacity_label_);
}

QRect PlannerBars::columnRect(int index) const {
  const QRect area = plotArea();
  const int slot = area.width() / std::max(1, static_cast<int>(bars_.size()));
  return QRect(area.left() + slot * index + 4, area.top() - kTotalHeight, slot - 8,
               area.height() + kTotalHeight + kCaptionHeight);
}

void PlannerBars::paintBar(QPainter& p, int index) const {
  const PlannerBar& bar = bars_[static_cast<std::size_t>(index)];
  const QRect area = plotArea();
  const QRect column = columnRect(index);
  p.setPen(palette().color(QPalette::WindowText));
  QFont bold = p.font();
  bold.setBold(true);
  const QRect caption(column.left(), area.bottom() + 4, column.width(), kCaptionHeight - 4);
  p.save();
  p.setFont(bold);
  p.drawText(caption, Qt::AlignHCenter | Qt::AlignTop, bar.title);
  p.restore();
  if (!bar.valid) {  // the layout refuses this stage: say why where the bar would be
    p.setPen(QColor(110, 110, 110));
    p.drawText(column.adjusted(4, kTotalHeight, -4, -kCaptionHeight), Qt::AlignCenter | Qt::TextWordWrap, bar.caption);
    return;
  }
  p.setPen(bar.fits ? QColor(20, 120, 40) : QColor(180, 20, 20));
  p.drawText(caption.adjusted(0, 18, 0, 0), Qt::AlignHCenter | Qt::AlignTop | Qt::TextWordWrap, bar.caption);
  std::int64_t base = 0;
  QFont small = p.font();
  small.setPointSizeF(small.pointSizeF() * 0.85);
  for (MemoryCategory c : kAllMemoryCategories) {
    const std::int64_t bytes = bar.bytes[c];
    if (bytes <= 0) continue;
    const QRect r = barRect(index, bytes, base);
    p.fillRect(r, MemoryBars::categoryColor(c));
    if (r.height() >= 16) {
      p.save();
      p.setFont(small);
      p.setPen(Qt::white);
      p.drawText(r, Qt::AlignCenter, bytesText(static_cast<double>(bytes)));
      p.restore();
    }
    base += bytes;
  }
  const QRect whole = barRect(index, base, 0);
  p.save();
  p.setFont(bold);
  p.setPen(palette().color(QPalette::WindowText));
  p.drawText(QRect(column.left(), whole.top() - kTotalHeight, column.width(), kTotalHeight),
             Qt::AlignHCenter | Qt::AlignBottom, bytesText(static_cast<double>(base)));
  p.restore();
}

// The chosen bar again, on its own axis (ticks, the capacity line, every part labelled where tall
// enough), in a shaded panel whose caption says which stage it zooms on.
void PlannerBars::paintZoom(QPainter& p) const {
  const PlannerBar& bar = bars_[static_cast<std::size_t>(selected_)];
  const QRect area = zoomArea();
  const double top = zoomMax();
  p.fillRect(area.adjusted(0, -kTotalHeight, 0, kCaptionHeight), QColor(232, 240, 252));
  const double step = niceStep(top / 4.0);
  for (double v = 0; v <= top; v += step) {
    const int y = area.bottom() - static_cast<int>(std::lround(v / top * area.height()));
    p.setPen(QColor(215, 215, 215));
    p.drawLine(area.left() + kAxisWidth - 14, y, area.right(), y);
    p.setPen(QColor(90, 90, 90));
    p.drawText(QRect(area.left(), y - 9, kAxisWidth - 18, 18), Qt::AlignRight | Qt::AlignVCenter, bytesText(v));
  }
  std::int64_t base = 0;
  for (MemoryCategory c : kAllMemoryCategories) {
    const std::int64_t bytes = bar.bytes[c];
    if (bytes <= 0) continue;
    const QRect r = zoomRect(bytes, base);
    p.fillRect(r, MemoryBars::categoryColor(c));
    if (r.height() >= 16) {
      p.setPen(Qt::white);
      p.drawText(r.adjusted(-20, 0, 20, 0), Qt::AlignCenter, bytesText(static_cast<double>(bytes)));
    }
    base += bytes;
  }
  if (capacity_ > 0) {
    const int y = area.bottom() - static_cast<int>(std::lround(static_cast<double>(capacity_) / top * area.height()));
    p.setPen(QPen(QColor(200, 30, 30), 2, Qt::DashLine));
    p.drawLine(area.left() + kAxisWidth - 14, y, area.right(), y);
  }
  QFont bold = p.font();
  bold.setBold(true);
  p.save();
  p.setFont(bold);
  p.setPen(palette().color(QPalette::WindowText));
  const QRect whole = zoomRect(base, 0);
  p.drawText(QRect(area.left(), whole.top() - kTotalHeight, area.width(), kTotalHeight),
             Qt::AlignHCenter | Qt::AlignBottom, bytesText(static_cast<double>(base)));
  p.drawText(QRect(area.left(), area.bottom() + 4, area.width(), kCaptionHeight - 4),
             Qt::AlignHCenter | Qt::AlignTop | Qt::TextWordWrap, tr("%1, zoomed").arg(bar.title));
  p.restore();
  p.setPen(QColor(60, 60, 60));
  p.drawLine(area.left(), area.bottom(), area.right(), area.bottom());
}

void PlannerBars::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().color(QPalette::Base));
  if (selected_ >= 0 && selected_ < static_cast<int>(bars_.size()))
    p.fillRect(columnRect(selected_), QColor(232, 240, 252));  // the stage the verdict is about
  if (zoomed()) paintZoom(p);  // before the legend, whose capacity key may sit above the zoom
  paintLegend(p);
  paintAxis(p);
  for (int i = 0; i < static_cast<int>(bars_.size()); ++i) paintBar(p, i);
}

QString PlannerBars::toolTipAt(const QPoint& pos) const {
  const bool in_zoom = zoomed() && zoomArea().contains(pos);
  for (int i = 0; i < static_cast<int>(bars_.size()); ++i) {
    const PlannerBar& bar = bars_[static_cast<std::size_t>(i)];
    if (!bar.valid || (in_zoom && i != selected_)) continue;
    std::int64_t base = 0;
    for (MemoryCategory c : kAllMemoryCategories) {
      const std::int64_t bytes = bar.bytes[c];
      const QRect r = in_zoom ? zoomRect(bytes, base) : barRect(i, bytes, base);
      if (bytes > 0 && r.adjusted(0, -1, 0, 1).contains(pos))
        return QStringLiteral("%1 · %2: %3 = %4")
            .arg(bar.title, MemoryBars::categoryLabel(c), bytesText(static_cast<double>(bytes)),
                 bar.formulas[static_cast<std::size_t>(c)]);
      base += bytes;
    }
  }
  return QString();
}

bool PlannerBars::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const QString text = toolTipAt(help->pos());
    if (text.isEmpty()) QToolTip::hideText();
    else QToolTip::showText(help->globalPos(), text, this);
    return true;
  }
  return QWidget::event(event);
}

void PlannerBars::mousePressEvent(QMouseEvent* event) {
  const QRect area = plotArea();
  if (bars_.empty() || event->position().x() < area.left()) return;
  const int slot = area.width() / static_cast<int>(bars_.size());
  const int index = (static_cast<int>(event->position().x()) - area.left()) / std::max(1, slot);
  if (index >= 0 && index < static_cast<int>(bars_.size())) Q_EMIT stageClicked(index);
}

}  // namespace shardscope::ui
