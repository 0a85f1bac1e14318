// SPDX-License-Identifier: GPL-3.0-or-later
// The Hidden states tab (seed chapter 9, the BERT lesson): a Hugging Face
// model directory (all-MiniLM-L6-v2 once scripts/fetch_minilm.sh has fetched
// it, or any GPT-2 / BERT folder with config.json, model.safetensors and
// tokenizer.json) runs once over a text, on a worker thread, and the tab draws
// what transformers' output_hidden_states=True returns, layer by layer:
//   - each hidden state's mean token norm and the mean cosine similarity
//     between different tokens, against the layer (0 = the embeddings);
//   - the tokens' cosine similarities at the chosen layer as a T x T map,
//     cos(a, b) = a·b / (|a| |b|), with the measured mean beside the formula.
#pragma once

#include <QPointer>
#include <QWidget>
#include <memory>
#include <optional>
#include <thread>

#include "inspect/text_hidden_states.h"

class QCustomPlot;
class QCPColorMap;
class QCPGraph;
class QLabel;
class QLineEdit;
class QPushButton;
class QSlider;

namespace shardscope::ui {

class HiddenStatesView : public QWidget {
  Q_OBJECT

 public:
  explicit HiddenStatesView(QWidget* parent = nullptr);
  ~HiddenStatesView() override;

  QString modelDir() const;
  void setModelDir(const QString& dir);
  void setText(const QString& text);
  // Loads the model and runs it over the text on a worker thread; computed()
  // (or failed()) follows on this thread. The previous result stays until then.
  void compute();
  bool busy() const { return worker_.joinable() && running_; }
  void setLayer(int layer);  // the map's layer, 0..L

  const std::optional<TextHiddenStates>& result() const { return result_; }
  int layer() const;
  QString statusText() const;
  QString formulaText() const;

 Q_SIGNALS:
  void computed();
  void failed(const QString& message);

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void retranslate();
  void browse();
  void showResult(TextHiddenStates result);
  void showError(const QString& message);
  void drawLayers();
  void drawMap();

  QLineEdit* dir_;
  QPushButton* browse_;
  QLineEdit* text_;
  QPushButton* compute_;
  QLabel* status_;
  QLabel* dir_label_;
  QLabel* text_label_;
  QLabel* layer_label_;
  QSlider* layer_;
  QLabel* formula_;
  QCustomPlot* layers_plot_;
  QCPGraph* norms_ = nullptr;
  QCPGraph* cosines_ = nullptr;
  QCustomPlot* map_plot_;
  QCPColorMap* map_ = nullptr;
  std::optional<TextHiddenStates> result_;
  QString error_;
  std::thread worker_;
  bool running_ = false;
};

}  // namespace shardscope::ui
