// SPDX-License-Identifier: GPL-3.0-or-later
// The run's settings as widgets. It produces the same RunConfig the CLI builds
// from the equivalent flags, and validates it with the engine's own
// validate_run_config as the user edits: a bad combination is explained inline
// (naming the fields by their labels here) and problem() is non-empty. Its
// fields, labels, tooltips and ranges come from the run-config schema.
#pragma once

#include <QWidget>
#include <array>
#include <thread>
#include <utility>
#include <vector>

#include "config/run_schema.h"
#include "plan/run_plan.h"
#include "train/devices.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QVBoxLayout;

namespace shardscope::ui {

class SettingsSection;

class ConfigPanel : public QWidget {
  Q_OBJECT

 public:
  // probeDevices: look for GPUs in the background (the device list shows the
  // CPU at once and the GPUs when found); tests pass false and call setDevices.
  explicit ConfigPanel(QWidget* parent = nullptr, bool probeDevices = true);
  ~ConfigPanel() override;

  // The devices to offer: the CPU always; each GPU of the probe (all ranks share
  // it); and one rank per GPU (NCCL) when there are two or more. Where none is
  // usable, a disabled entry says why (the probe's reason).
  void setDevices(const DeviceProbe& probe);

  // The opening preset: gpt-tiny on dp 2 x pp 2 (DDP and a 2-stage 1F1B
  // pipeline, 4 micro-batches), global batch 16, seq 64.
  static RunConfig defaultConfig();

  RunConfig config() const;
  void setConfig(const RunConfig& config);
  // Why the current settings cannot run (the ConfigError text); empty if they can.
  QString problem() const { return problem_; }
  // The label shown beside a setting's widget (by the widget's object name), for tests.
  QString labelText(const QString& objectName) const;
  // The run's GPU profile (the gpu_profile field: the GPU the virtual clock
  // models; empty: none), which the prediction is also checked against, and the
  // verdict shown under the settings: "Fits: ..." / "Does not fit: X GiB
  // predicted per rank > Y GiB (profile)". Informational: the run itself is
  // on the CPU, so it never blocks Run.
  QString gpuProfile() const;
  void setGpuProfile(const QString& name);
  QString fitText() const;
  // "Ranks run as: threads | processes": with processes, Run starts the job
  // through shardscope-cli launch, one process per rank (run_controller.h).
  bool ranksAsProcesses() const;
  void setRanksAsProcesses(bool processes);
  // "Restarts after a failure": how often a run whose rank failed starts again
  // from its latest checkpoint (RunController::setMaxRestarts; launch --max-restarts).
  int maxRestarts() const;
  void setMaxRestarts(int restarts);
  // The settings' folding groups, in the panel's order.
  enum class Section { model_and_data, parallel_layout, precision, clock_and_device };
  static constexpr int kSections = 4;
  SettingsSection* section(Section which) const { return sections_[static_cast<int>(which)]; }

  // The estimator's prediction for the fullest rank of the current settings (-1: cannot model them).
  std::int64_t predictedBytesPerRank() const { return predicted_bytes_; }
  // The estimator's bytes per rank for the run: the panel's own prediction when
  // its config is what the panel shows (no second estimate), else computed with its plan.
  std::vector<MemoryBytes> predictionFor(const RunPlan& run) const;

 protected:
  void changeEvent(QEvent* event) override;

 Q_SIGNALS:
  void changed();

 private:
  QVBoxLayout* buildForm();  // the fields in their sections, in the schema's order, and "Ranks run as"
  void connectEdits();
  void revalidate();
  void updateFit(const RunConfig& c);
  void updateStageSplit(const RunConfig& c);
  void browseData();
  void retranslate();  // every label, item and hint in the current language
  void fillDevices();  // device_'s items from probe_ (kept selection where possible)
  void selectDevice(const std::string& key);

  struct FieldRow {
    const RunField* field;  // config/run_schema.h
    QWidget* widget;        // the field's widget, named by its key
    QLabel* label;
  };
  bool isOwnWidget(const QWidget* widget) const;  // a field widget the panel made itself (model, data, ...)
  QWidget* fieldWidgetByKey(std::string_view key) const;
  template <typename Widget>
  Widget* fieldWidget(std::string_view key) const {
    return qobject_cast<Widget*>(fieldWidgetByKey(key));
  }

  std::array<SettingsSection*, kSections> sections_{};
  std::vector<FieldRow> rows_;  // the schema's labelled fields, in its order
  QComboBox* model_;
  QCheckBox* checkpoint_;
  QLineEdit* data_;
  QPushButton* browse_;
  QLabel* ranks_as_label_;
  QComboBox* ranks_as_;  // data: "threads", "processes"
  QLabel* restarts_label_;
  QSpinBox* restarts_;
  QComboBox* device_;  // data: "cpu", "cuda:N" (all ranks on GPU N), "cuda:each" (a GPU per rank)
  DeviceProbe probe_;
  bool probed_ = false;
  std::string pending_device_;  // a config's device selection waiting for the probe
  std::thread probe_thread_;
  QLabel* fit_label_ = nullptr;
  std::int64_t predicted_bytes_ = -1;
  std::vector<MemoryBytes> prediction_;  // per rank, for prediction_config_
  nlohmann::json prediction_config_;
  QLabel* summary_ = nullptr;
  QLabel* stage_split_ = nullptr;  // the layers per stage, when they do not split evenly
  QLabel* problem_label_;
  QString problem_;
  bool updating_ = false;
};

}  // namespace shardscope::ui
