// SPDX-License-Identifier: GPL-3.0-or-later
// The Experts view's painting: a header, the bars of tokens per expert
// against the capacity line, the load-balancing loss over the steps, the
// all-to-all matrix of bytes between ranks, and the footer.
#include <QLocale>
#include <QPainter>
#include <QPolygonF>
#include <QSpinBox>
#include <algorithm>
#include <cmath>

#include "views/experts_view.h"
#include "views/plot_legend.h"

namespace shardscope::ui {

namespace {

const QColor kCapacity(214, 39, 40);
const QColor kAux(44, 160, 44);

// Bytes in a cell: "252,936" or "1.2 MB"-like short forms when the cell is narrow.
QString shortBytes(std::int64_t bytes) {
  if (bytes >= 10'000'000) return QStringLiteral("%1M").arg(static_cast<double>(bytes) / 1e6, 0, 'f', 1);
  if (bytes >= 10'000) return QStringLiteral("%1k").arg(static_cast<double>(bytes) / 1e3, 0, 'f', 0);
  return QString::number(bytes);
}

}  // namespace

// One bar per expert: the choices it kept this step, the capacity as a dashed
// line across all bars (a bar that reaches it turned some choices away).
void ExpertsView::paintBars(QPainter& p, const QRectF& area) const {
  const QFontMetrics fm = p.fontMetrics();
  const ExpertLayerLoad* load = model_.load(model_.latestLoadStep(), layer());
  p.setPen(palette().text().color());
  p.drawText(QRectF(area.left(), area.top(), area.width(), fm.height()), Qt::AlignLeft,
             fm.elidedText(tr("Choices per expert this step (bars) against capacity (dashed)"), Qt::ElideRight,
                           static_cast<int>(area.width())));
  const QRectF plot(area.left() + 6, area.top() + fm.height() + 4, area.width() - 12,
                    area.height() - 2 * fm.height() - 10);
  if (load == nullptr || plot.height() < 10) return;
  const std::int64_t top = std::max<std::int64_t>(
      {load->capacity, *std::max_element(load->tokens.begin(), load->tokens.end()), std::int64_t{1}});
  const double scale = plot.height() / (static_cast<double>(top) * 1.12);
  const int n = static_cast<int>(load->tokens.size());
  const double slot = plot.width() / std::max(1, n), bar = slot * 0.6;
  for (int e = 0; e < n; ++e) {
    const std::int64_t tokens = load->tokens[static_cast<std::size_t>(e)];
    const double h = static_cast<double>(tokens) * scale;
    const QRectF r(plot.left() + e * slot + (slot - bar) / 2, plot.bottom() - h, bar, h);
    QColor fill = rankColor(e / std::max(1, n / model_.expertRanks()));  // the colour of the ep rank holding it
    fill.setAlpha(tokens >= load->capacity ? 255 : 190);
    p.fillRect(r, fill);
    p.setPen(palette().text().color());
    p.drawText(QRectF(r.left() - 10, r.top() - fm.height(), r.width() + 20, fm.height()), Qt::AlignCenter,
               QLocale().toString(tokens));
    p.drawText(QRectF(plot.left() + e * slot, plot.bottom() + 2, slot, fm.height()), Qt::AlignCenter,
               tr("expert %1").arg(e));
  }
  const double y = plot.bottom() - static_cast<double>(load->capacity) * scale;
  p.setPen(QPen(kCapacity, 2, Qt::DashLine));
  p.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y));
  p.setPen(kCapacity);
  const QString label = tr("capacity %1").arg(QLocale().toString(load->capacity));
  p.drawText(QRectF(plot.right() - fm.horizontalAdvance(label) - 4, y - fm.height() - 1,
                    fm.horizontalAdvance(label) + 4, fm.height()),
             Qt::AlignRight, label);
  p.setPen(palette().text().color());
  p.drawLine(plot.bottomLeft(), plot.bottomRight());
}

// The load-balancing loss by step, a line from its first step to its latest.
void ExpertsView::paintAuxLoss(QPainter& p, const QRectF& area) const {
  const QFontMetrics fm = p.fontMetrics();
  const auto& aux = model_.auxLoss();
  p.setPen(palette().text().color());
  const QString title = aux.empty() ? tr("Load-balancing loss E\u00b7\u03a3 f\u00b7P: no step yet")
                                    : tr("Load-balancing loss E\u00b7\u03a3 f\u00b7P: %1 at step %2")
                                          .arg(static_cast<double>(aux.rbegin()->second), 0, 'f', 4)
                                          .arg(aux.rbegin()->first);
  p.drawText(QRectF(area.left(), area.top(), area.width(), fm.height()), Qt::AlignLeft,
             fm.elidedText(title, Qt::ElideRight, static_cast<int>(area.width())));
  const QRectF plot(area.left() + 6, area.top() + fm.height() + 4, area.width() - 12, area.height() - fm.height() - 6);
  p.setPen(palette().mid().color());
  p.drawRect(plot);
  if (aux.size() < 2 || plot.height() < 8) return;
  float low = aux.begin()->second, high = low;
  for (const auto& [step, loss] : aux) low = std::min(low, loss), high = std::max(high, loss);
  const double span = std::max(1e-6, static_cast<double>(high - low));
  const double first = static_cast<double>(aux.begin()->first), last = static_cast<double>(aux.rbegin()->first);
  QPolygonF line;
  for (const auto& [step, loss] : aux)
    line << QPointF(plot.left() + (static_cast<double>(step) - first) / std::max(1.0, last - first) * plot.width(),
                    plot.bottom() - (static_cast<double>(loss) - low) / span * (plot.height() - 4) - 2);
  p.setPen(QPen(kAux, 2));
  p.drawPolyline(line);
  p.setPen(palette().text().color());
  p.drawText(plot.adjusted(4, 2, -4, -2), Qt::AlignRight | Qt::AlignTop, QString::number(high, 'f', 4));
  p.drawText(plot.adjusted(4, 2, -4, -2), Qt::AlignRight | Qt::AlignBottom, QString::number(low, 'f', 4));
}

// world × world cells, rows the sending rank, columns the receiving rank,
// shaded by bytes; a rank's own tokens stay on it (no transfer, "local").
void ExpertsView::paintMatrix(QPainter& p, const QRectF& area) const {
  const QFontMetrics fm = p.fontMetrics();
  const int n = model_.world();
  const std::int64_t step = model_.shownMatrixStep(layer());
  const std::vector<std::int64_t> m = model_.matrix(step, layer());
  p.setPen(palette().text().color());
  p.drawText(
      QRectF(area.left(), area.top(), area.width(), fm.height()), Qt::AlignLeft,
      fm.elidedText(tr("All-to-all bytes: row sends to column"), Qt::ElideRight, static_cast<int>(area.width())));
  const double label = fm.horizontalAdvance(QStringLiteral("r00")) + 8;
  const double side = std::max(20.0, std::min(area.width() - label, area.height() - 2 * fm.height() - 6));
  const double cell = side / std::max(1, n);
  const QRectF grid(area.left() + label, area.top() + 2 * fm.height() + 4, side, side);
  const std::int64_t most = std::max<std::int64_t>(1, *std::max_element(m.begin(), m.end()));
  for (int r = 0; r < n; ++r) {
    p.setPen(palette().text().color());
    p.drawText(QRectF(area.left(), grid.top() + r * cell, label - 4, cell), Qt::AlignRight | Qt::AlignVCenter,
               tr("r%1").arg(r));
    p.drawText(QRectF(grid.left() + r * cell, grid.top() - fm.height() - 2, cell, fm.height()), Qt::AlignCenter,
               tr("r%1").arg(r));
    for (int c = 0; c < n; ++c) {
      const QRectF box(grid.left() + c * cell, grid.top() + r * cell, cell, cell);
      const std::int64_t bytes = m[static_cast<std::size_t>(r) * n + c];
      QColor fill = rankColor(r);
      fill.setAlpha(bytes > 0 ? 60 + static_cast<int>(180.0 * static_cast<double>(bytes) / static_cast<double>(most))
                              : 0);
      p.fillRect(box, r == c ? QBrush(palette().mid().color(), Qt::Dense6Pattern) : QBrush(fill));
      p.setPen(QPen(palette().mid().color(), 1));
      p.drawRect(box);
      p.setPen(palette().text().color());
      const QString text = r == c ? tr("local") : bytes > 0 ? QLocale().toString(bytes) : QStringLiteral("0");
      p.drawText(box, Qt::AlignCenter, fm.horizontalAdvance(text) + 4 < cell || r == c ? text : shortBytes(bytes));
    }
  }
}

int ExpertsView::paintFooter(QPainter& p, const QRectF& area) const {
  return paintFooterLines(p, area, routingText() + QLatin1Char('\n') + allToAllText());
}

void ExpertsView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  const QRectF all = drawingArea();
  if (paintPlaceholder(p, all, placeholderText())) return;
  const QString header = tr("%1 experts, top-%2 routing, over %3 rank(s) with the experts split over ep = %4.")
                             .arg(model_.experts())
                             .arg(model_.topK())
                             .arg(model_.world())
                             .arg(model_.expertRanks());
  const int head = paintHeader(p, all, header);
  const int footer = paintFooter(p, all);
  const double top = all.top() + head + 8, bottom = all.bottom() - footer - 8;
  const bool matrix = model_.expertRanks() > 1;
  const double left_w = matrix ? all.width() * 0.58 : all.width();
  const double bars_h = (bottom - top) * 0.62;
  paintBars(p, QRectF(all.left(), top, left_w, bars_h));
  paintAuxLoss(p, QRectF(all.left(), top + bars_h + 6, left_w, bottom - top - bars_h - 6));
  if (matrix) paintMatrix(p, QRectF(all.left() + left_w + 14, top, all.width() - left_w - 14, bottom - top));
}

}  // namespace shardscope::ui
