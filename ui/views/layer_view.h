// SPDX-License-Identifier: GPL-3.0-or-later
// What the Tensor parallel, Context parallel and Experts views share: each
// draws one transformer layer of the run, picked with a "Layer:" spin box in a
// bar at the top, as a header wrapped under the bar, a drawing, and a footer of
// text lines drawn up from the bottom; or, when the run has nothing for it, a
// placeholder in place of all three. The bar, the layer's range, the language
// change and the painting of the header, footer and placeholder are here once;
// the texts stay in each view (their own tr() context, so their translations
// stay where they are) and so do the drawings.
#pragma once

#include <QRectF>
#include <QString>
#include <QWidget>

#include "views/event_view.h"

class QHBoxLayout;
class QLabel;
class QPainter;
class QSpinBox;

namespace shardscope::ui {

class LayerView : public QWidget, public EventView {
  Q_OBJECT

 public:
  int layer() const { return layer_; }
  void setLayer(int layer);
  void refresh() override { update(); }

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

  // The view's texts in the interface's language (called on a language change).
  virtual void retranslate() = 0;
  void changeEvent(QEvent* event) override;

 private:
  QHBoxLayout* bar_;
  QLabel* layer_label_;
  QSpinBox* layer_box_;
  int layer_ = 0;
};

}  // namespace shardscope::ui
