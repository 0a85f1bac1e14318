// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/hidden_states_view.h"

#include <QDir>
#include <QEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSharedPointer>
#include <QSlider>
#include <QVBoxLayout>
#include <algorithm>
#include <exception>
#include <utility>

#include "views/plot_legend.h"
#include "views/qcustomplot_include.h"

namespace shardscope::ui {

namespace {
QString qstr(const std::string& s) { return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size())); }

double mean(const std::vector<double>& v) {
  double sum = 0.0;
  for (const double x : v) sum += x;
  return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
}
}  // namespace

HiddenStatesView::HiddenStatesView(QWidget* parent)
    : QWidget(parent),
      dir_(new QLineEdit(this)),
      browse_(new QPushButton(this)),
      text_(new QLineEdit(this)),
      compute_(new QPushButton(this)),
      status_(new QLabel(this)),
      dir_label_(new QLabel(this)),
      text_label_(new QLabel(this)),
      layer_label_(new QLabel(this)),
      layer_(new QSlider(Qt::Horizontal, this)),
      formula_(new QLabel(this)),
      layers_plot_(new QCustomPlot(this)),
      map_plot_(new QCustomPlot(this)) {
  dir_->setObjectName(QStringLiteral("hiddenStatesModelDir"));
  text_->setObjectName(QStringLiteral("hiddenStatesText"));
  map_plot_->setObjectName(QStringLiteral("hiddenStatesMap"));
  compute_->setObjectName(QStringLiteral("hiddenStatesCompute"));
  status_->setWordWrap(true);
  formula_->setWordWrap(true);
  auto* inputs = new QGridLayout;
  inputs->addWidget(dir_label_, 0, 0);
  inputs->addWidget(dir_, 0, 1);
  inputs->addWidget(browse_, 0, 2);
  inputs->addWidget(text_label_, 1, 0);
  inputs->addWidget(text_, 1, 1);
  inputs->addWidget(compute_, 1, 2);
  auto* layerRow = new QHBoxLayout;
  layerRow->addWidget(layer_label_);
  layerRow->addWidget(layer_, 1);
  auto* plots = new QHBoxLayout;
  plots->addWidget(layers_plot_, 1);
  plots->addWidget(map_plot_, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(inputs);
  layout->addWidget(status_);
  layout->addLayout(plots, 1);
  layout->addLayout(layerRow);
  layout->addWidget(formula_);
  layers_plot_->setMinimumSize(200, 160);
  map_plot_->setMinimumSize(200, 160);

  placeLegendBelow(layers_plot_, 1);  // under the axes, one entry a row, never over a point
  norms_ = layers_plot_->addGraph(layers_plot_->xAxis, layers_plot_->yAxis);
  norms_->setPen(QPen(QColor(31, 119, 180), 2));
  norms_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 5));
  layers_plot_->yAxis2->setVisible(true);
  cosines_ = layers_plot_->addGraph(layers_plot_->xAxis, layers_plot_->yAxis2);
  cosines_->setPen(QPen(QColor(214, 39, 40), 2));
  cosines_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssSquare, 5));
  layers_plot_->yAxis2->setRange(-0.1, 1.0);
  map_ = new QCPColorMap(map_plot_->xAxis, map_plot_->yAxis);
  map_->setGradient(QCPColorGradient(QCPColorGradient::gpPolar));
  map_->setDataRange(QCPRange(-1.0, 1.0));
  map_->setInterpolate(false);
  map_plot_->yAxis->setRangeReversed(true);  // token 0 at the top, as a matrix reads

  dir_->setText(QString::fromStdString(pretrained_minilm_dir()));
  text_->setText(QStringLiteral("The cat sat on the mat. 猫坐在垫子上。"));
  layer_->setRange(0, 0);
  connect(browse_, &QPushButton::clicked, this, &HiddenStatesView::browse);
  connect(compute_, &QPushButton::clicked, this, &HiddenStatesView::compute);
  connect(text_, &QLineEdit::returnPressed, this, &HiddenStatesView::compute);
  connect(layer_, &QSlider::valueChanged, this, [this] { drawMap(); });
  retranslate();
}

HiddenStatesView::~HiddenStatesView() {
  if (worker_.joinable()) worker_.join();  // one forward pass: well under a second for MiniLM
}

QString HiddenStatesView::modelDir() const { return dir_->text(); }
void HiddenStatesView::setModelDir(const QString& dir) { dir_->setText(dir); }
void HiddenStatesView::setText(const QString& text) { text_->setText(text); }
int HiddenStatesView::layer() const { return layer_->value(); }
void HiddenStatesView::setLayer(int layer) { layer_->setValue(layer); }
QString HiddenStatesView::statusText() const { return status_->text(); }
QString HiddenStatesView::formulaText() const { return formula_->text(); }

void HiddenStatesView::browse() {
  const QString dir = QFileDialog::getExistingDirectory(
      this, tr("Hugging Face model folder (config.json, model.safetensors, tokenizer.json)"), dir_->text());
  if (!dir.isEmpty()) dir_->setText(dir);
}

void HiddenStatesView::compute() {
  if (running_) return;
  if (worker_.joinable()) worker_.join();
  running_ = true;
  compute_->setEnabled(false);
  error_.clear();
  retranslate();
  const std::string dir = QDir::fromNativeSeparators(dir_->text().trimmed()).toStdString();
  const std::string text = text_->text().toStdString();
  worker_ = std::thread([this, dir, text] {
    try {
      auto result = std::make_shared<TextHiddenStates>(text_hidden_states(dir, text, 2));
      QMetaObject::invokeMethod(this, [this, result] { showResult(std::move(*result)); }, Qt::QueuedConnection);
    } catch (const std::exception& e) {
      const QString message = QString::fromUtf8(e.what());
      QMetaObject::invokeMethod(this, [this, message] { showError(message); }, Qt::QueuedConnection);
    }
  });
}

void HiddenStatesView::showResult(TextHiddenStates result) {
  running_ = false;
  compute_->setEnabled(true);
  result_ = std::move(result);
  layer_->setRange(0, result_->config.layers);
  layer_->setValue(result_->config.layers);
  drawLayers();
  drawMap();
  retranslate();
  Q_EMIT computed();
}

void HiddenStatesView::showError(const QString& message) {
  running_ = false;
  compute_->setEnabled(true);
  error_ = message;
  retranslate();
  Q_EMIT failed(message);
}

// Mean token norm and mean cosine between different tokens, per hidden state.
void HiddenStatesView::drawLayers() {
  QVector<double> keys, norms, cosines;
  for (int l = 0; l <= result_->config.layers; ++l) {
    keys << l;
    norms << mean(token_norms(result_->states, l));
    cosines << mean_pairwise_cosine(result_->states, l);
  }
  norms_->setData(keys, norms, true);
  cosines_->setData(keys, cosines, true);
  layers_plot_->xAxis->setRange(-0.3, result_->config.layers + 0.3);
  layers_plot_->yAxis->setRange(0, *std::max_element(norms.begin(), norms.end()) * 1.1);
  layers_plot_->yAxis2->setRange(-0.05, std::max(1.0, *std::max_element(cosines.begin(), cosines.end())) * 1.05);
  layers_plot_->replot(QCustomPlot::rpQueuedReplot);
}

void HiddenStatesView::drawMap() {
  if (!result_) return;
  const int T = result_->states.tokens, l = layer_->value();
  const std::vector<double> c = token_cosines(result_->states, l);
  map_->data()->setSize(T, T);
  map_->data()->setRange(QCPRange(0, T - 1), QCPRange(0, T - 1));
  for (int i = 0; i < T; ++i)
    for (int j = 0; j < T; ++j) map_->data()->setCell(j, i, c[static_cast<std::size_t>(i) * T + j]);
  QSharedPointer<QCPAxisTickerText> ticks(new QCPAxisTickerText);
  for (int t = 0; t < T; ++t) ticks->addTick(t, qstr(result_->tokens[static_cast<std::size_t>(t)]));
  map_plot_->xAxis->setTicker(ticks);
  map_plot_->yAxis->setTicker(ticks);
  map_plot_->xAxis->setTickLabelRotation(60);
  map_plot_->xAxis->setRange(-0.5, T - 0.5);
  map_plot_->yAxis->setRange(-0.5, T - 0.5);
  map_plot_->replot(QCustomPlot::rpQueuedReplot);
  retranslate();
}

void HiddenStatesView::retranslate() {
  dir_label_->setText(tr("Model folder"));
  text_label_->setText(tr("Text"));
  browse_->setText(tr("Browse…"));
  compute_->setText(tr("Compute"));
  norms_->setName(tr("mean token norm |h| (left)"));
  cosines_->setName(tr("mean cosine between tokens (right)"));
  layers_plot_->xAxis->setLabel(tr("hidden state (0: embeddings)"));
  layers_plot_->yAxis->setLabel(tr("norm"));
  layers_plot_->yAxis2->setLabel(tr("cosine"));
  const int l = layer_->value();
  layer_label_->setText(tr("Layer %1").arg(l));
  if (running_) {
    status_->setText(tr("Running the model over the text…"));
  } else if (!error_.isEmpty()) {
    status_->setText(tr("Cannot compute: %1").arg(error_));
  } else if (result_) {
    status_->setText(tr("%1 (%2): %3 layers, %4 channels; %5 tokens")
                         .arg(QFileInfo(qstr(result_->dir)).fileName(),
                              qstr(std::string(model_kind_name(result_->config.kind))))
                         .arg(result_->config.layers)
                         .arg(result_->config.channels)
                         .arg(result_->states.tokens));
  } else {
    status_->setText(tr("Press Compute to run a pretrained model over the text. all-MiniLM-L6-v2 is fetched by "
                        "bash scripts/fetch_minilm.sh; any GPT-2 or BERT folder with config.json, model.safetensors "
                        "and tokenizer.json works."));
  }
  formula_->setText(result_ ? tr("cos(a, b) = a·b / (|a| |b|) between every two tokens of hidden state %1; mean over "
                                 "different tokens = %2")
                                  .arg(l)
                                  .arg(mean_pairwise_cosine(result_->states, l), 0, 'f', 3)
                            : tr("cos(a, b) = a·b / (|a| |b|): 1 for the same direction, 0 for unrelated vectors"));
  map_plot_->xAxis->setLabel(tr("token"));
  layers_plot_->replot(QCustomPlot::rpQueuedReplot);
}

void HiddenStatesView::changeEvent(QEvent* event) {
  if (event->type() == QEvent::LanguageChange) retranslate();
  QWidget::changeEvent(event);
}

}  // namespace shardscope::ui
