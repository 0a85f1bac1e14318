// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/pipeline_timeline.h"

#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QSpinBox>
#include <QToolTip>
#include <QVBoxLayout>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>
#include <utility>

#include "parallel/pipeline_schedule.h"

namespace shardscope::ui {

namespace {

// One colour per micro-batch (cycling); backward is a darker shade of it.
const QColor kPalette[] = {QColor(31, 119, 180), QColor(255, 127, 14), QColor(44, 160, 44),  QColor(214, 39, 40),
                           QColor(148, 103, 189), QColor(140, 86, 75), QColor(227, 119, 194), QColor(188, 189, 34),
                           QColor(23, 190, 207),  QColor(90, 90, 160)};
constexpr int kPaletteSize = static_cast<int>(sizeof(kPalette) / sizeof(kPalette[0]));
const QColor kBubble(222, 222, 222);

QColor boxColor(const TimelineBox& b) {
  const QColor c = kPalette[((b.micro_batch % kPaletteSize) + kPaletteSize) % kPaletteSize];
  return b.kind == ComputeKind::backward ? c.darker(160) : c;
}

bool isWhole(const TimelineBox& b) { return b.kind != ComputeKind::recompute; }

}  // namespace

// The painted part: time axis, stage rows, boxes. Keeps the visible time window.
class TimelineCanvas : public QWidget {
 public:
  explicit TimelineCanvas(PipelineTimelineView* owner) : QWidget(owner), owner_(owner) {
    setMouseTracking(true);
    setMinimumSize(360, 160);
  }
  void fit() { zoomed_ = false; update(); }

 protected:
  void paintEvent(QPaintEvent*) override;
  void wheelEvent(QWheelEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override { drag_x_ = e->position().x(); dragging_ = true; }
  void mouseReleaseEvent(QMouseEvent*) override { dragging_ = false; }
  void mouseDoubleClickEvent(QMouseEvent*) override { fit(); }
  void mouseMoveEvent(QMouseEvent* e) override;
  bool event(QEvent* e) override;

 private:
  static constexpr int kLeft = 92, kTop = 8, kBottom = 44, kRight = 12;
  // Below the rows: the time axis, then the legend in legend_rows_ rows (more than one where the canvas is narrow).
  QRectF plotRect() const {
    return QRectF(kLeft, kTop, width() - kLeft - kRight, height() - kTop - kBottom - (legend_rows_ - 1) * legend_row_h_);
  }
  QFont smallFont() const;
  // Lays the legend out from (kLeft, top), wrapping at the right margin; paints it when p is given. Returns its rows.
  int paintLegend(QPainter* p, double top) const;
  double xOf(double t) const { return plotRect().left() + (t - t0_) / (t1_ - t0_) * plotRect().width(); }
  double tOf(double x) const { return t0_ + (x - plotRect().left()) / plotRect().width() * (t1_ - t0_); }
  QRectF boxRect(const TimelineBox& b, std::int64_t origin) const;
  void updateWindow(std::int64_t makespan);
  const TimelineBox* boxAt(QPointF p) const;

  PipelineTimelineView* owner_;
  double t0_ = 0, t1_ = 1;  // visible window, ns since the step's first span
  bool zoomed_ = false, dragging_ = false;
  double drag_x_ = 0;
  int legend_rows_ = 1, legend_row_h_ = 0;  // measured at each paint
};

QFont TimelineCanvas::smallFont() const {
  QFont small = font();
  small.setPointSizeF(small.pointSizeF() * 0.9);
  return small;
}

int TimelineCanvas::paintLegend(QPainter* p, double top) const {
  const QFontMetrics fm(smallFont());
  const QBrush hatch(QColor(255, 255, 255, 200), Qt::BDiagPattern);
  const std::pair<QBrush, QString> entries[] = {
      {kPalette[0], PipelineTimelineView::tr("forward (colour = micro-batch)")},
      {kPalette[0].darker(160), PipelineTimelineView::tr("backward")},
      {hatch, PipelineTimelineView::tr("recompute (hatched)")},
      {kBubble, PipelineTimelineView::tr("bubble (idle)")}};
  double x = kLeft, y = top;
  int rows = 1;
  for (const auto& [brush, text] : entries) {
    const double w = 18 + fm.horizontalAdvance(text);
    if (x > kLeft && x + w > width() - kRight) {  // the next row
      x = kLeft;
      y += fm.height() + 2;
      ++rows;
    }
    if (p != nullptr) {
      const QRectF swatch(x, y + 2, 14, fm.height() - 4);
      if (brush.style() == Qt::BDiagPattern) p->fillRect(swatch, kPalette[0].darker(160));  // hatching over a backward
      p->fillRect(swatch, brush);
      p->drawText(QPointF(x + 18, y + fm.ascent()), text);
    }
    x += w + 14;
  }
  return rows;
}

void TimelineCanvas::updateWindow(std::int64_t makespan) {
  if (zoomed_) return;
  t0_ = 0;
  t1_ = std::max<double>(1.0, static_cast<double>(makespan) * 1.02);
}

QRectF TimelineCanvas::boxRect(const TimelineBox& b, std::int64_t origin) const {
  const QRectF r = plotRect();
  const double rowH = r.height() / owner_->grid_.pp();
  const double y = r.top() + rowH * b.stage + 3;
  double h = rowH - 6;
  double top = y;
  if (!isWhole(b)) { top = y + h * 0.5; h *= 0.5; }  // recompute: the lower half of its backward box
  const double x0 = xOf(static_cast<double>(b.start_ns - origin)), x1 = xOf(static_cast<double>(b.end_ns - origin));
  return QRectF(x0, top, std::max(x1 - x0, 1.0), h);
}

void TimelineCanvas::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  legend_row_h_ = QFontMetrics(smallFont()).height() + 2;
  legend_rows_ = paintLegend(nullptr, 0);  // before plotRect(), which leaves room for it
  const QRectF r = plotRect();
  const int stages = owner_->grid_.pp();
  const double rowH = r.height() / stages;
  const std::int64_t step = owner_->shownStep();
  const auto& boxes = owner_->boxes(step);
  std::int64_t origin = 0, end = 0;
  if (!boxes.empty()) {
    origin = boxes.front().start_ns;
    end = boxes.front().end_ns;
    for (const auto& b : boxes) { origin = std::min(origin, b.start_ns); end = std::max(end, b.end_ns); }
  }
  updateWindow(end - origin);
  p.setPen(palette().text().color());
  for (int s = 0; s < stages; ++s) {
    const QRectF label(2, r.top() + rowH * s, kLeft - 8, rowH);
    p.drawText(label, Qt::AlignRight | Qt::AlignVCenter,
               PipelineTimelineView::tr("stage %1\nrank %2").arg(s).arg(owner_->grid_.rank_at(s, 0)));
  }
  p.save();
  p.setClipRect(r);
  if (!boxes.empty()) {  // everything between the step's first start and last end is bubble unless covered
    const double bx0 = xOf(0), bx1 = xOf(static_cast<double>(end - origin));
    for (int s = 0; s < stages; ++s)
      p.fillRect(QRectF(bx0, r.top() + rowH * s + 3, bx1 - bx0, rowH - 6), kBubble);
  }
  const QFont small = smallFont();
  p.setFont(small);
  const QFontMetrics fm(small);
  for (const auto& b : boxes) {
    if (!isWhole(b)) continue;  // recomputes go on top, below
    const QRectF br = boxRect(b, origin);
    p.fillRect(br, boxColor(b));
    p.setPen(QPen(palette().base().color(), 1));
    p.drawRect(br);
    const QString text = (b.kind == ComputeKind::forward ? QStringLiteral("F%1") : QStringLiteral("B%1")).arg(b.micro_batch);
    if (fm.horizontalAdvance(text) + 4 < br.width()) {
      p.setPen(Qt::white);
      p.drawText(br, Qt::AlignCenter, text);
    }
  }
  for (const auto& b : boxes)  // a recompute: white hatching over the lower half of its backward
    if (!isWhole(b)) p.fillRect(boxRect(b, origin), QBrush(QColor(255, 255, 255, 200), Qt::BDiagPattern));
  p.restore();
  p.setFont(small);  // restore() brought back the full-size font
  // Row separators, the time axis and a legend.
  p.setPen(palette().mid().color());
  for (int s = 0; s <= stages; ++s) p.drawLine(QPointF(r.left(), r.top() + rowH * s), QPointF(r.right(), r.top() + rowH * s));
  p.setPen(palette().text().color());
  const double spanMs = (t1_ - t0_) / 1e6;
  const double raw = spanMs / std::max(1.0, r.width() / 90.0);
  const double mag = std::pow(10.0, std::floor(std::log10(std::max(raw, 1e-9))));
  const double tick = raw / mag < 2 ? 2 * mag : raw / mag < 5 ? 5 * mag : 10 * mag;
  for (double ms = std::ceil(t0_ / 1e6 / tick) * tick; ms <= t1_ / 1e6; ms += tick) {
    const double x = xOf(ms * 1e6);
    p.drawLine(QPointF(x, r.bottom()), QPointF(x, r.bottom() + 4));
    p.drawText(QRectF(x - 45, r.bottom() + 4, 90, fm.height()), Qt::AlignHCenter | Qt::AlignTop,
               PipelineTimelineView::tr("%1 ms").arg(ms, 0, 'g', 4));
  }
  paintLegend(&p, r.bottom() + 6 + fm.height());
  if (boxes.empty()) p.drawText(r, Qt::AlignCenter, PipelineTimelineView::tr("No pipeline step yet: press Run."));
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

void TimelineCanvas::mouseMoveEvent(QMouseEvent* e) {
  if (!dragging_) return;
  const double dt = (e->position().x() - drag_x_) / plotRect().width() * (t1_ - t0_);
  drag_x_ = e->position().x();
  t0_ -= dt;
  t1_ -= dt;
  zoomed_ = true;
  update();
}

const TimelineBox* TimelineCanvas::boxAt(QPointF pos) const {
  const auto& boxes = owner_->boxes(owner_->shownStep());
  if (boxes.empty()) return nullptr;
  std::int64_t origin = boxes.front().start_ns;
  for (const auto& b : boxes) origin = std::min(origin, b.start_ns);
  const TimelineBox* hit = nullptr;
  for (const auto& b : boxes)  // a recompute (drawn on top) wins over its backward
    if (boxRect(b, origin).contains(pos) && (hit == nullptr || !isWhole(b))) hit = &b;
  return hit;
}

bool TimelineCanvas::event(QEvent* e) {
  if (e->type() != QEvent::ToolTip) return QWidget::event(e);
  auto* help = static_cast<QHelpEvent*>(e);
  const TimelineBox* b = boxAt(help->pos());
  if (b == nullptr) {
    QToolTip::hideText();
    e->ignore();
    return true;
  }
  const QString pass = b->kind == ComputeKind::forward    ? PipelineTimelineView::tr("forward")
                       : b->kind == ComputeKind::backward ? PipelineTimelineView::tr("backward")
                                                          : PipelineTimelineView::tr("recompute of layer %1").arg(b->layer);
  const auto& boxes = owner_->boxes(owner_->shownStep());
  std::int64_t origin = boxes.front().start_ns;
  for (const auto& x : boxes) origin = std::min(origin, x.start_ns);
  QToolTip::showText(help->globalPos(),
                     PipelineTimelineView::tr("stage %1, rank %2\nmicro-batch %3, %4\nstart %5 ms, duration %6 ms")
                         .arg(b->stage).arg(b->rank).arg(b->micro_batch).arg(pass)
                         .arg(static_cast<double>(b->start_ns - origin) / 1e6, 0, 'f', 2)
                         .arg(static_cast<double>(b->end_ns - b->start_ns) / 1e6, 0, 'f', 2),
                     this);
  return true;
}

PipelineTimelineView::PipelineTimelineView(QWidget* parent)
    : QWidget(parent),
      canvas_(new TimelineCanvas(this)),
      step_box_(new QSpinBox),
      bubble_label_(new QLabel),
      step_label_(new QLabel) {
  setObjectName(QStringLiteral("pipeline_timeline"));
  step_box_->setObjectName(QStringLiteral("timeline_step"));
  step_box_->setRange(0, 0);
  bubble_label_->setObjectName(QStringLiteral("bubble"));
  bubble_label_->setWordWrap(true);  // the accumulation line is long; the view must stay narrow (1280 px screens)
  auto* header = new QHBoxLayout;
  header->addWidget(step_label_);
  header->addWidget(step_box_);
  header->addSpacing(12);
  header->addWidget(bubble_label_, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addLayout(header);
  layout->addWidget(canvas_, 1);
  connect(step_box_, &QSpinBox::valueChanged, this, [this] {
    canvas_->fit();
    updateHeader();
  });
  retranslate();
}

void PipelineTimelineView::retranslate() {
  step_label_->setText(tr("Step:"));
  step_box_->setSpecialValueText(tr("last completed"));
  step_box_->setToolTip(tr("The optimizer step to draw"));
  updateHeader();
  canvas_->update();  // its rows, legend and hover text are drawn with tr() on paint
}

void PipelineTimelineView::changeEvent(QEvent* event) {
  if (event->type() == QEvent::LanguageChange) retranslate();
  QWidget::changeEvent(event);
}

PipelineTimelineView::~PipelineTimelineView() = default;

void PipelineTimelineView::reset(const RunConfig& config) {
  grid_ = Grid(std::max(config.dp, 1), std::max(config.pp, 1));
  micro_batches_ = std::max(config.micro_batches, 1);
  accumulation_ = std::max(config.accum, 1);
  steps_.clear();
  last_completed_ = last_seen_ = 0;
  step_box_->setRange(0, 0);
  canvas_->fit();
  dirty_ = true;
  refresh();
}

void PipelineTimelineView::consume(const std::vector<Event>& events) {
  for (const Event& e : events) {
    if (e.kind == EventKind::step_metrics) last_completed_ = std::max(last_completed_, e.step);
    if (e.kind != EventKind::compute_span || e.compute == ComputeKind::optimizer) continue;
    // Stage rows show only data-parallel rank 0 of each stage (the event carries its stage, the grid its dp
    // rank): its replicas run the same schedule, and one row per stage keeps the boxes readable.
    if (grid_.dp_rank_of(e.rank) != 0) continue;
    const bool whole = e.layer == -1 && e.compute != ComputeKind::recompute;
    if (!whole && e.compute != ComputeKind::recompute) continue;  // per-layer forward/backward spans
    steps_[e.step].push_back(TimelineBox{e.stage, e.rank, e.micro_batch, e.compute, e.layer, e.start_ns, e.end_ns});
    last_seen_ = std::max(last_seen_, e.step);
    dirty_ = true;
  }
}

void PipelineTimelineView::refresh() {
  if (!dirty_) return;
  dirty_ = false;
  step_box_->setMaximum(static_cast<int>(std::max(last_seen_, last_completed_)));
  updateHeader();
  canvas_->update();
}

const std::vector<TimelineBox>& PipelineTimelineView::boxes(std::int64_t step) const {
  static const std::vector<TimelineBox> kNone;
  const auto it = steps_.find(step);
  return it == steps_.end() ? kNone : it->second;
}

double PipelineTimelineView::measured_bubble(std::int64_t step) const {
  const auto& bs = boxes(step);
  std::int64_t first = 0, last = 0, busy = 0;
  bool any = false;
  for (const auto& b : bs) {
    if (!isWhole(b)) continue;  // a recompute lies inside its backward
    first = any ? std::min(first, b.start_ns) : b.start_ns;
    last = any ? std::max(last, b.end_ns) : b.end_ns;
    any = true;
    busy += b.end_ns - b.start_ns;
  }
  if (!any || last <= first) return 0.0;
  const double stages = grid_.pp();
  return std::clamp(1.0 - static_cast<double>(busy) / (stages * static_cast<double>(last - first)), 0.0, 1.0);
}

double PipelineTimelineView::formula_bubble() const {
  return gpipe_bubble_fraction(grid_.pp(), micro_batches_);
}

double PipelineTimelineView::one_flush_bubble() const {
  return gpipe_bubble_fraction(grid_.pp(), micro_batches_ * accumulation_);
}

QString PipelineTimelineView::bubbleText(std::int64_t step) const {
  const QString formula = tr("(p−1)/(m+p−1) = (%1−1)/(%2+%1−1) = %3%")
                              .arg(grid_.pp())
                              .arg(micro_batches_)
                              .arg(std::lround(formula_bubble() * 100));
  const QString measured = boxes(step).empty() ? tr("bubble measured –")
                                               : tr("bubble measured %1%").arg(std::lround(measured_bubble(step) * 100));
  if (accumulation_ <= 1 || grid_.pp() <= 1) return measured + QStringLiteral(" · ") + formula;
  // Accumulation: k flushes of m micro-batches, each with its own fill and drain (see formula_bubble).
  const int all = accumulation_ * micro_batches_;
  return tr("%1 · per flush %2 · accumulation: k = %3 flushes of m = %4 micro-batches (F0–F%5), each fills and "
            "drains the pipeline; one flush of all %6 would idle %7%")
      .arg(measured, formula, QString::number(accumulation_), QString::number(micro_batches_),
           QString::number(all - 1), QString::number(all), QString::number(std::lround(one_flush_bubble() * 100)));
}

std::int64_t PipelineTimelineView::shownStep() const {
  if (step_box_->value() > 0) return step_box_->value();
  return last_completed_ > 0 && steps_.count(last_completed_) != 0 ? last_completed_ : last_seen_;
}

void PipelineTimelineView::updateHeader() {
  const std::int64_t step = shownStep();
  bubble_label_->setText(step > 0 ? tr("Step %1: %2").arg(step).arg(bubbleText(step)) : bubbleText(step));
}

}  // namespace shardscope::ui
