// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/layer_view.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QSpinBox>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>

namespace shardscope::ui {

LayerView::LayerView(const QString& picker_name, QWidget* parent)
    : QWidget(parent),
      bar_(new QHBoxLayout),
      layer_label_(new QLabel),
      layer_box_(new QSpinBox),
      replay_timer_(new QTimer(this)) {
  setMinimumSize(400, 300);  // fits beside the settings and the lessons on a 1280×720 screen
  layer_box_->setObjectName(picker_name);
  layer_box_->setRange(0, 0);
  layer_box_->setMinimumWidth(64);
  bar_->addWidget(layer_label_);
  bar_->addWidget(layer_box_);
  bar_->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(8, 6, 8, 6);
  layout->addLayout(bar_);
  layout->addStretch(1);
  connect(layer_box_, &QSpinBox::valueChanged, this, [this](int l) { setLayer(l); });
  replay_timer_->setInterval(33);
  connect(replay_timer_, &QTimer::timeout, this, &LayerView::replayTick);
}

void LayerView::addToBar(QWidget* widget) {
  bar_->insertWidget(bar_->count() - 1, widget);  // before the stretch
}

void LayerView::setLayerTexts(const QString& label, const QString& tooltip) {
  layer_label_->setText(label);
  layer_box_->setToolTip(tooltip);
}

void LayerView::setLayerCount(int layers) {
  layer_box_->setRange(0, std::max(0, layers - 1));
  setLayer(std::clamp(layer_, 0, std::max(0, layers - 1)));
}

void LayerView::setLayer(int layer) {
  layer_ = layer;
  if (layer_box_->value() != layer) layer_box_->setValue(layer);
  update();
}

void LayerView::changeEvent(QEvent* event) {
  if (event->type() == QEvent::LanguageChange) retranslate();
  QWidget::changeEvent(event);
}

QRectF LayerView::drawingArea() const {
  return QRectF(rect()).adjusted(8, layer_box_->geometry().bottom() + 8, -8, -6);
}

bool LayerView::paintPlaceholder(QPainter& p, const QRectF& area, const QString& text) const {
  p.setPen(palette().text().color());
  if (text.isEmpty()) return false;
  p.drawText(area, Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, text);
  return true;
}

int LayerView::paintHeader(QPainter& p, const QRectF& area, const QString& text) {
  const QRect head = p.fontMetrics().boundingRect(area.toRect(), Qt::TextWordWrap, text);
  p.drawText(area, Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, text);
  return head.height();
}

int LayerView::paintFooterLines(QPainter& p, const QRectF& area, const QString& lines, int below) const {
  const int flags = Qt::AlignLeft | Qt::TextWordWrap;
  const QRect text = p.fontMetrics().boundingRect(QRect(0, 0, static_cast<int>(area.width()), 10000), flags, lines);
  p.setPen(palette().text().color());
  p.drawText(QRectF(area.left(), area.bottom() - below - text.height(), area.width(), text.height()), flags, lines);
  return text.height();
}

void LayerView::keepForReplay(const std::vector<Event>& events) {
  for (const Event& e : events)
    if (e.step > 0 && keepsForReplay(e)) kept_[e.step].push_back(e);
  while (kept_.size() > 3) kept_.erase(kept_.begin());  // the step replayed is the last completed one
}

void LayerView::forgetReplay() {
  if (replay_timer_->isActive()) {
    replay_timer_->stop();
    finishReplay();
  }
  replay_step_ = 0;
  kept_.clear();
}

bool LayerView::drawing() const {
  return replay_timer_->isActive();
}

void LayerView::replayStep(std::int64_t step) {
  const auto it = kept_.find(step);
  if (it == kept_.end() || it->second.empty() || replay_timer_->isActive()) return;
  replay_ = it->second;
  std::stable_sort(replay_.begin(), replay_.end(), [](const Event& a, const Event& b) { return a.end_ns < b.end_ns; });
  replay_from_ns_ = replay_.front().start_ns;
  for (const Event& e : replay_) replay_from_ns_ = std::min(replay_from_ns_, e.start_ns);
  replay_to_ns_ = replay_.back().end_ns;
  const double speed = speed_ > 0 ? std::min(speed_, 1.0) : 1.0;
  replay_ms_ = std::max(static_cast<double>(replay_to_ns_ - replay_from_ns_) / 1e6, 2000.0) / speed;
  replay_step_ = step;
  startReplay(step);
  replayed_ = 0;
  replay_started_ = std::chrono::steady_clock::now();
  replay_timer_->start();
  update();
}

// Feeds the replayed step's events up to the time the wall clock has reached.
void LayerView::replayTick() {
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - replay_started_).count();
  const double f = std::min(1.0, ms / replay_ms_);
  const auto until =
      replay_from_ns_ + static_cast<std::int64_t>(f * static_cast<double>(replay_to_ns_ - replay_from_ns_));
  std::vector<Event> batch;
  while (replayed_ < replay_.size() && replay_[replayed_].end_ns <= until) batch.push_back(replay_[replayed_++]);
  replayEvents(batch);
  if (f >= 1.0) {
    replay_timer_->stop();
    replay_step_ = 0;
    finishReplay();
  }
  update();
}

}  // namespace shardscope::ui
