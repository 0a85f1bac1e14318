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
  const QFontMetrics fm(font());
  const int line = fm.height() + 4;
  const QColor text = palette().text().color();
  const QColor empty = palette().window().color().darker(115);
  int y = 6;

  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.setPen(text);
  p.drawText(QRect(8, y, width() - 16, line), Qt::AlignLeft | Qt::AlignVCenter, formulaText());
  p.setFont(font());
  y += line;
  y += drawWrapped(p, y, width(), countsText());

  // Legend.
  int x = 8;
  const std::array<QString, 3> names{tr("parameters"), tr("gradients"), tr("optimizer states")};
  for (std::size_t i = 0; i < kStates.size(); ++i) {
    p.fillRect(QRect(x, y + line / 2 - 4, 18, 8), stateColor(kStates[i]));
    x += 22;
    p.setPen(text);
    p.drawText(QRect(x, y, fm.horizontalAdvance(names[i]) + 2, line), Qt::AlignLeft | Qt::AlignVCenter, names[i]);
    x += fm.horizontalAdvance(names[i]) + 14;
  }
  p.fillRect(QRect(x, y + line / 2 - 4, 18, 8), empty);
  x += 22;
  const QString notHeld = tr("not held");
  p.drawText(QRect(x, y, fm.horizontalAdvance(notHeld) + 2, line), Qt::AlignLeft | Qt::AlignVCenter, notHeld);
  x += fm.horizontalAdvance(notHeld) + 14;
  p.setPen(QPen(kFlash, 2));
  p.setBrush(Qt::NoBrush);
  p.drawRect(QRect(x, y + line / 2 - 5, 18, 10));
  x += 22;
  p.setPen(text);
  const QString active = model_.stage() == 3 ? tr("gathered / active just now") : tr("active just now");
  p.drawText(QRect(x, y, width() - x - 8, line), Qt::AlignLeft | Qt::AlignVCenter, active);
  y += line;
  const auto& plan = model_.plan();
  if (plan && plan->grid().pp() > 1 && !plan->flat_optimizer_shards() &&
      plan->stage_holds_unit(plan->grid().pp() - 1, 0)) {
    y += drawWrapped(p, y, width(),
                     tr("Each rank holds only its pipeline stage's units; the last stage keeps a copy of the tied "
                        "token embedding (emb) for its head."));
  }
  if (model_.chunks() > 1)
    y += drawWrapped(p, y, width(),
                     tr("Each unit is split into %1 chunks; data-parallel rank r owns chunk r (outlined).")
                         .arg(model_.chunks()));

  // Grid geometry.
  const int rows = model_.ranks();
  const int cols = model_.columns();
  const bool pipelined = model_.plan() && model_.plan()->grid().pp() > 1;
  auto rankLabel = [&](int r) {  // with pipeline stages, the rank's stage
    return pipelined ? tr("rank %1 · stage %2").arg(r).arg(model_.plan()->grid().stage_of(r)) : tr("rank %1").arg(r);
  };
  const int labelW = fm.horizontalAdvance(rankLabel(rows - 1)) + 16;
  const std::int64_t step = model_.lastStep();
  auto rowText = [&](int r) -> QString {  // this step's running count on a rank, then its model-state bytes
    QString count;
    switch (model_.stage()) {
      case 3: count = tr("%1 gathered now").arg(model_.gathered_units(r)); break;
      case 2: count = tr("%1 reduce-scatters").arg(model_.reduce_scatters(step, r)); break;
      case 1: count = tr("%1 all-gathers").arg(model_.all_gathers(step, r)); break;
      default: break;
    }
    return count.isEmpty() ? bytesText(r) : count + QStringLiteral(" · ") + bytesText(r);
  };
  int countsW = 16;
  for (int r = 0; r < rows; ++r) countsW = std::max(countsW, fm.horizontalAdvance(rowText(r)) + 16);
  const int gridLeft = 8 + labelW;
  const int gridW = std::max(40, width() - gridLeft - countsW - 8);
  const int cellW = std::max(6, gridW / std::max(1, cols));
  const int headerH = line;
  const int top = y + 4 + headerH;
  const int rowH = std::clamp((height() - top - 8) / std::max(1, rows), 18, 64);
  const int gap = std::max(2, cellW / 12);

  // Column headers: skip labels that would overlap.
  int lastRight = -1000;
  for (int c = 0; c < cols; ++c) {
    const QString label = columnLabel(c);
    const int cx = gridLeft + c * cellW + cellW / 2;
    const int w = fm.horizontalAdvance(label);
    if (cx - w / 2 <= lastRight + 4) continue;
    p.drawText(QRect(cx - w / 2 - 1, top - headerH, w + 2, headerH), Qt::AlignCenter, label);
    lastRight = cx + w / 2;
  }

  const int bandGap = 2;
  const int bandH = std::max(3, (rowH - 6 - 2 * bandGap) / 3);
  for (int r = 0; r < rows; ++r) {
    const int ry = top + r * rowH;
    p.setPen(text);
    p.drawText(QRect(8, ry, labelW - 8, rowH), Qt::AlignLeft | Qt::AlignVCenter, rankLabel(r));
    const int me = model_.plan() ? model_.plan()->grid().dp_rank_of(r) : 0;
    for (int c = 0; c < cols; ++c) {
      const int cx = gridLeft + c * cellW;
      const int innerW = cellW - gap;
      const int k = model_.chunks();
      for (std::size_t b = 0; b < kStates.size(); ++b) {
        const State s = kStates[b];
        const int by = ry + 3 + static_cast<int>(b) * (bandH + bandGap);
        const bool lit = s == State::parameters && model_.gathered(r, c);
        for (int j = 0; j < k; ++j) {
          const int x0 = cx + innerW * j / k;
          const int x1 = cx + innerW * (j + 1) / k;
          const bool held = model_.holdsChunk(r, c, j, s);
          QColor fill = held ? stateColor(s) : empty;
          if (lit && !held) fill = stateColor(s).lighter(150);  // gathered for use, not owned
          p.fillRect(QRect(x0, by, std::max(1, x1 - x0 - (k > 1 ? 1 : 0)), bandH), fill);
        }
        const double f = lit ? 1.0 : flash(r, c, s);
        if (f > 0.0) {
          QColor ring = kFlash;
          ring.setAlphaF(static_cast<float>(0.25 + 0.75 * f));
          p.setPen(QPen(ring, 2));
          p.setBrush(Qt::NoBrush);
          p.drawRect(QRect(cx, by, innerW - 1, bandH - 1));
        }
      }
      if (k > 1) {  // outline the rank's own chunk
        const int x0 = cx + innerW * me / k;
        const int x1 = cx + innerW * (me + 1) / k;
        p.setPen(QPen(text, 1));
        p.setBrush(Qt::NoBrush);
        p.drawRect(QRect(x0, ry + 1, x1 - x0 - 1, 3 * bandH + 2 * bandGap + 3));
      }
    }
    // Per-rank running counts this step.
    p.setPen(text);
    p.drawText(QRect(gridLeft + cols * cellW + 8, ry, countsW, rowH), Qt::AlignLeft | Qt::AlignVCenter, rowText(r));
  }
}

}  // namespace shardscope::ui
