// SPDX-License-Identifier: GPL-3.0-or-later
// Painting of the ring all-reduce view: the ranks on a circle, the moving
// chunks of the group being replayed, per-rank bytes, legend and totals.
#include <QComboBox>
#include <QLocale>
#include <QPainter>
#include <QPainterPath>
#include <QtMath>
#include <algorithm>
#include <cmath>

#include "views/ring_allreduce_view.h"

namespace shardscope::ui {

namespace {

QColor colorOf(const RingTransfer& t) {
  switch (t.op) {
    case CommOp::broadcast:
      return QColor(44, 160, 44);
    case CommOp::scatter:
      return QColor(148, 103, 189);
    case CommOp::gather:
      return QColor(214, 39, 40);
    default:
      return t.phase == RingPhase::reduce_scatter ? QColor(255, 127, 14) : QColor(31, 119, 180);
  }
}

QString sizeText(std::int64_t bytes) {
  return QLocale().formattedDataSize(bytes, 1);
}

}  // namespace

QString RingAllreduceView::groupCaption() const {
  if (current_.transfers.empty() && !nccl_.empty()) {
    const auto& [step, c] = *nccl_.rbegin();
    return tr("step %1 · NCCL: %n all-reduce call(s) on rank %2, %3 in all, %4 ms of GPU time", nullptr, c.calls)
        .arg(step)
        .arg(grid_.rank_at(stage_, 0))
        .arg(sizeText(c.bytes))
        .arg(static_cast<double>(c.gpu_ns) / 1e6, 0, 'f', 2);
  }
  if (current_.transfers.empty())
    return last_step_ == 0 ? tr("Waiting for communication events: press Run.") : tr("Idle: every transfer replayed.");
  const RingTransfer& t = current_.transfers.front();
  const auto n = static_cast<int>(current_.transfers.size());
  if (naive_) {
    const QString what = t.op == CommOp::broadcast ? tr("broadcast of the parameters from rank 0")
                         : t.op == CommOp::scatter ? tr("scatter of the tokens from rank 0")
                                                   : tr("gather of the gradients to rank 0");
    return tr("step %1 · %2 · %n transfer(s) of %3", nullptr, n).arg(t.step).arg(what, sizeText(t.bytes));
  }
  return ringCaption(t);
}

// One ring step: of a DDP bucket, of ZeRO-1's flat shards, or of a ZeRO-2/3 unit.
QString RingAllreduceView::ringCaption(const RingTransfer& t) const {
  const QString phase = t.phase == RingPhase::reduce_scatter ? tr("reduce-scatter") : tr("all-gather");
  if (t.bucket >= 0)
    return tr("step %1 · bucket %2 · %3 step %4 of %5 · %6 per chunk")
        .arg(t.step)
        .arg(t.bucket)
        .arg(phase)
        .arg(t.ring_step + 1)
        .arg(grid_.dp() - 1)
        .arg(sizeText(t.bytes));
  const QString what = t.unit < 0             ? tr("the flat shards")
                       : t.unit == 0          ? tr("the embeddings")
                       : t.unit == units_ - 1 ? tr("the head")
                                              : tr("layer %1").arg(t.unit - 1);
  const QString state = t.op == CommOp::reduce_scatter ? tr("gradients") : tr("parameters");
  return tr("step %1 · %2 of the %3 of %4 · ring step %5 of %6 · %7 per chunk")
      .arg(t.step)
      .arg(phase, state, what)
      .arg(t.ring_step + 1)
      .arg(grid_.dp() - 1)
      .arg(sizeText(t.bytes));
}

QString RingAllreduceView::titleText() const {
  if (naive_) return tr("DataParallel (naive): rank 0 scatters, broadcasts and gathers");
  switch (zero_) {
    case 1:
      return tr("ZeRO-1: reduce-scatter the gradients, update the own shard, all-gather the parameters");
    case 2:
      return tr("ZeRO-2: reduce-scatter each unit's gradients, all-gather the updated chunks");
    case 3:
      return tr("ZeRO-3: all-gather each unit for forward and backward, reduce-scatter its gradients");
    default:
      return tr("DDP ring all-reduce: reduce-scatter, then all-gather, per bucket");
  }
}

QString RingAllreduceView::totalsCaption() const {
  const std::int64_t step = shownStep();
  const int root = grid_.rank_at(stage_, 0);  // naive DataParallel's master of the shown stage
  const int n = grid_.dp();
  if (n < 2) return tr("One data-parallel rank: nothing to reduce.");
  if (current_.transfers.empty() && steps_.empty() && !nccl_.empty())
    return tr("NCCL runs the ring inside its kernels: its chunk transfers are not events, so none is drawn.");
  const QLocale locale;
  const QString formula =
      formulaText().isEmpty()
          ? QString()
          : QStringLiteral(" ") + tr("Formula %1 = %2 bytes, with %3.")
                                      .arg(formulaText(), locale.toString(formulaBytes(), 'f', 0), formulaValues());
  if (naive_) {
    const std::int64_t grads = bytes_received(root, step) / (n - 1);  // one rank's gradient bytes, from the events
    const std::int64_t states = state_bytes_sent(root, step) + state_bytes_received(root, step);
    return tr("Step %1: rank 0 sent %2, received %3; a DDP ring would send 2(N−1)/N × %4 = %5 per rank.")
               .arg(step)
               .arg(sizeText(bytes_sent(root, step)), sizeText(bytes_received(root, step)), sizeText(grads),
                    sizeText(2 * (n - 1) * grads / n)) +
           QStringLiteral(" ") + tr("Parameters and gradients through rank 0: %1 bytes.").arg(locale.toString(states)) +
           formula;
  }
  // The circles' own count (drawn so far), so the line never disagrees with them.
  std::int64_t total = 0;
  for (const int g : grid_.dp_group(stage_)) total += shownBytesSent(g);
  const bool whole = current_.transfers.empty() && queue_.empty();
  return (whole ? tr("Step %1: each of the %2 ranks sent %3 (rank %4: %5 bytes, the mean %6 bytes); none is a "
                     "bottleneck.")
                : tr("Step %1 so far: each of the %2 ranks sent %3 (rank %4: %5 bytes, the mean %6 bytes)."))
             .arg(step)
             .arg(n)
             .arg(sizeText(total / n))
             .arg(root)
             .arg(locale.toString(shownBytesSent(root)), locale.toString(static_cast<double>(total) / n, 'f', 0)) +
         formula;
}

void RingAllreduceView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  p.fillRect(rect(), palette().base());
  const QFontMetrics fm(font());
  const int line = fm.height() + 4;
  const int y = stage_box_->geometry().bottom() + 6;
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.setPen(palette().text().color());
  p.drawText(QRect(8, y, width() - 16, line), Qt::AlignLeft | Qt::AlignVCenter, titleText());
  p.setFont(font());
  p.drawText(QRect(8, y + line, width() - 16, line), Qt::AlignLeft | Qt::AlignVCenter, groupCaption());
  const RingGeometry g = ringGeometry(y + 2 * line + 8, height() - footerHeight(fm, line) - 8, line);
  paintRingEdges(p, g);
  paintMovingChunks(p, g);
  paintRankNodes(p, g);
  paintFooter(p, height() - footerHeight(fm, line) - 4, line);
}

QStringList RingAllreduceView::rankLabelLines(int g) const {
  const auto sent = shownBytesSent(g);
  const auto recv = anim_received_.count(g) != 0 ? anim_received_.at(g) : 0;
  if (steps_.empty() && !nccl_.empty()) return QStringList{tr("rank %1").arg(g), QString()};
  return QStringList{tr("rank %1 sent %2").arg(g).arg(sizeText(sent)),
                     naive_ ? tr("received %1").arg(sizeText(recv)) : QString()};
}

// The ranks on a circle between `top` and `bottom`, with room beside it for
// the widest rank label (two lines above and below).
RingAllreduceView::RingGeometry RingAllreduceView::ringGeometry(int top, int bottom, int line) const {
  const QFontMetrics fm(font());
  RingGeometry g;
  g.line = line;
  g.center = QPointF(width() / 2.0, (top + bottom) / 2.0);
  for (const int rank : grid_.dp_group(stage_))
    for (const QString& s : rankLabelLines(rank)) g.label_w = std::max<double>(g.label_w, fm.horizontalAdvance(s));
  g.radius =
      std::max(30.0, std::min(width() / 2.0 - g.node - g.label_w - 16, (bottom - top) / 2.0 - g.node - 2 * line - 4));
  const int n = grid_.dp();
  // The circles grow with the drawing (up to 34 px) and shrink so that
  // neighbours on the circle never touch: the gap between their rims leaves
  // room for an arrow and a moving chunk.
  const double half_gap = n > 1 ? g.radius * std::sin(M_PI / n) : g.radius;
  const double node = std::clamp(std::min(g.radius * 0.2, half_gap - 16), 12.0, 34.0);
  g.radius = std::max(30.0, g.radius - std::max(0.0, node - g.node));  // a larger circle: its label still fits
  g.node = node;
  for (int i = 0; i < n; ++i) {
    const double a = -M_PI / 2 + 2 * M_PI * i / n;
    g.at.push_back(g.center + QPointF(std::cos(a), std::sin(a)) * g.radius);
  }
  return g;
}

namespace {
// The line between the circles of dp ranks a and b, each end at a circle's rim.
std::pair<QPointF, QPointF> edgeBetween(const std::vector<QPointF>& at, double node, int a, int b) {
  const QPointF pa = at[static_cast<std::size_t>(a)], pb = at[static_cast<std::size_t>(b)];
  const QPointF d = pb - pa;
  const double len = std::max(1.0, std::hypot(d.x(), d.y()));
  return {pa + d * (node / len), pb - d * (node / len)};
}

void drawArrow(QPainter& p, QPointF from, QPointF to, const QColor& color, double width) {
  p.setPen(QPen(color, width));
  p.drawLine(from, to);
  const QPointF d = (to - from) / std::max(1.0, std::hypot((to - from).x(), (to - from).y()));
  const QPointF nrm(-d.y(), d.x());
  QPainterPath head;
  head.moveTo(to);
  head.lineTo(to - d * 9 + nrm * 4.5);
  head.lineTo(to - d * 9 - nrm * 4.5);
  head.closeSubpath();
  p.fillPath(head, color);
}
}  // namespace

// The idle links: the ring's arrows, or naive DP's dashed spokes from rank 0.
void RingAllreduceView::paintRingEdges(QPainter& p, const RingGeometry& g) const {
  const int n = grid_.dp();
  if (n < 2) return;
  const QColor idle = palette().mid().color();
  for (int i = 0; i < n; ++i) {
    if (naive_) {
      if (i == 0) continue;
      const auto [from, to] = edgeBetween(g.at, g.node, 0, i);
      p.setPen(QPen(idle, 1.5, Qt::DashLine));
      p.drawLine(from, to);
    } else {
      const auto [from, to] = edgeBetween(g.at, g.node, i, (i + 1) % n);
      drawArrow(p, from, to, idle, 1.5);
    }
  }
}

// The moving chunks of the group being replayed.
void RingAllreduceView::paintMovingChunks(QPainter& p, const RingGeometry& g) const {
  const QFontMetrics fm(font());
  const double progress = std::min(1.0, (tick_ + 1.0) / ticksPerGroup());
  for (const RingTransfer& t : current_.transfers) {
    if (grid_.stage_of(t.src) != stage_ || grid_.stage_of(t.dst) != stage_ || t.src == t.dst) continue;
    const auto [from, to] = edgeBetween(g.at, g.node, grid_.dp_rank_of(t.src), grid_.dp_rank_of(t.dst));
    const QColor color = colorOf(t);
    drawArrow(p, from, to, color, 2.5);
    const QPointF pos = from + (to - from) * progress;
    const QString label = !naive_                     ? tr("c%1").arg(t.chunk)
                          : t.op == CommOp::broadcast ? tr("params")
                          : t.op == CommOp::scatter   ? tr("tokens")
                                                      : tr("grads");
    const double bw = std::max(26, fm.horizontalAdvance(label) + 8);
    const QRectF box(pos.x() - bw / 2, pos.y() - 9, bw, 18);
    p.setPen(color.darker(140));
    p.setBrush(color);
    p.drawRoundedRect(box, 4, 4);
    p.setPen(Qt::white);
    p.drawText(box, Qt::AlignCenter, label);
  }
}

// The ranks and their bytes this step (up to the replay cursor), each label
// outside the circle on the side the rank sits.
void RingAllreduceView::paintRankNodes(QPainter& p, const RingGeometry& g) const {
  QFont bold = font();
  bold.setBold(true);
  const std::vector<int> ring = grid_.dp_group(stage_);  // global ranks, by dp rank: their places on the circle
  for (std::size_t i = 0; i < g.at.size(); ++i) {
    const int rank = ring[i];
    const QPointF pos = g.at[i];
    const bool hot = naive_ && i == 0;
    p.setPen(QPen(hot ? QColor(214, 39, 40) : palette().text().color(), hot ? 3 : 1.5));
    p.setBrush(palette().window());
    p.drawEllipse(pos, g.node, g.node);
    p.setPen(palette().text().color());
    p.setFont(bold);
    p.drawText(QRectF(pos.x() - g.node, pos.y() - g.node, 2 * g.node, 2 * g.node), Qt::AlignCenter,
               QString::number(rank));
    p.setFont(font());
    const QStringList lines = rankLabelLines(rank);
    const QString text = naive_ ? lines.join(QLatin1Char('\n')) : lines.front();
    const int rows = naive_ ? 2 : 1;
    const QPointF out = (pos - g.center) / std::max(1.0, g.radius);
    QRectF box(pos.x() - (g.label_w + 4) / 2, pos.y() - rows * g.line / 2.0, g.label_w + 4, rows * g.line);
    if (out.y() < -0.5)
      box.moveBottom(pos.y() - g.node - 2);
    else if (out.y() > 0.5)
      box.moveTop(pos.y() + g.node + 2);
    else if (out.x() > 0)
      box.moveLeft(pos.x() + g.node + 6);
    else
      box.moveRight(pos.x() - g.node - 6);
    const int align = out.y() < -0.5 || out.y() > 0.5 ? Qt::AlignHCenter : out.x() > 0 ? Qt::AlignLeft : Qt::AlignRight;
    if (hot) p.setPen(QColor(214, 39, 40));
    p.drawText(box, align | Qt::AlignVCenter, text);
  }
}

// Real time only: how far the drawing lags the run, and what it skipped to catch up.
QString RingAllreduceView::skippedCaption() const {
  QStringList lines;
  if (const std::int64_t behind = stepsBehind(); behind > 0)
    lines << tr("%n step(s) behind the run: this step is drawn whole, then the newest.", nullptr,
                static_cast<int>(behind));
  if (skipped_shown_ > 0)
    lines << tr("Skipped %n transfer(s) of earlier steps to catch up with the run.", nullptr,
                static_cast<int>(skipped_shown_));
  return lines.join(QLatin1Char(' '));
}

namespace {
constexpr int kWrap = Qt::AlignLeft | Qt::TextWordWrap;
// The height of `text` wrapped to `width`, at least one row.
int wrappedHeight(const QFontMetrics& fm, int width, const QString& text, int line) {
  return std::max(line, fm.boundingRect(QRect(0, 0, width, 10000), kWrap, text).height() + 4);
}
}  // namespace

int RingAllreduceView::footerHeight(const QFontMetrics& fm, int line) const {
  return line + wrappedHeight(fm, width() - 16, totalsCaption(), line) +
         wrappedHeight(fm, width() - 16, skippedCaption(), line);
}

void RingAllreduceView::paintFooter(QPainter& p, int top, int line) const {
  const QFontMetrics fm(font());
  int x = 8;
  const auto key = [&](const QColor& color, const QString& text) {
    p.fillRect(QRect(x, top + line / 2 - 5, 10, 10), color);
    p.setPen(palette().text().color());
    p.drawText(QPoint(x + 14, top + fm.ascent() + 2), text);
    x += 14 + fm.horizontalAdvance(text) + 16;
  };
  RingTransfer k;
  if (naive_) {
    for (CommOp op : {CommOp::scatter, CommOp::broadcast, CommOp::gather}) {
      k.op = op;
      key(colorOf(k), op == CommOp::scatter     ? tr("scatter (tokens)")
                      : op == CommOp::broadcast ? tr("broadcast (parameters)")
                                                : tr("gather (gradients)"));
    }
  } else {
    k.phase = RingPhase::reduce_scatter;
    key(colorOf(k), zero_ > 0 ? tr("reduce-scatter (gradients)") : tr("reduce-scatter"));
    k.phase = RingPhase::all_gather;
    key(colorOf(k), zero_ > 0 ? tr("all-gather (parameters)") : tr("all-gather"));
  }
  p.setPen(palette().text().color());
  const int w = width() - 16;
  const int totals = wrappedHeight(fm, w, totalsCaption(), line);
  p.drawText(QRect(8, top + line + 2, w, totals), kWrap, totalsCaption());
  p.drawText(QRect(8, top + line + totals + 2, w, line), kWrap, skippedCaption());
}

}  // namespace shardscope::ui
