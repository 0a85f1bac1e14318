// SPDX-License-Identifier: GPL-3.0-or-later
// Painting and hovering of the pipeline timeline (pipeline_timeline_canvas.h).
#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "views/pipeline_timeline_canvas.h"

namespace shardscope::ui {

namespace {

// One colour per micro-batch (cycling); backward is a darker shade of it.
const QColor kPalette[] = {QColor(31, 119, 180),  QColor(255, 127, 14), QColor(44, 160, 44),   QColor(214, 39, 40),
                           QColor(148, 103, 189), QColor(140, 86, 75),  QColor(227, 119, 194), QColor(188, 189, 34),
                           QColor(23, 190, 207),  QColor(90, 90, 160)};
constexpr int kPaletteSize = static_cast<int>(sizeof(kPalette) / sizeof(kPalette[0]));
const QColor kBubble(222, 222, 222);
const QColor kActivation(25, 25, 25);                                   // a forward send → receive
const QColor kGradient(190, 0, 110);                                    // a backward send → receive
const QColor kBuckets[] = {QColor(0, 120, 120), QColor(60, 175, 165)};  // neighbouring buckets alternate
const QBrush kHatch(QColor(255, 255, 255, 200), Qt::BDiagPattern);
const QBrush kWeightStripes(QColor(255, 255, 255, 170), Qt::VerPattern);  // over a W box: B's colour, striped
const QColor kTensorParallel(250, 220, 30);  // a tp collective's transfer, on forward and backward colours alike
constexpr double kLaneShare = 0.3;  // of a row, for its communication lane

QColor boxColor(const TimelineBox& b) {
  const QColor c = kPalette[((b.micro_batch % kPaletteSize) + kPaletteSize) % kPaletteSize];
  return b.kind == ComputeKind::backward || b.kind == ComputeKind::weight_gradient ? c.darker(160) : c;
}

// A stage's later model chunks are outlined inside their boxes, one line style each (chunk 0 has none).
QPen chunkPen(int chunk) {
  static const Qt::PenStyle kStyles[] = {Qt::SolidLine, Qt::DashLine, Qt::DotLine, Qt::DashDotLine};
  return QPen(QColor(20, 20, 20), 2.0, kStyles[(chunk - 1) % 4]);
}

// "F3", "B3", "W3"; a later chunk's "F3.1" (the engine's notation, plan/pipeline_schedule.h).
QString boxText(const TimelineBox& b) {
  const QChar pass = b.kind == ComputeKind::forward    ? QLatin1Char('F')
                     : b.kind == ComputeKind::backward ? QLatin1Char('B')
                                                       : QLatin1Char('W');
  QString text = pass + QString::number(b.micro_batch);
  if (b.chunk > 0) text += QLatin1Char('.') + QString::number(b.chunk);
  return text;
}

bool isWhole(const TimelineBox& b) {
  return b.kind != ComputeKind::recompute;
}

void drawArrow(QPainter& p, const QLineF& line, const QColor& color, bool dashed = false) {
  p.setPen(QPen(color, 1.4, dashed ? Qt::DashLine : Qt::SolidLine));
  p.drawLine(line);
  p.setPen(QPen(color, 1.4));
  QLineF back(line.p2(), line.p1());  // the head's two sides, 25° off the shaft
  back.setLength(std::min(6.0, line.length()));
  QLineF left = back, right = back;
  left.setAngle(back.angle() + 25);
  right.setAngle(back.angle() - 25);
  p.setBrush(color);
  p.drawPolygon(QPolygonF{line.p2(), left.p2(), right.p2()});
  p.setBrush(Qt::NoBrush);
}

double distanceTo(const QLineF& line, QPointF pos) {
  const QPointF d = line.p2() - line.p1();
  const double len2 = QPointF::dotProduct(d, d);
  const double t = len2 > 0 ? std::clamp(QPointF::dotProduct(pos - line.p1(), d) / len2, 0.0, 1.0) : 0.0;
  const QPointF nearest = line.p1() + t * d;
  return std::hypot(pos.x() - nearest.x(), pos.y() - nearest.y());
}

// A legend entry: a filled swatch, or an arrow of `arrow` colour.
struct LegendEntry {
  QBrush brush;
  QString text;
  QColor arrow = Qt::transparent;
  int chunk = 0;        // > 0: an outline of that chunk's style
  bool dashed = false;  // the arrow dashed (a send between chunks)
};

}  // namespace

TimelineCanvas::TimelineCanvas(PipelineTimelineView* owner) : QWidget(owner), owner_(owner) {
  setMouseTracking(true);
  setMinimumSize(360, 160);
}

void TimelineCanvas::fit() {
  zoomed_ = false;
  update();
}

QRectF TimelineCanvas::plotRect() const {
  return QRectF(kLeft, kTop, width() - kLeft - kRight, height() - kTop - kBottom - (legend_rows_ - 1) * legend_row_h_);
}

QFont TimelineCanvas::smallFont() const {
  QFont small = font();
  small.setPointSizeF(small.pointSizeF() * 0.9);
  return small;
}

int TimelineCanvas::paintLegend(QPainter* p, double top) const {
  const QFontMetrics fm(smallFont());
  std::vector<LegendEntry> entries = {{kPalette[0], PipelineTimelineView::tr("forward (colour = micro-batch)")},
                                      {kPalette[0].darker(160), PipelineTimelineView::tr("backward")},
                                      {kHatch, PipelineTimelineView::tr("recompute (hatched)")},
                                      {kBubble, PipelineTimelineView::tr("bubble (idle)")}};
  const std::int64_t step = owner_->shownStep();
  int chunks = 1;
  bool weights = false, between = false;
  for (const TimelineBox& b : owner_->boxes(step)) {
    chunks = std::max(chunks, b.chunk + 1);
    weights = weights || b.kind == ComputeKind::weight_gradient;
  }
  for (const TimelineTransfer& t : owner_->transfers(step)) between = between || t.betweenChunks();
  if (weights)
    entries.insert(entries.begin() + 2, {kWeightStripes, PipelineTimelineView::tr("W: weight gradients (striped)")});
  for (int c = 1; c < chunks; ++c)
    entries.push_back({kPalette[0], PipelineTimelineView::tr("model chunk %1 (outlined)").arg(c), Qt::transparent, c});
  if (owner_->stages() > 1) {
    entries.push_back({Qt::NoBrush, PipelineTimelineView::tr("activation send → receive"), kActivation});
    entries.push_back({Qt::NoBrush, PipelineTimelineView::tr("gradient send → receive"), kGradient});
  }
  if (between)
    entries.push_back(
        {Qt::NoBrush, PipelineTimelineView::tr("send between model chunks (dashed)"), kActivation, 0, true});
  if (owner_->hasBucketLane())
    entries.push_back({kBuckets[0], PipelineTimelineView::tr("bucket all-reduce (communication stream)")});
  if (!owner_->tensorSpans(owner_->shownStep()).empty())
    entries.push_back({kTensorParallel, PipelineTimelineView::tr("tensor-parallel collective (inside F/B)")});
  double x = kLeft, y = top;
  int rows = 1;
  for (const LegendEntry& entry : entries) {
    const double w = 18 + fm.horizontalAdvance(entry.text);
    if (x > kLeft && x + w > width() - kRight) {  // the next row
      x = kLeft;
      y += fm.height() + 2;
      ++rows;
    }
    if (p != nullptr) {
      const QRectF swatch(x, y + 2, 14, fm.height() - 4);
      if (entry.arrow != Qt::transparent) {
        drawArrow(*p, QLineF(swatch.left(), swatch.center().y(), swatch.right(), swatch.center().y()), entry.arrow,
                  entry.dashed);
      } else {
        const Qt::BrushStyle style = entry.brush.style();
        if (style == Qt::BDiagPattern || style == Qt::VerPattern) p->fillRect(swatch, kPalette[0].darker(160));
        p->fillRect(swatch, entry.brush);
        if (entry.chunk > 0) {
          p->setPen(chunkPen(entry.chunk));
          p->drawRect(swatch.adjusted(1, 1, -1, -1));
        }
      }
      p->setPen(palette().text().color());
      p->drawText(QPointF(x + 18, y + fm.ascent()), entry.text);
    }
    x += w + 14;
  }
  return rows;
}

double TimelineCanvas::rowHeight() const {
  return plotRect().height() / owner_->stages();
}

QRectF TimelineCanvas::computeBand(int stage) const {
  const QRectF r = plotRect();
  const double h = rowHeight() * (owner_->hasBucketLane() ? 1.0 - kLaneShare : 1.0);
  return QRectF(r.left(), r.top() + rowHeight() * stage + 3, r.width(), h - 6);
}

QRectF TimelineCanvas::laneBand(int stage) const {
  const QRectF compute = computeBand(stage);
  return QRectF(compute.left(), compute.bottom() + 3, compute.width(), rowHeight() * kLaneShare - 3);
}

QRectF TimelineCanvas::boxRect(const TimelineBox& b) const {
  QRectF band = computeBand(b.stage);
  if (!isWhole(b)) band.setTop(band.center().y());  // recompute: the lower half of its backward box
  const double x0 = xOf(ms(b.start_ns) * 1e6), x1 = xOf(ms(b.end_ns) * 1e6);
  return QRectF(x0, band.top(), std::max(x1 - x0, 1.0), band.height());
}

QRectF TimelineCanvas::bucketRect(const TimelineBucketSpan& s) const {
  const QRectF lane = laneBand(s.stage);
  const double x0 = xOf(ms(s.start_ns) * 1e6), x1 = xOf(ms(s.end_ns) * 1e6);
  return QRectF(x0, lane.top(), std::max(x1 - x0, 2.0), lane.height());  // a fast link's transfer stays visible
}

// From the sender's row at the send to the receiver's row at the arrival, through the rows' edges nearer each
// other (a fifth of a row deep on each side), so the boxes' labels in the middle stay readable.
QLineF TimelineCanvas::arrowLine(const TimelineTransfer& t) const {
  const QRectF from = computeBand(t.src_stage), to = computeBand(t.dst_stage);
  const double inset = 0.2;
  const bool down = t.dst_stage > t.src_stage;  // a send between chunks goes up the rows as an activation
  const double y0 = down ? from.bottom() - inset * from.height() : from.top() + inset * from.height();
  const double y1 = down ? to.top() + inset * to.height() : to.bottom() - inset * to.height();
  return QLineF(xOf(ms(t.start_ns) * 1e6), y0, xOf(ms(t.end_ns) * 1e6), y1);
}

void TimelineCanvas::measureStep() {
  std::tie(origin_, end_) = owner_->stepExtent(owner_->shownStep());
}

// The step fills the width (and a 2% margin), or, on a shared time axis (setTimeSpan), its share of it.
void TimelineCanvas::updateWindow() {
  if (zoomed_) return;
  t0_ = 0;
  t1_ = std::max<double>(1.0, static_cast<double>(std::max(end_ - origin_, owner_->timeSpan())) * 1.02);
}

QRectF TimelineCanvas::stepRect() {
  measureStep();
  updateWindow();
  const QRectF r = plotRect();
  const double x0 = xOf(0), x1 = xOf(static_cast<double>(end_ - origin_));
  return QRectF(x0, r.top(), x1 - x0, rowHeight() * owner_->stages());
}

void TimelineCanvas::paintRows(QPainter& p) const {
  const int stages = owner_->stages();
  const bool lane = owner_->hasBucketLane();
  p.setPen(palette().text().color());
  for (int s = 0; s < stages; ++s) {
    const QRectF label(2, computeBand(s).top(), kLeft - 8, computeBand(s).height());
    const int rank = owner_->shownRank(s);
    p.setFont(font());
    p.drawText(label, Qt::AlignRight | Qt::AlignVCenter,
               owner_->compact() ? PipelineTimelineView::tr("stage %1").arg(s)  // one line in a short row
                                 : PipelineTimelineView::tr("stage %1\nrank %2").arg(s).arg(rank));
    if (!lane) continue;
    p.setFont(smallFont());
    p.drawText(QRectF(2, laneBand(s).top(), kLeft - 8, laneBand(s).height()), Qt::AlignRight | Qt::AlignVCenter,
               PipelineTimelineView::tr("all-reduce"));
  }
  if (owner_->boxes(owner_->shownStep()).empty()) return;
  // Everything between the step's first start and last end is bubble unless covered.
  const double bx0 = xOf(0), bx1 = xOf(static_cast<double>(end_ - origin_));
  for (int s = 0; s < stages; ++s) {
    const QRectF band = computeBand(s);
    p.fillRect(QRectF(bx0, band.top(), bx1 - bx0, band.height()), kBubble);
    if (lane) p.fillRect(QRectF(bx0, laneBand(s).top(), bx1 - bx0, laneBand(s).height()), palette().alternateBase());
  }
}

std::int64_t TimelineCanvas::cursor() const {
  const double f = owner_->replayFraction();
  if (f < 0) return INT64_MAX;
  return origin_ + static_cast<std::int64_t>(f * static_cast<double>(end_ - origin_));
}

QRectF TimelineCanvas::shownRect(QRectF rect, std::int64_t start_ns, std::int64_t end_ns) const {
  const std::int64_t at = cursor();
  if (start_ns > at) return {};
  if (end_ns > at) rect.setRight(std::max(rect.left() + 1.0, xOf(static_cast<double>(at - origin_))));
  return rect;
}

void TimelineCanvas::paintBoxes(QPainter& p) const {
  const auto& boxes = owner_->boxes(owner_->shownStep());
  const QFontMetrics fm(smallFont());
  for (const auto& b : boxes) {
    if (!isWhole(b)) continue;  // recomputes go on top, below
    const QRectF br = shownRect(boxRect(b), b.start_ns, b.end_ns);
    if (br.isEmpty()) continue;
    p.fillRect(br, boxColor(b));
    if (b.kind == ComputeKind::weight_gradient) p.fillRect(br, kWeightStripes);
    p.setPen(QPen(palette().base().color(), 1));
    p.drawRect(br);
    if (b.chunk > 0 && br.width() > 4) {
      p.setPen(chunkPen(b.chunk));
      p.drawRect(br.adjusted(1.5, 1.5, -1.5, -1.5));
    }
    const QString text = boxText(b);
    if (fm.horizontalAdvance(text) + 4 < br.width()) {
      p.setPen(Qt::white);
      p.drawText(br, Qt::AlignCenter, text);
    }
  }
  for (const auto& b : boxes)  // a recompute: white hatching over the lower half of its backward
    if (!isWhole(b)) p.fillRect(shownRect(boxRect(b), b.start_ns, b.end_ns), kHatch);
  // Tensor-parallel ring transfers: a yellow tick (at least 2 px) along the top of the box they ran in.
  for (const auto& t : owner_->tensorSpans(owner_->shownStep())) {
    const QRectF band = computeBand(t.stage);
    const double x0 = xOf(ms(t.start_ns) * 1e6), x1 = xOf(ms(t.end_ns) * 1e6);
    if (t.start_ns > cursor()) continue;
    p.fillRect(QRectF(x0, band.top() + 2, std::max(2.0, x1 - x0), band.height() * 0.2), kTensorParallel);
  }
}

void TimelineCanvas::paintBuckets(QPainter& p) const {
  const QFontMetrics fm(smallFont());
  for (const auto& s : owner_->bucketSpans(owner_->shownStep())) {
    const QRectF br = shownRect(bucketRect(s), s.start_ns, s.end_ns);
    if (br.isEmpty()) continue;
    p.fillRect(br, kBuckets[s.bucket % 2]);
    const QString text = QStringLiteral("b%1").arg(s.bucket);
    if (fm.horizontalAdvance(text) + 4 < br.width()) {
      p.setPen(Qt::white);
      p.drawText(br, Qt::AlignCenter, text);
    }
  }
}

void TimelineCanvas::paintArrows(QPainter& p) const {
  p.setRenderHint(QPainter::Antialiasing, true);
  const std::int64_t at = cursor();
  for (const auto& t : owner_->transfers(owner_->shownStep()))
    if (t.end_ns <= at)  // an arrow once its data has arrived
      drawArrow(p, arrowLine(t), t.forward() ? kActivation : kGradient, t.betweenChunks());
  p.setRenderHint(QPainter::Antialiasing, false);
}

void TimelineCanvas::paintAxis(QPainter& p) const {
  const QRectF r = plotRect();
  const QFontMetrics fm(smallFont());
  p.setPen(palette().mid().color());
  for (int s = 0; s <= owner_->stages(); ++s) {
    const double y = r.top() + rowHeight() * s;
    p.drawLine(QPointF(r.left(), y), QPointF(r.right(), y));
  }
  p.setPen(palette().text().color());
  const double spanMs = (t1_ - t0_) / 1e6;
  const double spacing = owner_->compact() ? 60.0 : 90.0;  // a compact timeline (the Schedules tab) still gets a scale
  const double raw = spanMs / std::max(1.0, r.width() / spacing);
  const double mag = std::pow(10.0, std::floor(std::log10(std::max(raw, 1e-9))));
  const double tick = raw / mag < 2 ? 2 * mag : raw / mag < 5 ? 5 * mag : 10 * mag;
  for (double at = std::ceil(t0_ / 1e6 / tick) * tick; at <= t1_ / 1e6; at += tick) {
    const double x = xOf(at * 1e6);
    p.drawLine(QPointF(x, r.bottom()), QPointF(x, r.bottom() + 4));
    p.drawText(QRectF(x - 45, r.bottom() + 4, 90, fm.height()), Qt::AlignHCenter | Qt::AlignTop,
               PipelineTimelineView::tr("%1 ms").arg(at, 0, 'g', 4));
  }
}

void TimelineCanvas::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  legend_row_h_ = QFontMetrics(smallFont()).height() + 2;
  legend_rows_ = owner_->compact() ? 0 : paintLegend(nullptr, 0);  // before plotRect(), which leaves room for it
  measureStep();
  updateWindow();
  paintRows(p);
  p.save();
  p.setClipRect(plotRect());
  p.setFont(smallFont());
  paintBoxes(p);
  paintBuckets(p);
  paintArrows(p);
  if (owner_->replayFraction() >= 0) {  // the replay's cursor
    const double x = xOf(static_cast<double>(cursor() - origin_));
    p.setPen(QPen(QColor(220, 0, 0), 2));
    p.drawLine(QPointF(x, plotRect().top()), QPointF(x, plotRect().bottom()));
  }
  p.restore();
  p.setFont(smallFont());  // restore() brought back the full-size font
  paintAxis(p);
  if (!owner_->compact()) paintLegend(&p, plotRect().bottom() + 6 + QFontMetrics(smallFont()).height());
  if (owner_->boxes(owner_->shownStep()).empty())
    p.drawText(plotRect(), Qt::AlignCenter, PipelineTimelineView::tr("No step yet: press Run."));
}

void TimelineCanvas::wheelEvent(QWheelEvent* e) {
  const double factor = std::pow(0.85, e->angleDelta().y() / 120.0);
  const double at = tOf(e->position().x());
  const double width = std::clamp((t1_ - t0_) * factor, 1e3, 1e13);
  const double frac = (at - t0_) / (t1_ - t0_);
  t0_ = at - frac * width;
  t1_ = t0_ + width;
  zoomed_ = true;
  update();
  e->accept();
}

void TimelineCanvas::mousePressEvent(QMouseEvent* e) {
  drag_x_ = e->position().x();
  dragging_ = true;
}

void TimelineCanvas::mouseMoveEvent(QMouseEvent* e) {
  if (!dragging_) return;
  const double dt = (e->position().x() - drag_x_) / plotRect().width() * (t1_ - t0_);
  drag_x_ = e->position().x();
  t0_ -= dt;
  t1_ -= dt;
  zoomed_ = true;
  update();
}

QString TimelineCanvas::boxToolTip(const TimelineBox& b) const {
  QString pass = b.kind == ComputeKind::forward    ? PipelineTimelineView::tr("forward")
                 : b.kind == ComputeKind::backward ? PipelineTimelineView::tr("backward")
                 : b.kind == ComputeKind::weight_gradient
                     ? PipelineTimelineView::tr("weight gradients (W)")
                     : PipelineTimelineView::tr("recompute of layer %1").arg(b.layer);
  if (b.chunk > 0) pass += QStringLiteral(", ") + PipelineTimelineView::tr("model chunk %1").arg(b.chunk);
  return PipelineTimelineView::tr("stage %1, rank %2\nmicro-batch %3, %4\nstart %5 ms, duration %6 ms")
      .arg(b.stage)
      .arg(b.rank)
      .arg(b.micro_batch)
      .arg(pass)
      .arg(ms(b.start_ns), 0, 'f', 2)
      .arg(static_cast<double>(b.end_ns - b.start_ns) / 1e6, 0, 'f', 2);
}

QString TimelineCanvas::transferToolTip(const TimelineTransfer& t) const {
  const QString what = t.forward() ? PipelineTimelineView::tr("activation of micro-batch %1").arg(t.micro_batch)
                                   : PipelineTimelineView::tr("gradient of micro-batch %1").arg(t.micro_batch);
  return PipelineTimelineView::tr("%1\nstage %2 (rank %3) → stage %4 (rank %5), %6 bytes\nsent %7 ms, arrived %8 ms")
      .arg(what)
      .arg(t.src_stage)
      .arg(t.src_rank)
      .arg(t.dst_stage)
      .arg(t.dst_rank)
      .arg(t.bytes)
      .arg(ms(t.start_ns), 0, 'f', 3)
      .arg(ms(t.end_ns), 0, 'f', 3);
}

QString TimelineCanvas::bucketToolTip(const TimelineBucketSpan& s) const {
  return PipelineTimelineView::tr(
             "bucket %1 all-reduce, rank %2\none ring transfer of %3 bytes\nstart %4 ms, duration %5 ms")
      .arg(s.bucket)
      .arg(s.rank)
      .arg(s.bytes)
      .arg(ms(s.start_ns), 0, 'f', 3)
      .arg(static_cast<double>(s.end_ns - s.start_ns) / 1e6, 0, 'f', 3);
}

// An arrow within 4 px wins over the boxes under it; a recompute (drawn on top) wins over its backward.
QString TimelineCanvas::toolTipAt(QPointF pos) const {
  const std::int64_t step = owner_->shownStep();
  for (const auto& t : owner_->transfers(step))
    if (distanceTo(arrowLine(t), pos) <= 4) return transferToolTip(t);
  for (const auto& s : owner_->bucketSpans(step))
    if (bucketRect(s).contains(pos)) return bucketToolTip(s);
  const TimelineBox* hit = nullptr;
  for (const auto& b : owner_->boxes(step))
    if (boxRect(b).contains(pos) && (hit == nullptr || !isWhole(b))) hit = &b;
  return hit != nullptr ? boxToolTip(*hit) : QString();
}

bool TimelineCanvas::event(QEvent* e) {
  if (e->type() != QEvent::ToolTip) return QWidget::event(e);
  auto* help = static_cast<QHelpEvent*>(e);
  measureStep();
  const QString text = toolTipAt(help->pos());
  if (text.isEmpty()) {
    QToolTip::hideText();
    e->ignore();
  } else {
    QToolTip::showText(help->globalPos(), text, this);
  }
  return true;
}

}  // namespace shardscope::ui
