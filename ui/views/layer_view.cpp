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
  replay_.keep(events, [this](const Event& e) { return keepsForReplay(e); });
}

void LayerView::forgetReplay() {
  if (replay_timer_->isActive()) {
    replay_timer_->stop();
    finishReplay();
  }
  replay_step_ = 0;
  replay_.forget();
}

bool LayerView::drawing() const {
  return replay_timer_->isActive();
}

void LayerView::replayStep(std::int64_t step) {
  if (replay_timer_->isActive() || !replay_.start(step, speed_)) return;
  replay_step_ = step;
  startReplay(step);
  replay_timer_->start();
  update();
}

// Feeds the replayed step's events up to the time the wall clock has reached.
void LayerView::replayTick() {
  replayEvents(replay_.due());
  if (replay_.finished()) {
    replay_timer_->stop();
    replay_step_ = 0;
    finishReplay();
  }
  update();
}

}  // namespace shardscope::ui
