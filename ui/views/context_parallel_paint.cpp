// SPDX-License-Identifier: GPL-3.0-or-later
// The Context parallel view's painting: a header, the ring of cp ranks with
// the blocks of the latest ring step in flight, the attention matrix's tiles
// and the footer (work per rank, bytes per ring step, bytes against the formula).
#include <QComboBox>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>
#include <numbers>

#include "views/context_parallel_view.h"
#include "views/plot_legend.h"

namespace shardscope::ui {

namespace {

void drawArrow(QPainter& p, QPointF from, QPointF to, const QColor& color) {
  p.setPen(QPen(color, 2.5));
  p.drawLine(from, to);
  const QPointF d = to - from;
  const double length = std::max(1.0, std::hypot(d.x(), d.y()));
  const QPointF u = d / length, n(-u.y(), u.x());
  QPainterPath head;
  head.moveTo(to);
  head.lineTo(to - 9 * u + 5 * n);
  head.lineTo(to - 9 * u - 5 * n);
  head.closeSubpath();
  p.fillPath(head, color);
}

// Where cp rank r sits on a ring of n: rank 0 at the top, clockwise.
QPointF ringPoint(const QPointF& center, double radius, int r, int n) {
  const double angle = -std::numbers::pi / 2 + 2 * std::numbers::pi * r / n;
  return center + QPointF(radius * std::cos(angle), radius * std::sin(angle));
}

}  // namespace

// The ranks on a circle, each with the blocks it has held this pass; the
// latest ring step's sends as arrows to the next rank, labelled with their block.
void ContextParallelView::paintRing(QPainter& p, const QRectF& area) const {
  const QFontMetrics fm = p.fontMetrics();
  const int n = model_.cp();
  const std::vector<int> ranks = model_.group(layer());
  const ContextParallelPass& pass = model_.latest(layer(), backward_);
  const double node = std::clamp(std::min(area.width(), area.height()) / 10, 10.0, 30.0);
  const double radius =
      std::max(20.0, std::min(area.width() / 2 - node - fm.horizontalAdvance(QStringLiteral("K/V 0, 1, 2, 3")) / 2,
                              area.height() / 2 - node - fm.height() - 4));
  const QPointF center = area.center();
  p.setPen(QPen(palette().mid().color(), 1.5, Qt::DashLine));
  p.setBrush(Qt::NoBrush);
  p.drawEllipse(center, radius, radius);
  const QColor kv(255, 127, 14), grad(148, 103, 189);
  const bool roomy = radius >= 70;  // a small ring (the lessons open at 1280×720) labels blocks by number only
  for (const auto& [from, block] : pass.latestSends()) {
    const QPointF a = ringPoint(center, radius, from, n), b = ringPoint(center, radius, (from + 1) % n, n);
    const QPointF d = b - a;
    const double length = std::max(1.0, std::hypot(d.x(), d.y()));
    const QPointF u = d / length, out = QPointF(u.y(), -u.x()) * (n == 2 ? 18.0 : 0.0);
    drawArrow(p, a + u * (node + 3) + out, b - u * (node + 3) + out, pass.latest_gradients ? grad : kv);
    const QString label = !roomy                  ? QString::number(block)
                          : pass.latest_gradients ? tr("dK/dV %1").arg(block)
                                                  : tr("K/V %1").arg(block);
    const QPointF mid = (a + b) / 2 + out * 1.6;
    const QRectF box(mid.x() - fm.horizontalAdvance(label) / 2 - 3, mid.y() - fm.height() / 2,
                     fm.horizontalAdvance(label) + 6, fm.height());
    p.fillRect(box, palette().base().color());
    p.setPen(pass.latest_gradients ? grad : kv.darker(130));
    p.drawText(box, Qt::AlignCenter, label);
  }
  for (int r = 0; r < n; ++r) {
    const QPointF c = ringPoint(center, radius, r, n);
    p.setBrush(rankColor(ranks[static_cast<std::size_t>(r)]));
    p.setPen(QPen(palette().text().color(), 1));
    p.drawEllipse(c, node, node);
    p.setPen(Qt::white);
    p.drawText(QRectF(c.x() - node, c.y() - node, 2 * node, 2 * node), Qt::AlignCenter,
               tr("r%1").arg(ranks[static_cast<std::size_t>(r)]));
    QStringList held;
    for (int b = 0; b < n; ++b)
      if (pass.step != 0 ? static_cast<bool>(pass.held[static_cast<std::size_t>(r)][static_cast<std::size_t>(b)])
                         : b == r)
        held << QString::number(b);
    const QString text = roomy ? tr("K/V %1").arg(held.join(QStringLiteral(", "))) : held.join(QStringLiteral(","));
    const bool below = c.y() >= center.y() - 1;
    const QRectF label(c.x() - 80, below ? c.y() + node + 2 : c.y() - node - fm.height() - 2, 160, fm.height());
    p.setPen(palette().text().color());
    p.drawText(label, Qt::AlignCenter, text);
  }
  p.setBrush(Qt::NoBrush);
  if (pass.latest_ring_step >= 0)
    p.drawText(QRectF(area.left(), area.top(), area.width(), fm.height()), Qt::AlignLeft,
               tr("Ring step %1 of %2").arg(pass.latest_ring_step).arg(pass.latest_gradients ? n : n - 1));
}

// The attention matrix in 2cp × 2cp tiles: a row per query chunk in its
// rank's colour (solid once that rank holds the key block, faint before),
// masked tiles grey, diagonal tiles as their lower triangle.
void ContextParallelView::paintTiles(QPainter& p, const QRectF& area) const {
  const QFontMetrics fm = p.fontMetrics();
  const int chunks = 2 * model_.cp();
  const std::vector<int> ranks = model_.group(layer());
  const ContextParallelPass& pass = model_.latest(layer(), backward_);
  const double label_w = fm.horizontalAdvance(QStringLiteral("r00 q0")) + 6;
  const double side = std::max(20.0, std::min(area.width() - label_w, area.height() - 2 * fm.height() - 4));
  const double tile = side / chunks;
  const QRectF grid(area.left() + label_w, area.top() + fm.height() + 2, side, side);
  p.setPen(palette().text().color());
  const double title_w = std::max(side, area.width() - label_w);
  p.drawText(QRectF(grid.left(), area.top(), title_w, fm.height()), Qt::AlignLeft,
             fm.elidedText(tr("Attention tiles: query chunks \u2193, key chunks \u2192"), Qt::ElideRight,
                           static_cast<int>(title_w)));
  for (int q = 0; q < chunks; ++q) {
    const int owner = model_.chunkOwner(q);
    const QColor color = rankColor(ranks[static_cast<std::size_t>(owner)]);
    p.setPen(palette().text().color());
    p.drawText(QRectF(area.left(), grid.top() + q * tile, label_w - 4, tile), Qt::AlignRight | Qt::AlignVCenter,
               tr("r%1 q%2").arg(ranks[static_cast<std::size_t>(owner)]).arg(q));
    for (int k = 0; k < chunks; ++k) {
      const QRectF cell(grid.left() + k * tile, grid.top() + q * tile, tile, tile);
      const int halves = model_.tileHalves(q, k);
      const bool filled =
          pass.step != 0 && pass.held[static_cast<std::size_t>(owner)][static_cast<std::size_t>(model_.chunkOwner(k))];
      QColor fill = color;
      fill.setAlpha(filled ? 220 : 45);
      if (halves == 0) {
        p.fillRect(cell, QBrush(palette().mid().color(), Qt::BDiagPattern));
      } else if (halves == 1) {
        QPainterPath lower;
        lower.moveTo(cell.topLeft());
        lower.lineTo(cell.bottomLeft());
        lower.lineTo(cell.bottomRight());
        lower.closeSubpath();
        p.fillPath(lower, fill);
      } else {
        p.fillRect(cell, fill);
      }
      p.setPen(QPen(palette().base().color(), 1));
      p.drawRect(cell);
    }
  }
  p.setPen(palette().text().color());
  p.drawRect(grid);
}

int ContextParallelView::paintFooter(QPainter& p, const QRectF& area) const {
  return paintFooterLines(p, area,
                          workText() + QLatin1Char('\n') + ringBytesText() + QLatin1Char('\n') + formulaText());
}

void ContextParallelView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  const QFontMetrics fm = p.fontMetrics();
  const QRectF all = drawingArea();
  if (paintPlaceholder(p, all, placeholderText())) return;
  const ContextParallelPass& pass = model_.latest(layer(), backward_);
  const QString split = model_.zigzag() ? tr("zig-zag split") : tr("contiguous split");
  const QString header =
      pass.step == 0
          ? tr("Layer %1: ring attention over cp = %2 ranks, %3. No blocks of this pass yet.")
                .arg(layer())
                .arg(model_.cp())
                .arg(split)
          : tr("Layer %1: ring attention over cp = %2 ranks, %3; step %4, micro-batch %5, %6 sends of this pass seen.")
                .arg(layer())
                .arg(model_.cp())
                .arg(split)
                .arg(pass.step)
                .arg(pass.micro_batch)
                .arg(pass.sends);
  const int head = paintHeader(p, all, header);
  const int footer = paintFooter(p, all);
  const double top = all.top() + head + 8, bottom = all.bottom() - footer - 8;
  // The tiles take a square as tall as the room (at most half the width), the ring the rest.
  const double tiles_w = std::min(all.width() * 0.5, bottom - top - 2.0 * fm.height()) +
                         fm.horizontalAdvance(QStringLiteral("r00 q0")) + 6;
  const double ring_w = all.width() - tiles_w - 12;
  paintRing(p, QRectF(all.left(), top, ring_w, bottom - top));
  paintTiles(p, QRectF(all.left() + ring_w + 12, top, tiles_w, bottom - top));
}

}  // namespace shardscope::ui
