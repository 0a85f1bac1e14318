// SPDX-License-Identifier: GPL-3.0-or-later
// PlannerDialog, part 1: the controls, their links (cluster → dp, sliders ↔
// spin boxes), imports and the model. Rendering is in planner_render.cpp.
#include "planner/planner_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QEvent>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QSlider>
#include <QSpinBox>
#include <QSplitter>
#include <QTextBrowser>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <stdexcept>

#include "config/run_schema.h"
#include "core/error.h"
#include "estimate/formula_text.h"
#include "field_widgets.h"
#include "planner/planner_bars.h"

namespace shardscope::ui {

namespace {
// A schema row as the planner reads it (config/run_schema.h): the estimator's ranges and choices,
// the same as `estimate`'s flags.
RunField plannerRow(std::string_view key) {
  const RunField* row = find_schema_field(key);
  if (row == nullptr || !row->on(surface::planner))
    throw std::logic_error("planner: no schema row \"" + std::string(key) + "\" on the planner surface");
  return field_on(*row, surface::planner);
}

// The shipped Llama-2-70B config (the CLI's --model llama-2-70b), for the tp 8 layout.
PlannerModel llama70bModel() {
  PlannerModel m;
  m.shape = load_model_shape("llama-2-70b", &m.warnings);
  m.label = QStringLiteral("Llama-2-70B");
  return m;
}

QSpinBox* spinBox(const char* name, int min, int max, int value) {
  auto* box = new QSpinBox;
  box->setObjectName(QString::fromLatin1(name));
  box->setRange(min, max);
  box->setValue(value);
  box->setKeyboardTracking(false);  // typing "1024" plans once, not at 1, 10, 102
  return box;
}

// A spin box over a row's range.
QSpinBox* rowSpinBox(const char* name, std::string_view key, int value) {
  const RunField row = plannerRow(key);
  return spinBox(name, static_cast<int>(row.min), static_cast<int>(row.max), value);
}
}  // namespace

PlannerDialog::PlannerDialog(QWidget* parent) : QDialog(parent), debounce_(new QTimer(this)) {
  setObjectName(QStringLiteral("plannerDialog"));
  pool_.setMaxThreadCount(1);
  debounce_->setSingleShot(true);
  debounce_->setInterval(30);  // instant to the eye; one plan for a burst of slider moves
  connect(debounce_, &QTimer::timeout, this, &PlannerDialog::replan);
  buildControls();
  auto* split = new QSplitter(Qt::Horizontal);
  split->addWidget(buildSettingsColumn());
  split->addWidget(buildResultsColumn());
  split->setStretchFactor(1, 1);
  split->setChildrenCollapsible(false);
  auto* layout = new QHBoxLayout(this);
  layout->addWidget(split);
  connectControls();
  ignoreWheelOnUnfocusedFields(this);  // scrolling the settings column edits none of them
  retranslate();
  base_.activations = ActivationMode::formula;                     // the CLI's default: GPU frameworks' activations
  setModel(examplePlannerModel(PlannerExample::gpt3_175b), true);  // the seed's 2.8 TB, on one GPU
  replan();
  resize(1240, 700);
}

PlannerDialog::~PlannerDialog() {
  pool_.clear();
  pool_.waitForDone();  // its result, queued to this dialog, is discarded with it
}

void PlannerDialog::buildControls() {
  model_box_ = new QComboBox;
  model_box_->setObjectName(QStringLiteral("plannerModel"));
  model_box_->addItem(QString(), QStringLiteral("example:gpt3_175b"));
  model_box_->addItem(QString(), QStringLiteral("example:llama_2_7b"));
  model_box_->addItem(QString(), QStringLiteral("example:llama_2_70b"));
  for (const ModelConfig& preset : model_presets())
    model_box_->addItem(QString::fromStdString(preset.name), QStringLiteral("preset:") + QString::fromStdString(preset.name));
  gpt3_ = new QPushButton;
  gpt3_->setObjectName(QStringLiteral("exampleGpt3"));
  llama_ = new QPushButton;
  llama_->setObjectName(QStringLiteral("exampleLlama"));
  import_ = new QPushButton;
  import_->setObjectName(QStringLiteral("importConfig"));
  model_note_ = new QLabel;
  model_note_->setObjectName(QStringLiteral("modelNote"));
  model_note_->setWordWrap(true);
  gpu_ = new QComboBox;
  gpu_->setObjectName(QStringLiteral("plannerGpu"));
  for (std::string_view name : plannerRow("gpu_profile").choices) {
    const GpuProfile& g = find_gpu_profile(name);
    gpu_->addItem(QStringLiteral("%1 (%2)").arg(QString::fromStdString(g.name), PlannerText::bytes(g.memory_bytes)));
  }
  gpu_->setCurrentIndex(std::max(0, gpu_->findText(QStringLiteral("A100-80GB"), Qt::MatchStartsWith)));
  gpus_per_node_ = rowSpinBox("gpusPerNode", "gpus_per_node", 8);
  nodes_ = rowSpinBox("nodes", "nodes", 1);
  dp_ = rowSpinBox("plannerDp", "dp", 1);
  pp_ = rowSpinBox("plannerPp", "pp", 1);
  tp_ = rowSpinBox("plannerTp", "tp", 1);
  cp_ = rowSpinBox("plannerCp", "cp", 1);
  ep_ = rowSpinBox("plannerEp", "ep", 1);
  sp_ = new QCheckBox;
  sp_->setObjectName(QStringLiteral("plannerSequenceParallel"));
  gpt3_layout_ = new QPushButton;
  gpt3_layout_->setObjectName(QStringLiteral("layoutGpt3"));
  llama70b_layout_ = new QPushButton;
  llama70b_layout_->setObjectName(QStringLiteral("layoutLlama70b"));
  cluster_note_ = new QLabel;
  cluster_note_->setObjectName(QStringLiteral("clusterNote"));
  cluster_note_->setWordWrap(true);
  zero_ = rowSpinBox("plannerZero", "zero", 0);
  precision_ = new QComboBox;
  precision_->setObjectName(QStringLiteral("plannerPrecision"));
  for (std::string_view name : plannerRow("precision").choices)
    precision_->addItem(QString(), static_cast<int>(parse_precision(name)));
  micro_batch_ = rowSpinBox("plannerMicroBatch", "micro_batch", 1);
  micro_batch_slider_ = new QSlider(Qt::Horizontal);
  micro_batch_slider_->setObjectName(QStringLiteral("microBatchSlider"));
  micro_batch_slider_->setRange(1, 64);
  seq_ = rowSpinBox("plannerSeq", "seq", 2048);
  seq_slider_ = new QSlider(Qt::Horizontal);
  seq_slider_->setObjectName(QStringLiteral("seqSlider"));
  seq_slider_->setSingleStep(64);
  seq_slider_->setPageStep(512);
  recompute_ = new QComboBox;
  recompute_->setObjectName(QStringLiteral("plannerCheckpoint"));
  for (std::string_view name : plannerRow("checkpoint").choices)
    recompute_->addItem(QString(), static_cast<int>(parse_recompute(name, "checkpoint")));
  activations_ = new QComboBox;
  activations_->setObjectName(QStringLiteral("plannerActivations"));
  for (std::string_view name : plannerRow("activations").choices)
    activations_->addItem(QString(), static_cast<int>(parse_activation_mode(name, "activations")));
  buildScheduleControls();
}

void PlannerDialog::buildScheduleControls() {
  schedule_ = new QComboBox;
  schedule_->setObjectName(QStringLiteral("plannerSchedule"));
  for (std::string_view name : plannerRow("schedule").choices)  // the engine's names, as --schedule takes them
    schedule_->addItem(QString::fromUtf8(name.data(), static_cast<int>(name.size())),
                       static_cast<int>(parse_pipeline_schedule_kind(name)));
  micro_batches_ = rowSpinBox("plannerMicroBatches", "micro_batches", 1);
  virtual_stages_ = rowSpinBox("plannerVirtualStages", "virtual_stages", 1);
}

QWidget* PlannerDialog::buildSettingsColumn() {
  auto* column = new QWidget;
  auto* layout = new QVBoxLayout(column);
  auto* form = new QFormLayout;
  form->setRowWrapPolicy(QFormLayout::WrapLongRows);
  auto row = [&](QWidget* field, std::function<QString()> text) {
    auto* label = new QLabel;
    label->setBuddy(field);
    labels_.emplace_back(label, std::move(text));
    form->addRow(label, field);
  };
  auto pair = [](QWidget* a, QWidget* b) {
    auto* w = new QWidget;
    auto* h = new QHBoxLayout(w);
    h->setContentsMargins(0, 0, 0, 0);
    h->addWidget(a, 1);
    h->addWidget(b, 1);
    return w;
  };
  row(model_box_, [] { return tr("Model"); });
  row(pair(gpt3_, llama_), [] { return tr("Examples"); });
  form->addRow(import_);
  form->addRow(model_note_);
  row(gpu_, [] { return tr("GPU"); });
  row(gpus_per_node_, [] { return PlannerText::fieldName("gpus_per_node"); });
  row(nodes_, [] { return tr("Nodes"); });
  row(dp_, [] { return PlannerText::fieldName("dp"); });
  row(pp_, [] { return PlannerText::fieldName("pp"); });
  row(tp_, [] { return PlannerText::fieldName("tp"); });
  row(sp_, [] { return PlannerText::fieldName("sequence_parallel"); });
  row(cp_, [] { return PlannerText::fieldName("cp"); });
  row(ep_, [] { return PlannerText::fieldName("ep"); });
  row(pair(gpt3_layout_, llama70b_layout_), [] { return tr("Layouts"); });
  form->addRow(cluster_note_);
  row(zero_, [] { return PlannerText::fieldName("zero"); });
  row(precision_, [] { return PlannerText::fieldName("precision"); });
  row(pair(micro_batch_, micro_batch_slider_), [] { return PlannerText::fieldName("micro_batch"); });
  row(pair(seq_, seq_slider_), [] { return PlannerText::fieldName("seq"); });  // spin box and slider, half each
  row(recompute_, [] { return PlannerText::fieldName("checkpoint"); });
  row(schedule_, [] { return PlannerText::fieldName("schedule"); });
  row(micro_batches_, [] { return PlannerText::fieldName("micro_batches"); });
  row(virtual_stages_, [] { return PlannerText::fieldName("virtual_stages"); });
  row(activations_, [] { return tr("Activation bytes"); });
  layout->addLayout(form);
  layout->addStretch(1);
  auto* scroll = new QScrollArea;
  scroll->setObjectName(QStringLiteral("plannerSettings"));
  scroll->setWidget(column);
  scroll->setWidgetResizable(true);
  scroll->setMinimumWidth(370);
  return scroll;
}

QWidget* PlannerDialog::buildResultsColumn() {
  error_ = new QLabel;
  error_->setObjectName(QStringLiteral("plannerError"));
  error_->setWordWrap(true);
  error_->setStyleSheet(QStringLiteral("color: #b01010;"));
  error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  error_->hide();
  planning_ = new QLabel;
  planning_->setObjectName(QStringLiteral("planning"));
  planning_->setStyleSheet(QStringLiteral("color: #5a5a5a;"));
  planning_->hide();
  verdict_ = new QLabel;
  verdict_->setObjectName(QStringLiteral("plannerVerdict"));
  verdict_->setWordWrap(true);
  QFont bold = verdict_->font();
  bold.setBold(true);
  verdict_->setFont(bold);
  states_ = new QLabel;
  states_->setObjectName(QStringLiteral("modelStates"));
  states_->setWordWrap(true);
  bars_ = new PlannerBars;
  formulas_ = new QTextBrowser;
  formulas_->setObjectName(QStringLiteral("plannerFormulas"));
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(bars_);
  split->addWidget(formulas_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  split->setChildrenCollapsible(false);
  auto* column = new QWidget;
  auto* layout = new QVBoxLayout(column);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(error_);
  layout->addWidget(planning_);
  layout->addWidget(verdict_);
  layout->addWidget(states_);
  layout->addWidget(split, 1);
  return column;
}

void PlannerDialog::connectControls() {
  auto later = [this] { debounce_->start(); };
  connect(model_box_, &QComboBox::activated, this, &PlannerDialog::chooseModel);
  connect(gpt3_, &QPushButton::clicked, this, [this] { showExample(PlannerExample::gpt3_175b); });
  connect(llama_, &QPushButton::clicked, this, [this] { showExample(PlannerExample::llama_2_7b); });
  connect(import_, &QPushButton::clicked, this, &PlannerDialog::chooseAndImport);
  connect(gpus_per_node_, &QSpinBox::valueChanged, this, &PlannerDialog::syncDataParallel);
  connect(nodes_, &QSpinBox::valueChanged, this, &PlannerDialog::syncDataParallel);
  connect(pp_, &QSpinBox::valueChanged, this, &PlannerDialog::syncDataParallel);
  connect(tp_, &QSpinBox::valueChanged, this, &PlannerDialog::syncDataParallel);
  connect(cp_, &QSpinBox::valueChanged, this, &PlannerDialog::syncDataParallel);
  connect(ep_, &QSpinBox::valueChanged, this, later);  // ep borrows dp ranks: the GPUs stay as they are
  connect(sp_, &QCheckBox::toggled, this, later);
  connect(gpt3_layout_, &QPushButton::clicked, this, &PlannerDialog::showGpt3Layout);
  connect(llama70b_layout_, &QPushButton::clicked, this, &PlannerDialog::showLlama70bLayout);
  connect(dp_, &QSpinBox::valueChanged, this, [this, later] {
    updateClusterNote();
    later();
  });
  connect(micro_batch_slider_, &QSlider::valueChanged, micro_batch_, &QSpinBox::setValue);
  connect(seq_slider_, &QSlider::valueChanged, seq_, &QSpinBox::setValue);
  connect(micro_batch_, &QSpinBox::valueChanged, this, [this, later](int value) {
    const QSignalBlocker block(micro_batch_slider_);
    micro_batch_slider_->setValue(value);
    later();
  });
  connect(seq_, &QSpinBox::valueChanged, this, [this, later](int value) {
    const QSignalBlocker block(seq_slider_);
    seq_slider_->setValue(value);
    later();
  });
  for (QSpinBox* box : {zero_, micro_batches_, virtual_stages_}) connect(box, &QSpinBox::valueChanged, this, later);
  for (QComboBox* box : {gpu_, precision_, recompute_, activations_, schedule_})
    connect(box, &QComboBox::currentIndexChanged, this, later);
  connect(bars_, &PlannerBars::stageClicked, zero_, &QSpinBox::setValue);
}

void PlannerDialog::retranslate() {
  setWindowTitle(tr("Memory planner"));
  for (const auto& [label, text] : labels_) label->setText(text());
  model_box_->setItemText(0, tr("GPT-3 175B (example)"));
  model_box_->setItemText(1, tr("Llama-2-7B (example)"));
  model_box_->setItemText(2, tr("Llama-2-70B (example)"));
  gpt3_->setText(tr("GPT-3 175B"));
  llama_->setText(tr("Llama-2-7B"));
  gpt3_layout_->setText(tr("GPT-3 175B, 1024 A100s"));
  gpt3_layout_->setToolTip(tr("tp 8 × pp 8 × dp 16, batch 1536, fp16, full recompute (Narayanan et al. 2021)"));
  llama70b_layout_->setText(tr("Llama-2-70B, 8 H100s"));
  llama70b_layout_->setToolTip(tr("tp 8 inside one node, bf16 (Megatron-LM's layout for a 70B model)"));
  import_->setText(tr("Import config.json / DeepSpeed / accelerate..."));
  import_->setToolTip(tr("A Hugging Face config.json, a DeepSpeed JSON and/or an accelerate YAML (select several "
                         "at once): the same importers as shardscope-cli estimate --model, --deepspeed, --accelerate."));
  precision_->setItemText(0, tr("fp32"));
  precision_->setItemText(1, tr("fp16 (mixed precision)"));
  precision_->setItemText(2, tr("bf16 (mixed precision)"));
  recompute_->setItemText(0, tr("none"));
  recompute_->setItemText(1, tr("selective (attention core)"));
  recompute_->setItemText(2, tr("full (each layer's input kept)"));
  activations_->setItemText(0, tr("ShardScope (exact)"));
  activations_->setItemText(1, tr("formula sbh(34 + 5as/h)"));
  activations_->setToolTip(tr("Exact: the bytes ShardScope's own kernels keep for backward (a model it implements). "
                              "Formula: Korthikanti et al. 2022, sbh(34 + 5as/h) per layer, for Megatron-style "
                              "implementations."));
  if (model_box_->currentIndex() <= 1) model_.label = model_box_->currentText();  // an example's name
  updateModelNote();
  updateClusterNote();
  if (error_text_) error_->setText(error_text_());
  planning_->setText(tr("Planning..."));
  if (planned_) plan(false);  // refusals and verdicts in the new language; an error shown stays
}

void PlannerDialog::changeEvent(QEvent* event) {
  if (event->type() == QEvent::LanguageChange) retranslate();
  QDialog::changeEvent(event);
}

EstimateSettings PlannerDialog::settings() const {
  EstimateSettings s = base_;
  s.layout[Axis::dp] = dp_->value();
  s.layout[Axis::pp] = pp_->value();
  s.layout[Axis::tp] = tp_->value();
  s.layout[Axis::cp] = cp_->value();
  s.expert_parallel = ep_->value();
  s.sequence_parallel = sp_->isChecked();
  s.zero_stage = zero_->value();
  s.precision = static_cast<Precision>(precision_->currentData().toInt());
  s.micro_batch_size = micro_batch_->value();
  s.seq = seq_->value();
  s.recompute = static_cast<Recompute>(recompute_->currentData().toInt());
  s.schedule = static_cast<PipelineScheduleKind>(schedule_->currentData().toInt());
  s.micro_batches = micro_batches_->value();
  s.virtual_stages = virtual_stages_->value();
  s.activations = static_cast<ActivationMode>(activations_->currentData().toInt());
  s.gpus_per_node = gpus_per_node_->value();
  return s;
}

EstimateRequest PlannerDialog::request() const {
  EstimateRequest r;
  r.model = model_.shape;
  r.settings = settings();
  r.gpu = gpu_profiles()[static_cast<std::size_t>(std::max(0, gpu_->currentIndex()))];
  r.nodes = nodes_->value();
  r.warnings = model_.warnings;
  r.warnings.insert(r.warnings.end(), import_warnings_.begin(), import_warnings_.end());
  return r;
}

void PlannerDialog::setControls(const EstimateSettings& s, int nodes) {
  const QSignalBlocker b1(dp_), b2(pp_), b3(zero_), b4(precision_), b5(micro_batch_), b6(seq_), b7(recompute_),
      b8(activations_), b9(gpus_per_node_), b10(nodes_), b11(micro_batch_slider_), b12(seq_slider_), b13(tp_), b14(sp_),
      b15(schedule_), b16(micro_batches_), b17(virtual_stages_);
  dp_->setValue(s.layout.dp());
  pp_->setValue(s.layout.pp());
  tp_->setValue(s.layout.tp());
  cp_->setValue(s.layout.cp());
  ep_->setValue(s.expert_parallel);
  sp_->setChecked(s.sequence_parallel);
  zero_->setValue(s.zero_stage);
  precision_->setCurrentIndex(precision_->findData(static_cast<int>(s.precision)));
  micro_batch_->setValue(s.micro_batch_size);
  micro_batch_slider_->setValue(s.micro_batch_size);
  seq_->setValue(s.seq);
  seq_slider_->setValue(s.seq);
  recompute_->setCurrentIndex(recompute_->findData(static_cast<int>(s.recompute)));
  schedule_->setCurrentIndex(std::max(0, schedule_->findData(static_cast<int>(s.schedule))));
  micro_batches_->setValue(s.micro_batches);
  virtual_stages_->setValue(s.virtual_stages);
  activations_->setCurrentIndex(activations_->findData(static_cast<int>(s.activations)));
  gpus_per_node_->setValue(s.gpus_per_node);
  // GPUs: accelerate's num_machines when it says, else as many nodes as dp × pp needs.
  nodes_->setValue(nodes > 0 ? nodes : (s.world_size() + s.gpus_per_node - 1) / s.gpus_per_node);
  updateClusterNote();
}

// The cluster changed (GPUs per node, nodes) or the pipeline: the data-parallel
// ranks fill the GPUs when the stages divide them.
void PlannerDialog::syncDataParallel() {
  const std::int64_t gpus = static_cast<std::int64_t>(gpus_per_node_->value()) * nodes_->value();
  const std::int64_t model_parallel = static_cast<std::int64_t>(pp_->value()) * tp_->value() * cp_->value();
  if (gpus % model_parallel == 0 && gpus / model_parallel <= dp_->maximum()) {
    const QSignalBlocker block(dp_);
    dp_->setValue(static_cast<int>(gpus / model_parallel));
  }
  updateClusterNote();
  debounce_->start();
}

void PlannerDialog::updateClusterNote() {
  const std::int64_t gpus = static_cast<std::int64_t>(gpus_per_node_->value()) * nodes_->value();
  const std::int64_t used = static_cast<std::int64_t>(dp_->value()) * pp_->value() * tp_->value() * cp_->value();
  if (cp_->value() > 1) {  // context parallelism: one more GPU axis
    cluster_note_->setText(tr("dp %1 × pp %2 × tp %3 × cp %4 = %5 GPUs; the nodes have %6.")
                               .arg(dp_->value())
                               .arg(pp_->value())
                               .arg(tp_->value())
                               .arg(cp_->value())
                               .arg(used)
                               .arg(gpus));
    return;
  }
  if (tp_->value() > 1) {  // the Megatron layout: tp innermost, inside a node
    cluster_note_->setText(tr("dp %1 × pp %2 × tp %3 = %4 GPUs; the nodes have %5.")
                               .arg(dp_->value())
                               .arg(pp_->value())
                               .arg(tp_->value())
                               .arg(used)
                               .arg(gpus));
    return;
  }
  if (used == gpus)
    cluster_note_->setText(tr("dp %1 × pp %2 = %3 GPUs = %4 × %5 (nodes × GPUs per node).")
                               .arg(dp_->value()).arg(pp_->value()).arg(used).arg(nodes_->value()).arg(gpus_per_node_->value()));
  else
    cluster_note_->setText(tr("dp %1 × pp %2 = %3 GPUs, but the nodes have %4: the plan is per GPU either way.")
                               .arg(dp_->value()).arg(pp_->value()).arg(used).arg(gpus));
}

void PlannerDialog::setModel(PlannerModel model, bool reset_seq) {
  model_ = std::move(model);
  const int max_positions = static_cast<int>(std::clamp<std::int64_t>(model_.shape.max_positions, 1, seq_->maximum()));
  const QSignalBlocker b1(seq_), b2(seq_slider_), b3(activations_);
  seq_slider_->setRange(1, std::max(max_positions, 64));
  if (reset_seq) {
    seq_->setValue(max_positions);
    seq_slider_->setValue(max_positions);
    // The CLI's default: activations as GPU frameworks keep them (16-bit under fp16/bf16).
    activations_->setCurrentIndex(activations_->findData(static_cast<int>(ActivationMode::formula)));
  }
  activations_->setEnabled(model_.shape.engine_config.has_value());
  updateModelNote();
}

void PlannerDialog::updateModelNote() {
  model_note_->setText(tr("%1: %2 parameters (Ψ), %3 layers, hidden %4, %5 heads, vocabulary %6.")
                           .arg(model_.label, QString::fromStdString(grouped(model_.shape.parameters())))
                           .arg(model_.shape.layers).arg(model_.shape.hidden).arg(model_.shape.heads)
                           .arg(model_.shape.vocab));
}

void PlannerDialog::chooseModel(int index) {
  const QString key = model_box_->itemData(index).toString();
  try {
    if (key == QStringLiteral("example:gpt3_175b")) setModel(examplePlannerModel(PlannerExample::gpt3_175b), true);
    else if (key == QStringLiteral("example:llama_2_7b")) setModel(examplePlannerModel(PlannerExample::llama_2_7b), true);
    else if (key == QStringLiteral("example:llama_2_70b"))
      setModel(llama70bModel(), true);
    else if (key.startsWith(QStringLiteral("preset:"))) setModel(presetPlannerModel(key.mid(7).toStdString()), true);
    else return;  // an imported file stays as imported
  } catch (const std::exception& e) {
    const QString message = QString::fromStdString(e.what());
    setError([message] { return tr("Could not load the model: %1").arg(message); });
    return;
  }
  replan();
}

void PlannerDialog::showGpt3Layout() {
  showExample(PlannerExample::gpt3_175b);
  EstimateSettings s = settings();
  s.layout[Axis::dp] = 16;
  s.layout[Axis::pp] = 8;
  s.layout[Axis::tp] = 8;
  s.sequence_parallel = false;
  s.precision = Precision::fp16;
  s.micro_batch_size = 1;
  s.seq = 2048;
  s.micro_batches = 96;  // batch 1536 = 1 × dp 16 × 96
  s.recompute = Recompute::full;
  s.zero_stage = 0;
  s.gpus_per_node = 8;
  base_ = s;
  gpu_->setCurrentIndex(std::max(0, gpu_->findText(QStringLiteral("A100-80GB"), Qt::MatchStartsWith)));
  setControls(s, 128);
  replan();
}

void PlannerDialog::showLlama70bLayout() {
  try {
    model_box_->setCurrentIndex(2);
    setModel(llama70bModel(), true);
  } catch (const std::exception& e) {
    const QString message = QString::fromStdString(e.what());
    setError([message] { return tr("Could not load the model: %1").arg(message); });
    return;
  }
  EstimateSettings s = settings();
  s.layout[Axis::dp] = 1;
  s.layout[Axis::pp] = 1;
  s.layout[Axis::tp] = 8;
  s.sequence_parallel = false;
  s.precision = Precision::bf16;
  s.micro_batch_size = 1;
  s.seq = 4096;
  s.micro_batches = 1;
  s.recompute = Recompute::none;
  s.zero_stage = 0;
  s.gpus_per_node = 8;
  base_ = s;
  gpu_->setCurrentIndex(std::max(0, gpu_->findText(QStringLiteral("H100 ("), Qt::MatchStartsWith)));
  setControls(s, 1);
  replan();
}

void PlannerDialog::showExample(PlannerExample example) {
  const int index = example == PlannerExample::gpt3_175b ? 0 : 1;
  model_box_->setCurrentIndex(index);
  chooseModel(index);
}

void PlannerDialog::chooseAndImport() {
  const QStringList paths = QFileDialog::getOpenFileNames(
      this, tr("Import config"), QString(),
      tr("Configs: config.json, DeepSpeed JSON, accelerate YAML (*.json *.yaml *.yml);;All files (*)"));
  if (!paths.isEmpty()) importFiles(paths);
}

bool PlannerDialog::importFiles(const QStringList& paths) {
  PlannerImport imported;
  try {
    imported = importPlannerConfigs(paths, settings());
  } catch (const std::exception& e) {  // ConfigError, FormatError: the message names the file and key
    const QString files = paths.join(QStringLiteral(", "));
    const QString message = QString::fromStdString(e.what());
    setError([files, message] { return tr("Could not import %1: %2. The plan shown is the previous one.").arg(files, message); });
    return false;
  }
  if (imported.model) {
    const QString path = imported.model->label;
    int index = model_box_->findData(QStringLiteral("file:") + path);
    if (index < 0) {
      model_box_->addItem(path, QStringLiteral("file:") + path);
      index = model_box_->count() - 1;
    }
    model_box_->setCurrentIndex(index);
    setModel(std::move(*imported.model), false);
  }
  base_ = imported.settings;
  import_warnings_ = imported.warnings;
  import_origins_ = imported.origins;
  setControls(imported.settings, imported.nodes);
  replan();
  return true;
}

void PlannerDialog::setError(std::function<QString()> text) {
  error_text_ = std::move(text);
  error_->setText(error_text_ ? error_text_() : QString());
  error_->setVisible(static_cast<bool>(error_text_));
}

QString PlannerDialog::errorText() const { return error_text_ ? error_->text() : QString(); }

}  // namespace shardscope::ui
