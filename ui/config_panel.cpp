// SPDX-License-Identifier: GPL-3.0-or-later
#include "config_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QVBoxLayout>
#include <algorithm>
#include <exception>

#include "byte_text.h"
#include "config/gpu_profiles.h"
#include "config/lesson_file.h"
#include "estimate/estimate_settings.h"
#include "estimate/memory_model.h"
#include "estimate/model_shape.h"
#include "field_widgets.h"
#include "model/model_config.h"
#include "plan/schedule_file.h"
#include "schedule_names.h"
#include "settings_section.h"
#include "train/metrics_json.h"

namespace shardscope::ui {

RunConfig ConfigPanel::defaultConfig() { return panel_default_config(); }

ConfigPanel::ConfigPanel(QWidget* parent, bool probeDevices) : QWidget(parent) {
  QVBoxLayout* form = buildForm();
  retranslate();
  summary_ = new QLabel(this);
  summary_->setObjectName(QStringLiteral("summary"));
  summary_->setWordWrap(true);
  stage_split_ = new QLabel(this);
  stage_split_->setObjectName(QStringLiteral("stageSplit"));
  stage_split_->setWordWrap(true);
  stage_split_->hide();
  fit_label_ = new QLabel(this);
  fit_label_->setObjectName(QStringLiteral("fit"));
  fit_label_->setWordWrap(true);
  problem_label_ = new QLabel(this);
  problem_label_->setObjectName(QStringLiteral("problem"));
  problem_label_->setWordWrap(true);
  problem_label_->setStyleSheet(QStringLiteral("color: #b00020;"));

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(form);
  layout->addWidget(summary_);
  layout->addWidget(stage_split_);
  layout->addWidget(fit_label_);
  layout->addWidget(problem_label_);
  layout->addStretch(1);

  fillDevices();
  setConfig(defaultConfig());
  connectEdits();
  if (probeDevices) {
    // Loading the CUDA plugin and starting the driver can take a second: off
    // the UI thread. The result comes back as a queued call, dropped if the
    // panel is gone (the destructor joins the thread first).
    probe_thread_ = std::thread([this] {
      DeviceProbe probe = probe_training_devices();
      QMetaObject::invokeMethod(
          this, [this, probe] { setDevices(probe); }, Qt::QueuedConnection);
    });
  }
}

namespace {

// The section a setting sits in: what a lesson asks to change first (the
// model, the layout, the precision) apart from how the run is clocked and
// where it runs. A field not named here is about the model and its data.
ConfigPanel::Section sectionOf(std::string_view key) {
  using S = ConfigPanel::Section;
  for (std::string_view k :
       {"ranks", "dp", "tp", "sequence_parallel", "cp", "cp_split", "ep", "pp", "micro_batches", "schedule",
        "virtual_stages", "schedule_file", "dp_mode", "zero", "accum", "checkpoint", "bucket_mb"})
    if (key == k) return S::parallel_layout;
  if (key == "precision" || key == "loss_scaler" || key == "loss_scale" || key == "initial_scale_power" ||
      key == "scale_window" || key == "hysteresis" || key == "min_loss_scale" || key == "inject_overflow")
    return S::precision;
  for (std::string_view k : {"threads", "clock", "link", "gpu_profile", "collectives", "comm_timeout",
                             "heartbeat_timeout", "device", "gpus", "profile_ops", "slow_rank", "inject_failure"})
    if (key == k) return S::clock_and_device;
  return S::model_and_data;
}

}  // namespace

// The fields the panel draws itself: model and device lists, a file with
// Browse, checkpointing as a check box. Every other labelled field of the
// run-config schema gets the widget of its kind (ui/field_widgets.h). The rows
// go into four folding sections, each in the schema's order.
QVBoxLayout* ConfigPanel::buildForm() {
  model_ = new QComboBox(this);
  model_->setObjectName(QStringLiteral("model"));
  for (const auto& preset : model_presets()) model_->addItem(QString::fromStdString(preset.name));
  checkpoint_ = new QCheckBox(this);
  checkpoint_->setObjectName(QStringLiteral("checkpoint"));
  data_ = new QLineEdit(this);
  data_->setObjectName(QStringLiteral("data"));
  browse_ = new QPushButton(this);
  browse_->setObjectName(QStringLiteral("browseData"));
  auto* dataField = new QWidget(this);
  auto* dataRow = new QHBoxLayout(dataField);
  dataRow->setContentsMargins(0, 0, 0, 0);
  dataRow->addWidget(data_, 1);
  dataRow->addWidget(browse_);
  device_ = new QComboBox(this);
  device_->setObjectName(QStringLiteral("device"));

  auto* layout = new QVBoxLayout;
  layout->setContentsMargins(0, 0, 0, 0);
  for (auto*& section : sections_) {
    section = new SettingsSection(this);
    layout->addWidget(section);
  }
  for (const RunField& field : run_fields()) {
    if (field.label.empty()) continue;
    QWidget* widget = field.key == "model"        ? model_
                      : field.key == "data"       ? data_
                      : field.key == "checkpoint" ? static_cast<QWidget*>(checkpoint_)
                      : field.key == "device"     ? device_
                                                  : makeFieldWidget(field, this);
    auto* label = new QLabel(this);
    label->setBuddy(widget);
    section(sectionOf(field.key))->form()->addRow(label, widget == data_ ? dataField : widget);
    rows_.push_back({&field, widget, label});
  }
  ranks_as_ = new QComboBox(this);
  ranks_as_->setObjectName(QStringLiteral("ranksAs"));
  ranks_as_->addItem(QString(), QStringLiteral("threads"));
  ranks_as_->addItem(QString(), QStringLiteral("processes"));
  ranks_as_label_ = new QLabel(this);
  ranks_as_label_->setBuddy(ranks_as_);
  section(Section::clock_and_device)->form()->addRow(ranks_as_label_, ranks_as_);
  restarts_ = new QSpinBox(this);
  restarts_->setObjectName(QStringLiteral("maxRestarts"));
  restarts_->setRange(0, 100);
  restarts_label_ = new QLabel(this);
  restarts_label_->setBuddy(restarts_);
  section(Section::clock_and_device)->form()->addRow(restarts_label_, restarts_);
  if (auto* schedule = fieldWidget<QComboBox>("schedule"))  // every schedule the schema lists, by its usual name
    for (int i = 0; i < schedule->count(); ++i)
      schedule->setItemText(i, scheduleDisplayName(schedule->itemData(i).toString()));
  if (auto* power = fieldWidget<QSpinBox>("initial_scale_power")) power->setPrefix(QStringLiteral("2^"));
  ignoreWheelOnUnfocusedFields(this);
  return layout;
}

// Every edit revalidates (not while setConfig fills the fields); Browse picks the data file.
void ConfigPanel::connectEdits() {
  auto onEdit = [this] {
    if (!updating_) revalidate();
  };
  connect(model_, &QComboBox::currentIndexChanged, this, onEdit);
  connect(ranks_as_, &QComboBox::currentIndexChanged, this, onEdit);
  connect(device_, &QComboBox::currentIndexChanged, this, onEdit);
  for (const FieldRow& row : rows_)
    if (!isOwnWidget(row.widget)) onFieldWidgetEdited(*row.field, row.widget, this, onEdit);
  connect(data_, &QLineEdit::textChanged, this, onEdit);
  connect(browse_, &QPushButton::clicked, this, &ConfigPanel::browseData);
  connect(checkpoint_, &QCheckBox::toggled, this, onEdit);
}

bool ConfigPanel::isOwnWidget(const QWidget* widget) const {
  return widget == model_ || widget == data_ || widget == checkpoint_ || widget == device_;
}

QWidget* ConfigPanel::fieldWidgetByKey(std::string_view key) const {
  for (const FieldRow& row : rows_)
    if (row.field->key == key) return row.widget;
  return nullptr;
}

ConfigPanel::~ConfigPanel() {
  if (probe_thread_.joinable()) probe_thread_.join();
}

void ConfigPanel::setDevices(const DeviceProbe& probe) {
  probe_ = probe;
  probed_ = true;
  fillDevices();
  if (!pending_device_.empty()) selectDevice(pending_device_);
  revalidate();
}

void ConfigPanel::fillDevices() {
  const QString current = device_->currentData().toString();
  const bool wasUpdating = updating_;
  updating_ = true;
  device_->clear();
  device_->addItem(tr("CPU: simulated ranks"), QStringLiteral("cpu"));
  for (const DeviceInfo& gpu : probe_.gpus)
    device_->addItem(tr("GPU %1: %2 (%3), all ranks share it")
                         .arg(gpu.index)
                         .arg(QString::fromStdString(gpu.name))
                         .arg(byteText(static_cast<std::int64_t>(gpu.total_bytes))),
                     QStringLiteral("cuda:%1").arg(gpu.index));
  if (probe_.gpus.size() >= 2)
    device_->addItem(tr("One rank per GPU (%n GPU(s), NCCL)", nullptr, static_cast<int>(probe_.gpus.size())),
                     QStringLiteral("cuda:each"));
  if (!probe_.available()) {
    device_->addItem(probed_ ? tr("No GPU: %1").arg(QString::fromStdString(probe_.reason)) : tr("Looking for GPUs..."),
                     QString());
    // Shown, not selectable: it says why there is no GPU to pick.
    if (auto* model = qobject_cast<QStandardItemModel*>(device_->model()))
      model->item(device_->count() - 1)->setEnabled(false);
  }
  const int keep = device_->findData(current);
  device_->setCurrentIndex(keep >= 0 ? keep : 0);
  updating_ = wasUpdating;
}

void ConfigPanel::selectDevice(const std::string& key) {
  const int index = device_->findData(QString::fromStdString(key));
  if (index >= 0) {
    device_->setCurrentIndex(index);
    pending_device_.clear();
  } else if (!probed_) {
    pending_device_ = key;  // set when the probe reports the GPUs
  } else {
    pending_device_.clear();  // this machine does not have it: the CPU
    device_->setCurrentIndex(0);
  }
}

void ConfigPanel::retranslate() {
  for (const FieldRow& row : rows_) {
    row.label->setText(fieldLabel(*row.field));
    row.widget->setToolTip(fieldHelp(*row.field));
  }
  section(Section::model_and_data)->setTitle(tr("Model and data"));
  section(Section::parallel_layout)->setTitle(tr("Parallel layout"));
  section(Section::precision)->setTitle(tr("Precision"));
  section(Section::clock_and_device)->setTitle(tr("Clock and device"));
  ranks_as_label_->setText(tr("Ranks run as"));
  ranks_as_->setItemText(0, tr("threads"));
  ranks_as_->setItemText(1, tr("processes"));
  ranks_as_->setToolTip(tr("threads: every rank in this program; processes: one process per rank, started "
                           "with shardscope-cli launch (mpirun), their events streamed back here"));
  restarts_label_->setText(tr("Restarts after a failure"));
  restarts_->setSpecialValueText(tr("none"));
  restarts_->setToolTip(
      tr("When a rank fails (or its process dies or freezes), start the run again from the latest "
         "checkpoint (File → Save checkpoints to...), at most this many times, as torchrun's "
         "--max-restarts does"));
  if (auto* mode = fieldWidget<QComboBox>("dp_mode")) {
    mode->setItemText(mode->findData(QStringLiteral("ddp")), tr("DDP (ring all-reduce)"));
    mode->setItemText(mode->findData(QStringLiteral("naive")), tr("DataParallel (naive, rank 0 master)"));
  }
  checkpoint_->setText(tr("Recompute each layer in backward"));
  if (auto* sp = fieldWidget<QCheckBox>("sequence_parallel")) sp->setText(tr("LayerNorms on seq / tp tokens"));
  data_->setPlaceholderText(tr("Empty: the shipped corpus (English + Chinese)"));
  browse_->setText(tr("Browse..."));
  if (auto* file = fieldWidget<QLineEdit>("schedule_file"))
    file->setPlaceholderText(tr("None (File → Open schedule...)"));
  if (auto* every = fieldWidget<QSpinBox>("eval_every")) every->setSpecialValueText(tr("never"));
  if (auto* gpu = fieldWidget<QComboBox>("gpu_profile")) {
    // The schema's help says what the clock does with it; the fit check is the panel's own.
    gpu->setItemText(gpu->findData(QStringLiteral("none")), tr("none"));
    gpu->setToolTip(fieldHelp(run_field("gpu_profile")) + QStringLiteral("\n") +
                    tr("Checks the estimator's prediction against this GPU's memory; with none, a GPU run is "
                       "checked against the GPU chosen above. It is advice: it never blocks Run."));
  }
  if (device_->count() > 0) fillDevices();
}

void ConfigPanel::changeEvent(QEvent* event) {
  if (event->type() == QEvent::LanguageChange) {
    retranslate();
    if (summary_ != nullptr) revalidate();  // the summary and the reason, re-worded
  }
  QWidget::changeEvent(event);
}

QString ConfigPanel::labelText(const QString& objectName) const {
  for (const FieldRow& row : rows_)
    if (row.widget->objectName() == objectName) return row.label->text();
  return ranks_as_->objectName() == objectName ? ranks_as_label_->text() : QString();
}

bool ConfigPanel::ranksAsProcesses() const { return ranks_as_->currentIndex() == 1; }
void ConfigPanel::setRanksAsProcesses(bool processes) { ranks_as_->setCurrentIndex(processes ? 1 : 0); }
int ConfigPanel::maxRestarts() const {
  return restarts_->value();
}
void ConfigPanel::setMaxRestarts(int restarts) {
  restarts_->setValue(restarts);
}

RunConfig ConfigPanel::config() const {
  RunConfig c;  // every field the panel does not show keeps the CLI's default
  for (const FieldRow& row : rows_)
    if (!isOwnWidget(row.widget)) row.field->set(c, fieldWidgetValue(*row.field, row.widget));
  c.model = model_->currentText().toStdString();
  c.checkpoint = checkpoint_->isChecked();
  c.data = data_->text().trimmed().toStdString();
  if (c.precision != Precision::fp16) c.initial_scale_power = RunConfig{}.initial_scale_power;  // fp16's knob
  const QString device = device_->currentData().toString();
  if (device.startsWith(QLatin1String("cuda:"))) {
    c.device = "cuda";
    if (device == QLatin1String("cuda:each")) {
      c.gpus.clear();
      for (int r = 0; r < c.world_size(); ++r) c.gpus.push_back(r);
    } else {
      c.gpus = {device.mid(5).toInt()};
    }
  }
  return c;
}

void ConfigPanel::setConfig(const RunConfig& c) {
  updating_ = true;
  for (const FieldRow& row : rows_)
    if (!isOwnWidget(row.widget)) setFieldWidgetValue(*row.field, row.widget, row.field->get(c));
  const int index = model_->findText(QString::fromStdString(c.model));
  model_->setCurrentIndex(index >= 0 ? index : 0);
  checkpoint_->setChecked(c.checkpoint);
  data_->setText(QString::fromStdString(c.data));
  if (c.device != "cuda")
    selectDevice("cpu");
  else if (c.gpus.size() > 1)
    selectDevice("cuda:each");
  else
    selectDevice("cuda:" + std::to_string(c.gpus.empty() ? 0 : c.gpus.front()));
  updating_ = false;
  revalidate();
}

void ConfigPanel::revalidate() {
  const RunConfig c = config();
  if (QWidget* power = fieldWidgetByKey("initial_scale_power")) power->setEnabled(c.precision == Precision::fp16);
  // A schedule file replaces the list; v is interleaved 1F1B's alone (the file says its own chunks).
  if (QWidget* schedule = fieldWidgetByKey("schedule")) schedule->setEnabled(c.schedule_file.empty());
  if (QWidget* v = fieldWidgetByKey("virtual_stages"))
    v->setEnabled(c.schedule_file.empty() && c.schedule == PipelineScheduleKind::interleaved_1f1b);
  try {
    validate_run_config(c);
    if (!c.schedule_file.empty()) validate_schedule_file(c);  // the engine's reader: rank and action named
    problem_.clear();
    if (c.device == "cuda" && c.gpus.size() > probe_.gpus.size())
      problem_ = tr("one rank per GPU needs %1 GPUs (dp \u00d7 pp); this machine has %2")
                     .arg(c.gpus.size())
                     .arg(probe_.gpus.size());
    if (!c.data.empty()) {
      // The engine would fail on the worker; say it here, naming the file.
      const QFileInfo file(QString::fromStdString(c.data));
      if (!file.exists())
        problem_ = tr("the data file %1 does not exist").arg(file.filePath());
      else if (!file.isFile() || !file.isReadable())
        problem_ = tr("the data file %1 cannot be read").arg(file.filePath());
    }
  } catch (const FieldError& e) {
    problem_ = panelText(e);  // the fields by their labels here
  } catch (const std::exception& e) {
    problem_ = QString::fromStdString(e.what());
  }
  if (problem_.isEmpty()) {
    summary_->setText(tr("%n rank(s): dp %1 \u00d7 tp %2 \u00d7 pp %3; each rank runs micro-batches of %4 sequence(s).",
                         nullptr, c.world_size())
                          .arg(c.layout.dp())
                          .arg(c.layout.tp())
                          .arg(c.layout.pp())
                          .arg(c.micro_batch_size()));
    problem_label_->clear();
    problem_label_->hide();
  } else {
    summary_->setText(tr("%n rank(s): dp %1 \u00d7 tp %2 \u00d7 pp %3.", nullptr, c.world_size())
                          .arg(c.layout.dp())
                          .arg(c.layout.tp())
                          .arg(c.layout.pp()));
    problem_label_->setText(tr("Cannot run: %1").arg(problem_));
    problem_label_->show();
  }
  updateStageSplit(c);
  updateFit(c);
  Q_EMIT changed();
}

// Layers that do not divide over the stages (model/model_config.h's split: the
// earlier stages take one more): the stages with fewer layers wait for the
// slowest every micro-batch, which the bubble line counts as stage imbalance.
void ConfigPanel::updateStageSplit(const RunConfig& c) {
  QString note;
  if (problem_.isEmpty() && c.layout.pp() > 1) {
    try {
      const ModelConfig model = run_model_config(c);
      if (model.layers % c.layout.pp() != 0) {
        QStringList split;
        for (int s = 0; s < c.layout.pp(); ++s) split << QString::number(pipeline_stage_layers(model, c.layout.pp(), s).layer_count());
        note = tr("The model's %1 layers do not split evenly over %2 stages (%3 layers): the stages with fewer "
                  "layers wait for the slowest one, and the bubble line counts that wait as stage imbalance.")
                   .arg(model.layers)
                   .arg(c.layout.pp())
                   .arg(split.join(QLatin1Char('/')));
      }
    } catch (const std::exception&) {  // a model the engine cannot read: the problem line says why
    }
  }
  stage_split_->setText(note);
  stage_split_->setVisible(!note.isEmpty());
}

std::vector<MemoryBytes> ConfigPanel::predictionFor(const RunPlan& run) const {
  return run_config_to_json(run.config()) == prediction_config_ ? prediction_
                                                                : predict_run_memory(run.config(), run.sharding());
}

QString ConfigPanel::gpuProfile() const {
  const QString name = QString::fromStdString(config().gpu_profile);
  return name == QLatin1String("none") ? QString() : name;
}

void ConfigPanel::setGpuProfile(const QString& name) {
  auto* gpu = fieldWidget<QComboBox>("gpu_profile");
  gpu->setCurrentIndex(std::max(0, gpu->findData(name.isEmpty() ? QStringLiteral("none") : name)));
}

QString ConfigPanel::fitText() const {
  return fit_label_->isHidden() ? QString() : fit_label_->text();
}

void ConfigPanel::updateFit(const RunConfig& c) {
  // Once per edit: the run started from these settings reuses it (predictionFor).
  prediction_ = predict_run_memory(c);
  prediction_config_ = run_config_to_json(c);
  predicted_bytes_ = -1;
  std::int64_t all_ranks = -1;  // stays -1 for settings the estimator cannot model (the problem line says why)
  for (const MemoryBytes& rank : prediction_) {
    predicted_bytes_ = std::max(predicted_bytes_, rank.total());
    all_ranks = std::max<std::int64_t>(all_ranks, 0) + rank.total();
  }
  // Against the chosen profile; else, for a GPU run, against the GPU itself:
  // ranks sharing one GPU share its memory, one rank per GPU has its own.
  QString name = gpuProfile();
  std::int64_t capacity_bytes = 0, predicted_bytes = predicted_bytes_;
  bool shared_gpu = false;
  if (!name.isEmpty()) {
    capacity_bytes = find_gpu_profile(name.toStdString()).memory_bytes;
  } else if (c.device == "cuda" && !c.gpus.empty()) {
    for (const DeviceInfo& gpu : probe_.gpus)
      if (gpu.index == c.gpus.front()) {
        capacity_bytes = static_cast<std::int64_t>(gpu.total_bytes);
        name = c.gpus.size() > 1 ? tr("GPU %1 and the others").arg(gpu.index)
                                 : tr("GPU %1: %2").arg(gpu.index).arg(QString::fromStdString(gpu.name));
      }
    shared_gpu = c.gpus.size() == 1 && c.world_size() > 1;
    if (shared_gpu) predicted_bytes = all_ranks;
  }
  if (capacity_bytes <= 0 || predicted_bytes < 0) {
    fit_label_->clear();
    fit_label_->hide();
    return;
  }
  const bool fits = predicted_bytes <= capacity_bytes;
  if (shared_gpu) {
    fit_label_->setText((fits ? tr("Fits: %1 predicted for all %2 ranks ≤ %3 (%4)")
                              : tr("Does not fit: %1 predicted for all %2 ranks > %3 (%4)"))
                            .arg(byteText(predicted_bytes))
                            .arg(c.world_size())
                            .arg(byteText(capacity_bytes))
                            .arg(name));
  } else {
    fit_label_->setText((fits ? tr("Fits: %1 predicted per rank ≤ %2 (%3)")
                              : tr("Does not fit: %1 predicted per rank > %2 (%3)"))
                            .arg(byteText(predicted_bytes))
                            .arg(byteText(capacity_bytes))
                            .arg(name));
  }
  fit_label_->setStyleSheet(fits ? QStringLiteral("color: #1b7f3b;") : QStringLiteral("color: #b00020;"));
  fit_label_->show();
}

void ConfigPanel::browseData() {
  const QString path =
      QFileDialog::getOpenFileName(this, tr("Training text"), data_->text(), tr("Text files (*.txt);;All files (*)"));
  if (!path.isEmpty()) data_->setText(path);
}

}  // namespace shardscope::ui
