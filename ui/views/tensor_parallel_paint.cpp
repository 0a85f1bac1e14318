// SPDX-License-Identifier: GPL-3.0-or-later
// The Tensor parallel view's painting: a header line, the attention and MLP
// blocks (f, the column-parallel matrix, what runs between, the row-parallel
// matrix, g), and the footer (measured bytes, the formula, the rank colours).
#include <QPainter>
#include <QPainterPath>
#include <QSpinBox>
#include <algorithm>

#include "views/plot_legend.h"
#include "views/tensor_parallel_view.h"

namespace shardscope::ui {

namespace {

const QColor kLit(255, 127, 14);  // the collective that arrived last

// Room for a matrix's two-line label: three lines, as Chinese glyphs from a
// fallback font stand taller than the font's own line.
int labelHeight(const QFontMetrics& fm) {
  return 3 * fm.height();
}

void drawArrow(QPainter& p, QPointF from, QPointF to, const QColor& color) {
  p.setPen(QPen(color, 1.5));
  p.drawLine(from, to);
  const QPointF d = to - from;
  const double length = std::max(1.0, std::hypot(d.x(), d.y()));
  const QPointF u = d / length, n(-u.y(), u.x());
  QPainterPath head;
  head.moveTo(to);
  head.lineTo(to - 7 * u + 4 * n);
  head.lineTo(to - 7 * u - 4 * n);
  head.closeSubpath();
  p.fillPath(head, color);
}

}  // namespace

TensorParallelView::Block TensorParallelView::attentionBlock() const {
  const int c = model_.channels(), t = model_.tp();
  Block b;
  b.name = tr("Attention");
  b.a = {c, 3 * c, true, tr("W_qkv: C \u00d7 3C/t per rank\n= %1 \u00d7 %2, split by column").arg(c).arg(3 * c / t)};
  b.b = {c, c, false, tr("W_o: C/t \u00d7 C per rank\n= %1 \u00d7 %2, split by row").arg(c / t).arg(c)};
  b.middle = tr("attention:\n%1 of %2 heads\nper rank").arg(model_.heads() / t).arg(model_.heads());
  b.before = TensorParallelPlace::attention_in;
  b.after = TensorParallelPlace::attention_out;
  return b;
}

TensorParallelView::Block TensorParallelView::mlpBlock() const {
  const int c = model_.channels(), t = model_.tp();
  Block b;
  b.name = tr("MLP");
  b.a = {c, 4 * c, true, tr("W_fc: C \u00d7 4C/t per rank\n= %1 \u00d7 %2, split by column").arg(c).arg(4 * c / t)};
  b.b = {4 * c, c, false, tr("W_proj: 4C/t \u00d7 C per rank\n= %1 \u00d7 %2, split by row").arg(4 * c / t).arg(c)};
  b.middle = tr("GELU,\nper rank");
  b.before = TensorParallelPlace::mlp_in;
  b.after = TensorParallelPlace::mlp_out;
  return b;
}

// W drawn in × out (rows × columns) at `scale` pixels per feature (one scale
// for every matrix, so their sizes compare), above its label; each rank's
// shard a strip of columns (by_column) or of rows, in its colour.
void TensorParallelView::paintMatrix(QPainter& p, const QRectF& slot, double scale, const Block::Matrix& w) const {
  const QFontMetrics fm = p.fontMetrics();
  // Three lines, or as many as the label wraps to in a narrow slot (the lessons dock open at 1280×720).
  const int wrapped = fm.boundingRect(QRect(0, 0, static_cast<int>(slot.width()), 100 * fm.height()),
                                      Qt::AlignHCenter | Qt::TextWordWrap, w.label)
                          .height();
  const int label_h = std::max(labelHeight(fm), wrapped);
  const QRectF box(slot.left(), slot.top(), slot.width(), std::max(10.0, slot.height() - label_h - 4));
  const QRectF m(box.center().x() - w.out * scale / 2, box.center().y() - w.in * scale / 2, w.out * scale,
                 w.in * scale);
  const std::vector<int> ranks = model_.group(layer());
  const int t = static_cast<int>(ranks.size());
  for (int i = 0; i < t; ++i) {
    const QRectF shard = w.by_column ? QRectF(m.left() + m.width() * i / t, m.top(), m.width() / t, m.height())
                                     : QRectF(m.left(), m.top() + m.height() * i / t, m.width(), m.height() / t);
    QColor fill = rankColor(ranks[static_cast<std::size_t>(i)]);
    fill.setAlpha(170);
    p.fillRect(shard, fill);
    p.setPen(QPen(palette().base().color(), 1.5));
    p.drawRect(shard);
    if (shard.width() > fm.horizontalAdvance(QStringLiteral("r00")) && shard.height() > fm.height()) {
      p.setPen(Qt::white);
      p.drawText(shard, Qt::AlignCenter, tr("r%1").arg(ranks[static_cast<std::size_t>(i)]));
    }
  }
  p.setPen(palette().text().color());
  p.drawRect(m);
  p.drawText(QRectF(slot.left(), box.bottom() + 4, slot.width(), label_h), Qt::AlignHCenter | Qt::TextWordWrap,
             w.label);
}

// An operator: a circle with its name, lit while its collective is the
// layer's latest, tinted once one has arrived; below it, that collective.
void TensorParallelView::paintOperator(QPainter& p, const QRectF& slot, TensorParallelPlace place, bool f) const {
  const TensorParallelCollective& c = model_.latest(layer(), place);
  const TensorParallelCollective* newest = model_.latest(layer());
  const bool lit = newest != nullptr && newest->place == place;
  const double r = std::min(18.0, slot.width() / 4);
  const QPointF center(slot.center().x(), slot.top() + slot.height() * 0.4);
  QColor fill = kLit;
  fill.setAlpha(lit ? 255 : c.seen > 0 ? 70 : 0);
  p.setBrush(fill);
  p.setPen(QPen(lit ? kLit.darker(140) : palette().text().color(), lit ? 3 : 1.5));
  p.drawEllipse(center, r, r);
  p.setBrush(Qt::NoBrush);
  p.setPen(palette().text().color());
  p.drawText(QRectF(center.x() - r, center.y() - r, 2 * r, 2 * r), Qt::AlignCenter, placeText(place));
  const QString what = c.seen > 0 ? collectiveText(c)
                       : f        ? tr("identity forward,\nall-reduce backward")
                                  : tr("all-reduce forward,\nidentity backward");
  p.drawText(QRectF(slot.left(), center.y() + r + 4, slot.width(), slot.bottom() - center.y() - r - 4),
             Qt::AlignHCenter | Qt::AlignTop | Qt::TextWordWrap, what);
}

// One block in a row: f | column-parallel matrix | middle | row-parallel matrix | g.
void TensorParallelView::paintBlock(QPainter& p, const Block& b, const QRectF& area) const {
  const QFontMetrics fm = p.fontMetrics();
  QFont bold = p.font();
  bold.setBold(true);
  p.setFont(bold);
  p.setPen(palette().text().color());
  p.drawText(QPointF(area.left(), area.top() + fm.ascent()), b.name);
  p.setFont(font());
  const QRectF row(area.left(), area.top() + fm.height() + 2, area.width(), area.height() - fm.height() - 2);
  const double op_w = std::clamp(row.width() * 0.16, 90.0, 160.0);
  const double mid_w = std::clamp(row.width() * 0.13, 80.0, 130.0);
  const double gap = 14, mat_w = (row.width() - 2 * op_w - mid_w - 4 * gap) / 2;
  double x = row.left();
  const auto take = [&](double w) {
    const QRectF r(x, row.top(), w, row.height());
    x += w + gap;
    return r;
  };
  const QRectF f = take(op_w), a = take(mat_w), mid = take(mid_w), bm = take(mat_w), g = take(op_w);
  paintOperator(p, f, b.before, true);
  // The widest and the tallest matrix are the MLP's (4C): every block draws at the scale that fits them.
  const double scale = std::max(0.1, std::min(mat_w, row.height() - labelHeight(fm) - 6) / (4.0 * model_.channels()));
  paintMatrix(p, a, scale, b.a);
  p.setPen(palette().text().color());
  p.drawText(QRectF(mid.left(), mid.top(), mid.width(), mid.height() * 0.8), Qt::AlignCenter | Qt::TextWordWrap,
             b.middle);
  paintMatrix(p, bm, scale, b.b);
  paintOperator(p, g, b.after, false);
  const double y = row.top() + row.height() * 0.4;
  const QColor arrow = palette().mid().color();
  for (const auto& [from, to] : {std::pair{f, a}, std::pair{a, mid}, std::pair{mid, bm}, std::pair{bm, g}})
    drawArrow(p, QPointF(from == f ? f.center().x() + 20 : from.right() + 1, y),
              QPointF(to == g ? g.center().x() - 20 : to.left() - 1, y), arrow);
}

// The measured bytes, the formula and the rank colours, wrapped to the width;
// returns the height used (drawn bottom-up from area's bottom).
int TensorParallelView::paintFooter(QPainter& p, const QRectF& area) const {
  const QFontMetrics fm = p.fontMetrics();
  const int legend = fm.height() + 4;
  const int text = paintFooterLines(p, area, measuredText() + QLatin1Char('\n') + formulaText(), legend);
  const int height = text + legend;
  double x = area.left();
  const double y = area.bottom() - height + text + 4;
  const std::vector<int> ranks = model_.group(layer());
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const QString key = tr("tp rank %1 = rank %2").arg(i).arg(ranks[i]);
    p.fillRect(QRectF(x, y + 2, fm.height() - 4, fm.height() - 4), rankColor(ranks[i]));
    p.drawText(QPointF(x + fm.height(), y + fm.ascent()), key);
    x += fm.height() + fm.horizontalAdvance(key) + 16;
  }
  return height;
}

void TensorParallelView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  const QRectF all = drawingArea();
  if (paintPlaceholder(p, all, placeholderText())) return;
  QStringList ranks;
  for (int r : model_.group(layer())) ranks << QString::number(r);
  const QString header = tr("Layer %1 of %2 (stage %3), split over t = %4 tensor-parallel ranks %5 of data-parallel "
                            "rank 0. %6 collectives of this layer seen.")
                             .arg(layer())
                             .arg(model_.layers())
                             .arg(model_.stageOf(layer()))
                             .arg(model_.tp())
                             .arg(ranks.join(QStringLiteral(", ")))
                             .arg(model_.collectives(layer()));
  const int head = paintHeader(p, all, header);
  const int footer = paintFooter(p, all);
  const double top = all.top() + head + 6, bottom = all.bottom() - footer - 6;
  const double half = (bottom - top) / 2;
  paintBlock(p, attentionBlock(), QRectF(all.left(), top, all.width(), half - 6));
  paintBlock(p, mlpBlock(), QRectF(all.left(), top + half, all.width(), half - 6));
}

}  // namespace shardscope::ui
