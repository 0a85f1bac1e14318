// SPDX-License-Identifier: GPL-3.0-or-later
#include "config_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QSpinBox>
#include <QVBoxLayout>

#include <exception>

#include "model/model_config.h"

namespace shardscope::ui {

namespace {

QSpinBox* makeSpin(QWidget* parent, const char* name, int min, int max) {
  auto* spin = new QSpinBox(parent);
  spin->setObjectName(QString::fromLatin1(name));
  spin->setRange(min, max);
  return spin;
}

}  // namespace

RunConfig ConfigPanel::defaultConfig() {
  RunConfig c;
  c.model = "gpt-tiny";
  c.steps = 200;
  c.batch = 16;
  c.seq = 64;
  c.dp = 2;
  c.pp = 2;
  c.dp_mode = DataParallelMode::ddp;
  c.schedule = PipelineScheduleKind::one_f_one_b;
  c.micro_batches = 4;
  c.accum = 1;
  return c;
}

ConfigPanel::ConfigPanel(QWidget* parent) : QWidget(parent) {
  model_ = new QComboBox(this);
  model_->setObjectName(QStringLiteral("model"));
  for (const auto& preset : model_presets()) model_->addItem(QString::fromStdString(preset.name));
  steps_ = makeSpin(this, "steps", 1, 100'000'000);
  batch_ = makeSpin(this, "batch", 1, 1'000'000);
  seq_ = makeSpin(this, "seq", 1, 1'000'000);
  lr_ = new QDoubleSpinBox(this);
  lr_->setObjectName(QStringLiteral("lr"));
  lr_->setDecimals(6);
  lr_->setRange(0.000001, 10.0);
  lr_->setSingleStep(0.0001);
  dp_ = makeSpin(this, "dp", 1, 64);
  pp_ = makeSpin(this, "pp", 1, 1024);
  dp_mode_ = new QComboBox(this);
  dp_mode_->setObjectName(QStringLiteral("dp_mode"));
  dp_mode_->addItem(tr("DDP (ring all-reduce)"), QStringLiteral("ddp"));
  dp_mode_->addItem(tr("DataParallel (naive, rank 0 master)"), QStringLiteral("naive"));
  zero_ = makeSpin(this, "zero", 0, 3);
  schedule_ = new QComboBox(this);
  schedule_->setObjectName(QStringLiteral("schedule"));
  schedule_->addItem(tr("1F1B"), QStringLiteral("1f1b"));
  schedule_->addItem(tr("GPipe"), QStringLiteral("gpipe"));
  micro_batches_ = makeSpin(this, "micro_batches", 1, 1'000'000);
  accum_ = makeSpin(this, "accum", 1, 1'000'000);
  checkpoint_ = new QCheckBox(tr("Recompute each layer in backward"), this);
  checkpoint_->setObjectName(QStringLiteral("checkpoint"));

  auto* form = new QFormLayout;
  form->addRow(tr("Model"), model_);
  form->addRow(tr("Steps"), steps_);
  form->addRow(tr("Global batch"), batch_);
  form->addRow(tr("Sequence length"), seq_);
  form->addRow(tr("Learning rate"), lr_);
  form->addRow(tr("Data-parallel ranks"), dp_);
  form->addRow(tr("Pipeline stages"), pp_);
  form->addRow(tr("Data-parallel mode"), dp_mode_);
  form->addRow(tr("ZeRO stage"), zero_);
  form->addRow(tr("Pipeline schedule"), schedule_);
  form->addRow(tr("Micro-batches"), micro_batches_);
  form->addRow(tr("Accumulation steps"), accum_);
  form->addRow(tr("Activation checkpointing"), checkpoint_);

  summary_ = new QLabel(this);
  summary_->setObjectName(QStringLiteral("summary"));
  summary_->setWordWrap(true);
  problem_label_ = new QLabel(this);
  problem_label_->setObjectName(QStringLiteral("problem"));
  problem_label_->setWordWrap(true);
  problem_label_->setStyleSheet(QStringLiteral("color: #b00020;"));

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(form);
  layout->addWidget(summary_);
  layout->addWidget(problem_label_);
  layout->addStretch(1);

  setConfig(defaultConfig());

  auto onEdit = [this] { if (!updating_) revalidate(); };
  connect(model_, &QComboBox::currentIndexChanged, this, onEdit);
  connect(dp_mode_, &QComboBox::currentIndexChanged, this, onEdit);
  connect(schedule_, &QComboBox::currentIndexChanged, this, onEdit);
  for (QSpinBox* spin : {steps_, batch_, seq_, dp_, pp_, zero_, micro_batches_, accum_})
    connect(spin, &QSpinBox::valueChanged, this, onEdit);
  connect(lr_, &QDoubleSpinBox::valueChanged, this, onEdit);
  connect(checkpoint_, &QCheckBox::toggled, this, onEdit);
}

RunConfig ConfigPanel::config() const {
  RunConfig c;  // every field the panel does not show keeps the CLI's default
  c.model = model_->currentText().toStdString();
  c.steps = steps_->value();
  c.batch = batch_->value();
  c.seq = seq_->value();
  c.lr = static_cast<float>(lr_->value());
  c.dp = dp_->value();
  c.pp = pp_->value();
  c.dp_mode = dp_mode_->currentData().toString() == QLatin1String("naive") ? DataParallelMode::naive
                                                                           : DataParallelMode::ddp;
  c.zero_stage = zero_->value();
  c.schedule = schedule_->currentData().toString() == QLatin1String("gpipe") ? PipelineScheduleKind::gpipe
                                                                             : PipelineScheduleKind::one_f_one_b;
  c.micro_batches = micro_batches_->value();
  c.accum = accum_->value();
  c.checkpoint = checkpoint_->isChecked();
  return c;
}

void ConfigPanel::setConfig(const RunConfig& c) {
  updating_ = true;
  const int index = model_->findText(QString::fromStdString(c.model));
  model_->setCurrentIndex(index >= 0 ? index : 0);
  steps_->setValue(static_cast<int>(c.steps));
  batch_->setValue(c.batch);
  seq_->setValue(c.seq);
  lr_->setValue(static_cast<double>(c.lr));
  dp_->setValue(c.dp);
  pp_->setValue(c.pp);
  dp_mode_->setCurrentIndex(dp_mode_->findData(c.dp_mode == DataParallelMode::naive ? QStringLiteral("naive")
                                                                                      : QStringLiteral("ddp")));
  zero_->setValue(c.zero_stage);
  schedule_->setCurrentIndex(schedule_->findData(
      c.schedule == PipelineScheduleKind::gpipe ? QStringLiteral("gpipe") : QStringLiteral("1f1b")));
  micro_batches_->setValue(c.micro_batches);
  accum_->setValue(c.accum);
  checkpoint_->setChecked(c.checkpoint);
  updating_ = false;
  revalidate();
}

void ConfigPanel::revalidate() {
  const RunConfig c = config();
  try {
    validate_run_config(c);
    problem_.clear();
  } catch (const std::exception& e) {
    problem_ = QString::fromStdString(e.what());
  }
  if (problem_.isEmpty()) {
    summary_->setText(tr("%n rank(s): dp %1 \u00d7 pp %2; each rank runs micro-batches of %3 sequence(s).", nullptr,
                         c.world_size())
                          .arg(c.dp)
                          .arg(c.pp)
                          .arg(c.micro_batch()));
    problem_label_->clear();
    problem_label_->hide();
  } else {
    summary_->setText(tr("%n rank(s): dp %1 \u00d7 pp %2.", nullptr, c.world_size()).arg(c.dp).arg(c.pp));
    problem_label_->setText(tr("Cannot run: %1").arg(problem_));
    problem_label_->show();
  }
  Q_EMIT changed();
}

}  // namespace shardscope::ui
