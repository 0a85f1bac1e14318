// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/rank_waits_view.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QPainter>
#include <QSpinBox>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>

namespace shardscope::ui {

// ---- The model ----

void WaitsModel::reset(const RunPlan& run) {
  const RunConfig& config = run.config();
  ranks_ = run.sharding().grid().world_size();
  slow_rank_ = config.slow_rank;
  slow_factor_ = config.slow_factor;
  steps_.clear();
  waits_.clear();
  last_completed_ = 0;
  failure_.reset();
}

void WaitsModel::consume(const std::vector<Event>& events) {
  for (const Event& e : events) {
    if (e.kind == EventKind::step_metrics) last_completed_ = std::max(last_completed_, e.step);
    if (e.kind == EventKind::error && !failure_) {
      failure_ = WaitsFailure{e.rank, e.step, e.start_ns, std::string(e.text_view())};
    }
    const bool compute = e.kind == EventKind::compute_span && e.layer < 0;
    if ((!compute && e.kind != EventKind::wait_span) || e.step <= 0) continue;
    WaitsBox box{e.rank, !compute, e.src, e.compute, e.op, e.start_ns, e.end_ns};
    steps_[e.step].push_back(box);
    if (!compute) waits_[e.step].add(e);
    while (static_cast<std::int64_t>(steps_.size()) > kKeptSteps) {
      waits_.erase(steps_.begin()->first);
      steps_.erase(steps_.begin());
    }
  }
}

const std::vector<WaitsBox>& WaitsModel::boxes(std::int64_t step) const {
  static const std::vector<WaitsBox> none;
  const auto it = steps_.find(step);
  return it == steps_.end() ? none : it->second;
}

RankWaits WaitsModel::waits(std::int64_t step) const {
  const auto it = waits_.find(step);
  return it == waits_.end() ? RankWaits{} : it->second;
}

// ---- The canvas ----

namespace {
const QColor kForward(120, 170, 220);
const QColor kBackward(40, 90, 160);
const QColor kOptimizer(70, 160, 90);
const QColor kRecompute(150, 110, 190);
const QColor kWeightGradient(90, 140, 200);  // W of a zero-bubble schedule
const QColor kWait(214, 39, 40, 190);
const QColor kFailed(200, 0, 0);

QColor computeColor(ComputeKind kind) {
  switch (kind) {
    case ComputeKind::forward:
      return kForward;
    case ComputeKind::backward:
      return kBackward;
    case ComputeKind::recompute:
      return kRecompute;
    case ComputeKind::optimizer:
      return kOptimizer;
    case ComputeKind::weight_gradient:
      return kWeightGradient;
  }
  return kForward;
}
}  // namespace

class WaitsCanvas : public QWidget {
 public:
  explicit WaitsCanvas(WaitsView* owner) : QWidget(owner), owner_(owner) {
    setMouseTracking(true);
    setMinimumHeight(160);
  }

 protected:
  void paintEvent(QPaintEvent*) override;
  bool event(QEvent* e) override;

 private:
  static constexpr int kTop = 6, kRight = 28, kAxis = 22, kLegend = 22;
  // Room for the widest rank label ("rank 3 (slow)").
  int left() const {
    return fontMetrics().horizontalAdvance(WaitsView::tr("rank %1 (slow)").arg(owner_->model().ranks())) + 12;
  }
  QRectF plot() const { return QRectF(left(), kTop, width() - left() - kRight, height() - kTop - kAxis - kLegend); }
  double rowHeight() const { return plot().height() / std::max(1, owner_->model().ranks()); }
  QRectF boxRect(const WaitsBox& b) const;
  void measure();
  void paintRows(QPainter& p) const;
  void paintBoxes(QPainter& p) const;
  void paintAxisAndLegend(QPainter& p) const;
  QString toolTipAt(QPointF pos) const;

  WaitsView* owner_;
  std::int64_t origin_ = 0, end_ = 1;
};

void WaitsCanvas::measure() {
  const std::vector<WaitsBox>& boxes = owner_->model().boxes(owner_->shownStep());
  origin_ = end_ = 0;
  for (const WaitsBox& b : boxes) {
    if (origin_ == 0 || b.start_ns < origin_) origin_ = b.start_ns;
    end_ = std::max(end_, b.end_ns);
  }
  end_ = std::max(end_, origin_ + 1);
}

QRectF WaitsCanvas::boxRect(const WaitsBox& b) const {
  const QRectF r = plot();
  const double scale = r.width() / static_cast<double>(end_ - origin_);
  const double x0 = r.left() + static_cast<double>(b.start_ns - origin_) * scale;
  const double x1 = r.left() + static_cast<double>(b.end_ns - origin_) * scale;
  // A row: the compute stream's spans above, the waits (either stream's) in a lane below.
  const double h = rowHeight();
  const double top = r.top() + b.rank * h + (b.wait ? h * 0.55 : h * 0.1);
  return QRectF(x0, top, std::max(1.0, x1 - x0), b.wait ? h * 0.35 : h * 0.4);
}

void WaitsCanvas::paintRows(QPainter& p) const {
  const QRectF r = plot();
  const double h = rowHeight();
  const int slow = owner_->model().slowRank();
  for (int rank = 0; rank < owner_->model().ranks(); ++rank) {
    const QRectF row(0, r.top() + rank * h, r.left() - 6, h);
    p.setPen(rank == slow ? kFailed : palette().text().color());
    p.drawText(row, Qt::AlignRight | Qt::AlignVCenter,
               rank == slow ? WaitsView::tr("rank %1 (slow)").arg(rank) : WaitsView::tr("rank %1").arg(rank));
    p.setPen(palette().mid().color());
    p.drawLine(QPointF(r.left(), r.top() + (rank + 1) * h), QPointF(r.right(), r.top() + (rank + 1) * h));
  }
}

void WaitsCanvas::paintBoxes(QPainter& p) const {
  const QBrush hatch(QColor(255, 255, 255, 160), Qt::BDiagPattern);
  for (const WaitsBox& b : owner_->model().boxes(owner_->shownStep())) {
    const QRectF box = boxRect(b);
    if (!b.wait) {
      p.fillRect(box, computeColor(b.kind));
      continue;
    }
    p.fillRect(box, kWait);
    p.fillRect(box, hatch);
    if (box.width() > 28 && box.height() > 10) {  // whom it waited for
      p.setPen(Qt::white);
      p.drawText(box, Qt::AlignCenter, QStringLiteral("→ r%1").arg(b.culprit));
    }
  }
  const auto& failure = owner_->model().failure();
  if (failure && failure->step == owner_->shownStep() && end_ > origin_) {
    const QRectF r = plot();
    const double x = r.left() + static_cast<double>(std::clamp(failure->at_ns, origin_, end_) - origin_) /
                                    static_cast<double>(end_ - origin_) * r.width();
    const double y = r.top() + (failure->rank + 0.5) * rowHeight();
    p.setPen(QPen(kFailed, 3));
    p.drawLine(QPointF(x - 7, y - 7), QPointF(x + 7, y + 7));
    p.drawLine(QPointF(x - 7, y + 7), QPointF(x + 7, y - 7));
  }
}

void WaitsCanvas::paintAxisAndLegend(QPainter& p) const {
  const QRectF r = plot();
  p.setPen(palette().text().color());
  p.drawLine(r.bottomLeft(), r.bottomRight());
  const double total_ms = static_cast<double>(end_ - origin_) / 1e6;
  for (int i = 0; i <= 4; ++i) {
    const double x = r.left() + r.width() * i / 4.0;
    p.drawLine(QPointF(x, r.bottom()), QPointF(x, r.bottom() + 4));
    const int decimals = total_ms < 0.1 ? 3 : total_ms < 10 ? 2 : 1;
    const QString label = QStringLiteral("%1 ms").arg(total_ms * i / 4.0, 0, 'f', decimals);
    const QRectF box = i == 4 ? QRectF(x - 80, r.bottom() + 4, 80 + kRight, kAxis - 4)  // the last one ends at the edge
                              : QRectF(x - 40, r.bottom() + 4, 80, kAxis - 4);
    p.drawText(box, (i == 4 ? Qt::AlignRight : Qt::AlignHCenter) | Qt::AlignTop, label);
  }
  const struct {
    QColor color;
    QString text;
  } legend[] = {{kForward, WaitsView::tr("forward")},
                {kBackward, WaitsView::tr("backward")},
                {kOptimizer, WaitsView::tr("optimizer")},
                {kWait, WaitsView::tr("waiting (→ r: for that rank)")}};
  double x = r.left();
  const double y = r.bottom() + kAxis + 4;
  for (const auto& entry : legend) {
    p.fillRect(QRectF(x, y + 2, 12, 12), entry.color);
    p.setPen(palette().text().color());
    const double w = p.fontMetrics().horizontalAdvance(entry.text);
    p.drawText(QRectF(x + 16, y, w + 4, 16), Qt::AlignLeft | Qt::AlignVCenter, entry.text);
    x += w + 34;
  }
}

void WaitsCanvas::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  measure();
  paintRows(p);
  paintBoxes(p);
  paintAxisAndLegend(p);
}

QString WaitsCanvas::toolTipAt(QPointF pos) const {
  for (const WaitsBox& b : owner_->model().boxes(owner_->shownStep())) {
    if (!boxRect(b).adjusted(-1, 0, 1, 0).contains(pos)) continue;
    const double ms = static_cast<double>(b.end_ns - b.start_ns) / 1e6;
    if (b.wait)
      return WaitsView::tr("rank %1 waited %2 ms for rank %3 (%4)")
          .arg(b.rank)
          .arg(ms, 0, 'f', 2)
          .arg(b.culprit)
          .arg(QString::fromUtf8(comm_op_name(b.op).data()));
    return WaitsView::tr("rank %1: %2, %3 ms")
        .arg(b.rank)
        .arg(QString::fromUtf8(compute_kind_name(b.kind).data()))
        .arg(ms, 0, 'f', 2);
  }
  return {};
}

bool WaitsCanvas::event(QEvent* e) {
  if (e->type() != QEvent::ToolTip) return QWidget::event(e);
  auto* help = static_cast<QHelpEvent*>(e);
  const QString text = toolTipAt(help->pos());
  if (text.isEmpty())
    QToolTip::hideText();
  else
    QToolTip::showText(help->globalPos(), text, this);
  return true;
}

// ---- The view ----

WaitsView::WaitsView(QWidget* parent)
    : QWidget(parent),
      canvas_(new WaitsCanvas(this)),
      header_(new QLabel),
      step_label_(new QLabel),
      step_box_(new QSpinBox) {
  setObjectName(QStringLiteral("waitsView"));
  header_->setObjectName(QStringLiteral("waitsHeader"));
  header_->setWordWrap(true);
  step_box_->setObjectName(QStringLiteral("waits_step"));
  step_box_->setRange(0, 0);
  auto* pickers = new QHBoxLayout;
  pickers->addWidget(step_label_);
  pickers->addWidget(step_box_);
  pickers->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addLayout(pickers);
  layout->addWidget(header_);
  layout->addWidget(canvas_, 1);
  connect(step_box_, &QSpinBox::valueChanged, this, [this] {
    header_->setText(headerText());
    canvas_->update();
  });
  retranslate();
}

void WaitsView::retranslate() {
  step_label_->setText(tr("Step:"));
  step_box_->setSpecialValueText(tr("last completed"));
  step_box_->setToolTip(tr("The optimizer step to draw"));
  header_->setToolTip(
      tr("A rank that reaches a collective or a receive before the others idles until they get there. On the "
         "virtual clock the communicator reports each wait with the rank it waited for, passing that name on "
         "round the ring, so a straggler is named by every rank it holds up."));
  header_->setText(headerText());
  canvas_->update();
}

void WaitsView::changeEvent(QEvent* event) {
  if (event->type() == QEvent::LanguageChange) retranslate();
  QWidget::changeEvent(event);
}

void WaitsView::reset(const RunPlan& run) {
  model_.reset(run);
  step_box_->setRange(0, 0);
  dirty_ = true;
  refresh();
}

void WaitsView::consume(const std::vector<Event>& events) {
  model_.consume(events);
  dirty_ = dirty_ || !events.empty();
}

void WaitsView::refresh() {
  if (!dirty_) return;
  dirty_ = false;
  step_box_->setMaximum(static_cast<int>(model_.lastCompletedStep()));
  header_->setText(headerText());
  canvas_->update();
}

std::int64_t WaitsView::shownStep() const {
  if (step_box_->value() > 0) return step_box_->value();
  if (model_.failure()) return model_.failure()->step;
  return model_.lastCompletedStep();
}

QString WaitsView::headerText() const {
  QString text;
  const std::int64_t step = shownStep();
  const RankWaits waits = model_.waits(step);
  if (const auto& f = model_.failure()) {
    text = tr("Rank %1 failed at step %2: %3.").arg(f->rank).arg(f->step).arg(QString::fromStdString(f->text));
    if (waits.total_ns() <= 0) return text;
    text += QStringLiteral("\n");
  }
  if (step <= 0 || waits.total_ns() <= 0)
    return text + tr("Each rank's compute, and the time it waited for another rank at a collective or a receive "
                     "(none yet).");
  const int culprit = waits.most_waited_for();
  const double share =
      100.0 * static_cast<double>(waits.waited_for_ns(culprit)) / static_cast<double>(waits.total_ns());
  text += tr("Step %1: the ranks waited %2 ms in all; %3% of it for rank %4.")
              .arg(step)
              .arg(static_cast<double>(waits.total_ns()) / 1e6, 0, 'f', 1)
              .arg(share, 0, 'f', 0)
              .arg(culprit);
  if (culprit == model_.slowRank())
    text += QStringLiteral(" ") +
            tr("Its compute takes %1× as long (straggler setting %2:%1).").arg(model_.slowFactor()).arg(culprit);
  return text;
}

}  // namespace shardscope::ui
