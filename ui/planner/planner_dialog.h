// SPDX-License-Identifier: GPL-3.0-or-later
// The memory planner (File → Plan memory…, File → Import config…): "will my
// model fit?" before renting GPUs. A model (GPT-3 175B and Llama-2-7B one
// click away, an engine preset, or an imported Hugging Face config.json), a
// DeepSpeed JSON and/or accelerate YAML (the importers of `shardscope-cli
// estimate`), a GPU profile, GPUs per node and nodes, and the run's shape;
// every change re-plans at once: per-GPU stacked bars by ledger category for
// ZeRO stages 0-3 side by side, the formula behind every number and the
// verdict in words. The numbers are compute_estimate's, the CLI's own. Models
// too large to run here are planned, never run.
#pragma once

#include <QDialog>
#include <QThreadPool>

#include <array>
#include <cstdint>
#include <functional>
#include <optional>

#include "planner/planner_estimates.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QPushButton;
class QSlider;
class QSpinBox;
class QTextBrowser;
class QTimer;

namespace shardscope::ui {

class PlannerBars;

class PlannerDialog : public QDialog {
  Q_OBJECT

 public:
  explicit PlannerDialog(QWidget* parent = nullptr);
  ~PlannerDialog() override;  // waits for a plan in progress (its result is dropped)

  // Loads the config files (a config.json, a DeepSpeed JSON, an accelerate
  // YAML, in any mix) and re-plans. On failure the planner shows the engine's
  // message naming the file and key, and the plan shown stays. Returns success.
  bool importFiles(const QStringList& paths);
  void showExample(PlannerExample example);
  // Plans now, on the planner's worker thread (a control's change plans after
  // a short debounce); the result is shown when it arrives.
  void replan();
  bool planning() const { return finished_ < generation_; }
  // Runs the event loop until no plan is pending or running (tests, screenshots).
  bool waitForPlan(int timeout_ms = 120000);

  // What the controls say, as the estimator's settings.
  EstimateSettings settings() const;
  EstimateRequest request() const;
  const std::array<StagePlan, 4>& stages() const { return plans_; }
  const PlannerModel& model() const { return model_; }
  QString verdictText() const;
  QString errorText() const;
  QString modelStatesText() const;
  QString formulaHtml() const;
  PlannerBars* bars() const { return bars_; }
  QComboBox* modelBox() const { return model_box_; }
  QComboBox* gpuBox() const { return gpu_; }
  QSpinBox* gpusPerNodeBox() const { return gpus_per_node_; }
  QSpinBox* nodesBox() const { return nodes_; }
  QSpinBox* dpBox() const { return dp_; }
  QSpinBox* ppBox() const { return pp_; }
  QSpinBox* tpBox() const { return tp_; }
  QSpinBox* cpBox() const { return cp_; }
  QSpinBox* epBox() const { return ep_; }
  QCheckBox* sequenceParallelBox() const { return sp_; }
  QPushButton* gpt3LayoutButton() const { return gpt3_layout_; }
  QPushButton* llama70bLayoutButton() const { return llama70b_layout_; }
  QSpinBox* zeroBox() const { return zero_; }
  QComboBox* precisionBox() const { return precision_; }
  QSpinBox* microBatchBox() const { return micro_batch_; }
  QSlider* microBatchSlider() const { return micro_batch_slider_; }
  QSpinBox* seqBox() const { return seq_; }
  QSlider* seqSlider() const { return seq_slider_; }
  QComboBox* checkpointBox() const { return recompute_; }
  QComboBox* scheduleBox() const { return schedule_; }  // every schedule the engine knows
  QSpinBox* microBatchesBox() const { return micro_batches_; }
  QSpinBox* virtualStagesBox() const { return virtual_stages_; }
  QPushButton* importButton() const { return import_; }

 public Q_SLOTS:
  void chooseAndImport();  // a file dialog, then importFiles

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void buildControls();
  void buildScheduleControls();  // the pipeline's schedule, micro-batches m and virtual stages v
  QWidget* buildSettingsColumn();
  QWidget* buildResultsColumn();
  void connectControls();
  void retranslate();
  void setModel(PlannerModel model, bool reset_seq);
  void chooseModel(int index);
  void setControls(const EstimateSettings& s, int nodes);
  void syncDataParallel();  // dp = GPUs / (pp × tp) when it divides
  // The papers' layouts in one click: GPT-3 175B on 1024 A100s (tp 8 × pp 8 × dp 16, Narayanan
  // et al. 2021) and Llama-2-70B on one node of 8 H100s (tp 8).
  void showGpt3Layout();
  void showLlama70bLayout();
  void updateClusterNote();
  void updateModelNote();
  void setError(std::function<QString()> text);
  struct PlanOutcome {
    std::optional<std::array<StagePlan, 4>> plans;
    QString error;  // when there are no plans: the engine's reason
  };
  void plan(bool clear_error);
  void planFinished(std::uint64_t generation, const PlanOutcome& outcome, bool clear_error);
  void render();
  void renderVerdict();
  void renderFormulas();

  PlannerModel model_;
  // What the controls do not show (accumulation, offload, ...): the last import's. Its values of
  // the controls' settings are the import's too: a note whose setting differs now was overridden.
  EstimateSettings base_;
  std::vector<std::string> import_warnings_;
  std::vector<std::pair<std::string, std::string>> import_origins_;
  std::array<StagePlan, 4> plans_{};
  bool planned_ = false;
  std::function<QString()> error_text_;

  QTimer* debounce_;
  QThreadPool pool_;  // one worker: plans in order, none outlives the dialog
  std::uint64_t generation_ = 0;  // of the newest request; older results are dropped
  // The newest generation whose plan has arrived. Counting plans in flight instead
  // undercounted: pool_.clear() drops a queued plan that then never reports, and a
  // layout button's two plans in a row left the count at 1 for good.
  std::uint64_t finished_ = 0;
  QLabel* planning_;
  QComboBox* model_box_;
  QPushButton* gpt3_;
  QPushButton* llama_;
  QPushButton* import_;
  QLabel* model_note_;
  QComboBox* gpu_;
  QSpinBox* gpus_per_node_;
  QSpinBox* nodes_;
  QSpinBox* dp_;
  QSpinBox* pp_;
  QSpinBox* tp_;
  QSpinBox* cp_;  // context-parallel ranks: a GPU axis beside dp, pp and tp
  QSpinBox* ep_;  // expert-parallel ranks: borrowed from dp (a MoE model)
  QCheckBox* sp_;
  QPushButton* gpt3_layout_;
  QPushButton* llama70b_layout_;
  QLabel* cluster_note_;
  QSpinBox* zero_;
  QComboBox* precision_;
  QSpinBox* micro_batch_;
  QSlider* micro_batch_slider_;
  QSpinBox* seq_;
  QSlider* seq_slider_;
  QComboBox* recompute_;
  QComboBox* schedule_;
  QSpinBox* micro_batches_;
  QSpinBox* virtual_stages_;
  QComboBox* activations_;
  std::vector<std::pair<QLabel*, std::function<QString()>>> labels_;  // re-worded on a language change
  QLabel* error_;
  QLabel* verdict_;
  QLabel* states_;
  PlannerBars* bars_;
  QTextBrowser* formulas_;
};

}  // namespace shardscope::ui
