// SPDX-License-Identifier: GPL-3.0-or-later
// Painting of the ZeRO sharding view: the stage's formula and this step's
// counts, a legend, then one row per rank and one cell per partition with
// three bands (parameters, gradients, optimizer states), split into the Nd
// chunks under ZeRO-2/3 with the rank's own chunk outlined.
#include <QPainter>

#include <algorithm>
#include <array>

#include "views/zero_view.h"

namespace shardscope::ui {

namespace {

using State = ZeroViewModel::State;
constexpr std::array<State, 3> kStates{State::parameters, State::gradients, State::optimizer};

QColor stateColor(State s) {
  switch (s) {
    case State::parameters: return QColor(31, 119, 180);
    case State::gradients: return QColor(255, 127, 14);
    default: return QColor(44, 160, 44);
  }
}

const QColor kFlash(214, 39, 40);
constexpr int kBandGap = 2;  // px between a cell's three bands

// A line of text across the view, wrapped where the view is narrower than it
// (a 1280 px screen with the lessons open); returns the height it took.
int drawWrapped(QPainter& p, int y, int width, const QString& text) {
  const int flags = Qt::AlignLeft | Qt::TextWordWrap;
  const QRect box = p.fontMetrics().boundingRect(QRect(8, y + 2, width - 16, 10000), flags, text);
  p.drawText(QRect(8, y + 2, width - 16, box.height()), flags, text);
  return box.height() + 4;  // as a one-line row: the font's height and 2 px above and below
}

}  // namespace

void ZeroView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing, false);
  p.fillRect(rect(), palette().base());
  const int y = paintCaption(p, 6);
  const GridGeometry g = gridGeometry(y + 4 + QFontMetrics(font()).height() + 4);
  paintColumnHeaders(p, g);
  for (int r = 0; r < model_.ranks(); ++r) paintRankRow(p, r, g);
}

// The stage's formula (bold), this step's counts, the legend and the notes on
// what a rank holds.
int ZeroView::paintCaption(QPainter& p, int y) const {
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.setPen(palette().text().color());
  y += drawWrapped(p, y, width(), formulaText()) + 2;  // wrapped, as every caption line: never cut at the edge
  p.setFont(font());
  y += drawWrapped(p, y, width(), countsText());
  y = paintLegend(p, y);
  const auto& plan = model_.plan();
  if (plan && plan->grid().pp() > 1 && !plan->flat_optimizer_shards() &&
      plan->stage_holds_unit(plan->grid().pp() - 1, 0)) {
    y += drawWrapped(p, y, width(),
                     tr("Each rank holds only its pipeline stage's units; the last stage keeps a copy of the tied "
                        "token embedding (emb) for its head."));
  }
  if (!tensorParallelText().isEmpty()) y += drawWrapped(p, y, width(), tensorParallelText());
  if (model_.chunks() > 1)
    y += drawWrapped(p, y, width(),
                     tr("Each unit is split into %1 chunks; data-parallel rank r owns chunk r (outlined).")
                         .arg(model_.chunks()));
  return y;
}

// The three bands' colours, "not held", and the outline of a band active just
// now; an entry that would pass the right edge starts a new line.
int ZeroView::paintLegend(QPainter& p, int y) const {
  const QFontMetrics fm(font());
  const int line = fm.height() + 4;
  const QColor text = palette().text().color();
  int x = 8;
  const auto wrapFor = [&](const QString& name) {
    if (x > 8 && x + 22 + fm.horizontalAdvance(name) > width() - 8) {
      x = 8;
      y += line;
    }
  };
  const auto swatch = [&](const QColor& colour, const QString& name) {
    wrapFor(name);
    p.fillRect(QRect(x, y + line / 2 - 4, 18, 8), colour);
    x += 22;
    p.setPen(text);
    p.drawText(QRect(x, y, fm.horizontalAdvance(name) + 2, line), Qt::AlignLeft | Qt::AlignVCenter, name);
    x += fm.horizontalAdvance(name) + 14;
  };
  const std::array<QString, 3> names{tr("parameters"), tr("gradients"), tr("optimizer states")};
  for (std::size_t i = 0; i < kStates.size(); ++i) swatch(stateColor(kStates[i]), names[i]);
  swatch(palette().window().color().darker(115), tr("not held"));
  const QString active = model_.stage() == 3 ? tr("gathered / active just now") : tr("active just now");
  wrapFor(active);
  p.setPen(QPen(kFlash, 2));
  p.setBrush(Qt::NoBrush);
  p.drawRect(QRect(x, y + line / 2 - 5, 18, 10));
  x += 22;
  p.setPen(text);
  p.drawText(QRect(x, y, width() - x - 8, line), Qt::AlignLeft | Qt::AlignVCenter, active);
  return y + line;
}

QString ZeroView::rankLabel(int r) const {
  const bool pipelined = model_.plan() && model_.plan()->grid().pp() > 1;
  QString label =
      pipelined ? tr("rank %1 · stage %2").arg(r).arg(model_.plan()->grid().stage_of(r)) : tr("rank %1").arg(r);
  if (model_.plan() && model_.plan()->grid().tp() > 1)
    label += QStringLiteral(" · ") + tr("tp %1").arg(model_.plan()->grid().tp_rank_of(r));
  return label;
}

QString ZeroView::tensorParallelText() const {
  if (!model_.plan() || model_.plan()->grid().tp() < 2) return {};
  const int tp = model_.plan()->grid().tp();
  if (model_.stage() == 0)
    return tr("Tensor parallelism: each row is one tp rank's slice, 1/%1 of every layer's split matrices; the %2 "
              "data-parallel ranks with the same tp rank each hold that slice whole.")
        .arg(tp)
        .arg(model_.dp());
  return tr("Tensor parallelism: each row is one tp rank's slice, 1/%1 of every layer's split matrices; ZeRO shards "
            "that slice over the %2 data-parallel ranks with the same tp rank.")
      .arg(tp)
      .arg(model_.dp());
}

QString ZeroView::rowText(int r) const {
  QString count;
  const std::int64_t step = model_.lastStep();
  switch (model_.stage()) {
    case 3:
      count = tr("%1 gathered now").arg(model_.gathered_units(r));
      break;
    case 2:
      count = tr("%1 reduce-scatters").arg(model_.reduce_scatters(step, r));
      break;
    case 1:
      count = tr("%1 all-gathers").arg(model_.all_gathers(step, r));
      break;
    default:
      break;
  }
  return count.isEmpty() ? bytesText(r) : count + QStringLiteral(" · ") + bytesText(r);
}

// Rank labels on the left, a column per partition, the counts on the right;
// rows share the height left below `top`.
ZeroView::GridGeometry ZeroView::gridGeometry(int top) const {
  const QFontMetrics fm(font());
  const int rows = model_.ranks(), cols = model_.columns();
  GridGeometry g{};
  g.labelW = fm.horizontalAdvance(rankLabel(rows - 1)) + 16;
  g.countsW = 16;
  for (int r = 0; r < rows; ++r) g.countsW = std::max(g.countsW, fm.horizontalAdvance(rowText(r)) + 16);
  g.countsW = std::min(g.countsW, std::max(120, width() / 3));  // longer counts wrap: the cells keep the width
  g.gridLeft = 8 + g.labelW;
  const int gridW = std::max(40, width() - g.gridLeft - g.countsW - 8);
  g.cellW = std::max(6, gridW / std::max(1, cols));
  g.top = top;
  g.rowH = std::clamp((height() - top - 8) / std::max(1, rows), 18, 96);
  g.gap = std::max(2, g.cellW / 12);
  g.bandH = std::max(3, (g.rowH - 6 - 2 * kBandGap) / 3);
  return g;
}

// Column headers: labels that would overlap the one before are skipped.
void ZeroView::paintColumnHeaders(QPainter& p, const GridGeometry& g) const {
  const QFontMetrics fm(font());
  const int headerH = fm.height() + 4;
  p.setPen(palette().text().color());
  int lastRight = -1000;
  for (int c = 0; c < model_.columns(); ++c) {
    const QString label = columnLabel(c);
    const int cx = g.gridLeft + c * g.cellW + g.cellW / 2;
    const int w = fm.horizontalAdvance(label);
    if (cx - w / 2 <= lastRight + 4) continue;
    p.drawText(QRect(cx - w / 2 - 1, g.top - headerH, w + 2, headerH), Qt::AlignCenter, label);
    lastRight = cx + w / 2;
  }
}

// One rank: its label, each partition's three bands split into chunks (held,
// gathered for use, or not held; outlined while active), its own chunk
// outlined, and its running counts.
void ZeroView::paintRankRow(QPainter& p, int r, const GridGeometry& g) const {
  const QColor text = palette().text().color();
  const QColor empty = palette().window().color().darker(115);
  const int ry = g.top + r * g.rowH;
  p.setPen(text);
  p.drawText(QRect(8, ry, g.labelW - 8, g.rowH), Qt::AlignLeft | Qt::AlignVCenter, rankLabel(r));
  const int me = model_.plan() ? model_.plan()->grid().dp_rank_of(r) : 0;
  const int k = model_.chunks();
  for (int c = 0; c < model_.columns(); ++c) {
    const int cx = g.gridLeft + c * g.cellW;
    const int innerW = g.cellW - g.gap;
    for (std::size_t b = 0; b < kStates.size(); ++b) {
      const State s = kStates[b];
      const int by = ry + 3 + static_cast<int>(b) * (g.bandH + kBandGap);
      const bool lit = s == State::parameters && model_.gathered(r, c);
      for (int j = 0; j < k; ++j) {
        const int x0 = cx + innerW * j / k;
        const int x1 = cx + innerW * (j + 1) / k;
        const bool held = model_.holdsChunk(r, c, j, s);
        QColor fill = held ? stateColor(s) : empty;
        if (lit && !held) fill = stateColor(s).lighter(150);  // gathered for use, not owned
        p.fillRect(QRect(x0, by, std::max(1, x1 - x0 - (k > 1 ? 1 : 0)), g.bandH), fill);
      }
      const double f = lit ? 1.0 : flash(r, c, s);
      if (f > 0.0) {
        QColor ring = kFlash;
        ring.setAlphaF(static_cast<float>(0.25 + 0.75 * f));
        p.setPen(QPen(ring, 2));
        p.setBrush(Qt::NoBrush);
        p.drawRect(QRect(cx, by, innerW - 1, g.bandH - 1));
      }
    }
    if (k > 1) {  // outline the rank's own chunk
      const int x0 = cx + innerW * me / k;
      const int x1 = cx + innerW * (me + 1) / k;
      p.setPen(QPen(text, 1));
      p.setBrush(Qt::NoBrush);
      p.drawRect(QRect(x0, ry + 1, x1 - x0 - 1, 3 * g.bandH + 2 * kBandGap + 3));
    }
  }
  p.setPen(text);
  p.drawText(QRect(g.gridLeft + model_.columns() * g.cellW + 8, ry, g.countsW - 8, g.rowH),
             Qt::AlignLeft | Qt::AlignVCenter | Qt::TextWordWrap, rowText(r));
}

}  // namespace shardscope::ui
