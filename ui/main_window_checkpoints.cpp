// SPDX-License-Identifier: GPL-3.0-or-later
// File → Save checkpoints… and Resume from checkpoint…: the GUI's side of
// `--save-dir` and `--resume` (engine/train/checkpoint.h). A chosen folder
// holds a step directory of every run from then on, written when the run ends
// or is stopped (between steps, so the ranks agree); a chosen checkpoint is
// resumed by the next run only, which must run past its step.
#include <QAction>
#include <QFileDialog>
#include <QInputDialog>
#include <QMenu>

#include "config/run_schema.h"
#include "config_panel.h"
#include "main_window.h"
#include "train/checkpoint.h"

namespace shardscope::ui {

void MainWindow::buildCheckpointUi() {
  file_menu_->addSeparator();
  save_checkpoints_action_ = file_menu_->addAction(QString());
  save_checkpoints_action_->setObjectName(QStringLiteral("saveCheckpoints"));
  resume_action_ = file_menu_->addAction(QString());
  resume_action_->setObjectName(QStringLiteral("resumeFromCheckpoint"));
  connect(save_checkpoints_action_, &QAction::triggered, this, &MainWindow::chooseCheckpointDir);
  connect(resume_action_, &QAction::triggered, this, &MainWindow::chooseResume);
}

void MainWindow::retranslateCheckpointUi() {
  save_checkpoints_action_->setText(tr("Save &checkpoints to..."));
  resume_action_->setText(tr("Res&ume from checkpoint..."));
}

void MainWindow::chooseCheckpointDir() {
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Save checkpoints to"), checkpoint_dir_);
  if (dir.isEmpty()) return;
  bool ok = false;
  const int every = QInputDialog::getInt(
      this, tr("Save checkpoints to"),
      tr("Also save every N steps (0: only when a run ends or is stopped).\nA restart after a failure resumes from "
         "the latest one, so it repeats at most N − 1 finished steps."),
      checkpoint_every_, 0, 1'000'000, 1, &ok);
  if (ok) setCheckpointDir(dir, every);
}

void MainWindow::setCheckpointDir(const QString& dir, int every) {
  checkpoint_dir_ = dir;
  checkpoint_every_ = dir.isEmpty() ? 0 : every;
  setStatus([this, dir, every] {
    if (every > 0)
      return tr("Every run will save its training state and its Hugging Face weights to %1 every %2 steps and "
                "when it ends or is stopped (a step-NNNNNN folder each time).")
          .arg(dir)
          .arg(every);
    return tr("Every run will save its training state and its Hugging Face weights to %1 when it ends or is "
              "stopped (a step-NNNNNN folder each time).")
        .arg(dir);
  });
}

void MainWindow::chooseResume() {
  const QString dir = QFileDialog::getExistingDirectory(
      this, tr("Resume from checkpoint (a step-NNNNNN folder, or the folder that holds them)"), checkpoint_dir_);
  if (!dir.isEmpty()) setResumeFrom(dir);
}

// The step directory and its manifest's step, or the reason it is none.
bool MainWindow::setResumeFrom(const QString& path) {
  try {
    const std::string dir = find_checkpoint_dir(path.toStdString(), "Resume from checkpoint");
    const CheckpointManifest manifest = read_checkpoint_manifest(dir);  // refuses a FIFO, which would block the window
    resume_dir_ = QString::fromStdString(dir);
    const auto step = static_cast<qlonglong>(manifest.step);
    setStatus([this, step] {
      return tr("The next run resumes from step %1 of %2 (set Steps above %1; the model and seed must be the "
                "saved ones, the layout may change).")
          .arg(step)
          .arg(resume_dir_);
    });
    return true;
  } catch (const std::exception& e) {
    const QString reason = QString::fromUtf8(e.what());
    setStatus([this, reason] { return tr("Not a checkpoint: %1").arg(reason); });
    appendLog(statusText(), true);
    return false;
  }
}

RunConfig MainWindow::runConfigToStart() {
  RunConfig config = panel_->config();
  for (const auto& [key, value] : file_settings_) set_field(config, run_field(key), value);  // an opened config's
  config.save_dir = checkpoint_dir_.toStdString();
  config.save_every = checkpoint_every_;
  config.resume_dir = resume_dir_.toStdString();
  resume_dir_.clear();  // a resume is for one run; the checkpoint folder stays
  return config;
}

}  // namespace shardscope::ui
