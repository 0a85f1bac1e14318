// SPDX-License-Identifier: GPL-3.0-or-later
// What the Tensor parallel, Context parallel and Experts views share: each
// draws one transformer layer of the run, picked with a "Layer:" spin box in a
// bar at the top, as a header wrapped under the bar, a drawing, and a footer of
// text lines drawn up from the bottom; or, when the run has nothing for it, a
// placeholder in place of all three. The bar, the layer's range, the language
// change and the painting of the header, footer and placeholder are here once;
// the texts stay in each view (their own tr() context, so their translations
// stay where they are) and so do the drawings.
//
// "One step, slowly", for a view that keeps its events (keepsForReplay): as
// the ZeRO view does (StepReplay), the last steps' events are kept; a replay puts the
// view's live model aside (startReplay), feeds the step's events again by
// their end time over max(its length, 2 s) / speed of wall time, and puts the
// live model back at the end (finishReplay); drawing() holds the run meanwhile.
// LiveModel below holds the live model set aside, for every view the same way.
#pragma once

#include <QRectF>
#include <QString>
#include <QWidget>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "views/event_view.h"
#include "views/step_replay.h"

class QHBoxLayout;
class QLabel;
class QPainter;
class QSpinBox;
class QTimer;

namespace shardscope::ui {

class LayerView : public QWidget, public EventView {
  Q_OBJECT

 public:
  int layer() const { return layer_; }
  void setLayer(int layer);
  void refresh() override { update(); }
  bool drawing() const override;
  void setPlaybackSpeed(double speed) override { speed_ = speed; }
  void replayStep(std::int64_t step) override;
  // While replaying: the step replayed (0 otherwise).
  std::int64_t replayedStep() const { return replay_step_; }

 protected:
  // `picker_name`: the layer spin box's object name (tests find it by it).
  explicit LayerView(const QString& picker_name, QWidget* parent = nullptr);

  // A widget after the layer picker in the bar (the Context parallel view's pass).
  void addToBar(QWidget* widget);
  // The picker's label and tooltip in the language now: each view's retranslate() calls it.
  void setLayerTexts(const QString& label, const QString& tooltip);
  // A new run of `layers` layers: the picker's range, the shown layer kept where it fits.
  void setLayerCount(int layers);

  // Where the drawing goes: below the bar, inside the margins.
  QRectF drawingArea() const;
  // With the pen in the text's colour: `text` wrapped into `area`; false (nothing drawn) when it is empty.
  bool paintPlaceholder(QPainter& p, const QRectF& area, const QString& text) const;
  // `text` wrapped at the top of `area`; returns its height.
  static int paintHeader(QPainter& p, const QRectF& area, const QString& text);
  // `lines` wrapped to `area`'s width, their bottom `below` pixels above `area`'s bottom
  // (room for a legend under them); returns their height.
  int paintFooterLines(QPainter& p, const QRectF& area, const QString& lines, int below = 0) const;

  // Replays: which events a replay feeds again (none by default: no replay); each view's
  // consume() hands every batch to keepForReplay, its reset() calls forgetReplay.
  virtual bool keepsForReplay(const Event& /*e*/) const { return false; }
  void keepForReplay(const std::vector<Event>& events);
  void forgetReplay();
  // The live model aside and the step's own state cleared; the replayed events to the
  // model drawn; the live model back.
  virtual void startReplay(std::int64_t /*step*/) {}
  virtual void replayEvents(const std::vector<Event>& /*events*/) {}
  virtual void finishReplay() {}

  // The view's texts in the interface's language (called on a language change).
  virtual void retranslate() = 0;
  void changeEvent(QEvent* event) override;

 private:
  QHBoxLayout* bar_;
  QLabel* layer_label_;
  QSpinBox* layer_box_;
  int layer_ = 0;

  void replayTick();
  QTimer* replay_timer_;
  StepReplay replay_;  // the latest steps' events a replay feeds, and its cursor
  std::int64_t replay_step_ = 0;
  double speed_ = 1.0;
};

// The run's model while a step replays, for a view that draws `model_`: startReplay
// sets a copy aside (setAside) and readies `model_` for the replayed step (what
// differs per view), the run's events go on to the copy (forEvents), and
// finishReplay puts it back in `model_` (bringBack).
template <class Model>
class LiveModel {
 public:
  // Where the run's events go: the model set aside during a replay, `shown` otherwise.
  Model& forEvents(Model& shown) { return live_ ? *live_ : shown; }
  void setAside(const Model& shown) { live_ = shown; }
  // `shown` is the run's model again; nothing changes when none was set aside.
  void bringBack(Model& shown) {
    if (live_) shown = std::move(*live_);
    live_.reset();
  }

 private:
  std::optional<Model> live_;
};

}  // namespace shardscope::ui
