// SPDX-License-Identifier: GPL-3.0-or-later
// MainWindow, part 2: the drained engine events dispatched to the plots, the
// memory bars, the tab views, the status line and the log.
#include <QLabel>
#include <QPlainTextEdit>

#include <spdlog/logger.h>

#include "log_sink.h"
#include "main_window.h"
#include "recording_controller.h"
#include "views/event_view.h"
#include "views/loss_plot.h"
#include "views/memory_bars.h"

namespace shardscope::ui {

void MainWindow::onEvents(const std::vector<Event>& events) {
  const Event* last_metrics = nullptr;
  for (const Event& e : events) {
    switch (e.kind) {
      case EventKind::step_metrics:
        loss_->addTrainLoss(static_cast<double>(e.step), static_cast<double>(e.loss));
        if (e.has_eval_loss) loss_->addEvalLoss(static_cast<double>(e.step), static_cast<double>(e.eval_loss));
        last_metrics = &e;
        break;
      case EventKind::memory_sample:
        memory_->setSample(e.rank, e.memory, e.memory_peak);
        if (e.device < 0 && e.process_resident_bytes > 0)
          memory_->setProcessMemory(e.process_resident_bytes, e.process_peak_resident_bytes);
        if (e.device >= 0)
          memory_->setDeviceUsage(
              e.rank, DeviceUsage{e.device, e.device_used_bytes, e.device_total_bytes, e.device_reserved_bytes});
        break;
      case EventKind::log:
      case EventKind::overflow:
        logEvent(e);
        break;
      case EventKind::error: {
        logEvent(e);
        const QString text = QString::fromUtf8(e.text_view().data(), static_cast<qsizetype>(e.text_view().size()));
        setStatus([this, text] { return tr("Error: %1").arg(text); });
        had_error_ = true;
        break;
      }
      default:
        break;
    }
  }
  if (last_metrics != nullptr && last_metrics->step > last_completed_step_) {
    last_completed_step_ = last_metrics->step;
    updateControls();  // "One step, slowly" has a step to draw
  }
  if (last_metrics != nullptr && !had_error_) {
    const std::int64_t step = last_metrics->step, total = total_steps_;
    const double loss = static_cast<double>(last_metrics->loss);
    const double tokens_per_s = static_cast<double>(last_metrics->tokens_per_s);
    setStatus([this, step, total, loss, tokens_per_s] {
      return tr("Step %1 of %2: loss %3, %4 tokens/s")
          .arg(step)
          .arg(total)
          .arg(loss, 0, 'f', 4)
          .arg(tokens_per_s, 0, 'f', 0);
    });
  }
  for (EventView* view : views_) {
    view->consume(events);
    view->refresh();
  }
  loss_->replot();
  memory_->replot();
}

void MainWindow::onFinished(bool ok, const QString& message) {
  const int steps = loss_->trainPointCount();
  if (!ok) {
    setStatus([this, message] { return tr("Run failed: %1").arg(message); });
  } else if (!message.isEmpty()) {
    setStatus([this, steps] { return tr("Stopped after %n step(s).", nullptr, steps); });
  } else {
    setStatus([this, steps] { return tr("Finished: %n step(s).", nullptr, steps); });
  }
  if (ok) logger_->info("{}", statusText().toStdString());
  else logger_->error("{}", statusText().toStdString());
  recorder_->endRun();  // its message (saved, or why not) goes to the log
  updateControls();
}

void MainWindow::setStatus(std::function<QString()> text) {
  status_text_ = std::move(text);
  status_->setText(status_text_());
}

void MainWindow::logEvent(const Event& e) {
  const std::string text(e.text_view());
  switch (e.kind) {
    case EventKind::error:
      logger_->error("{}", text);
      break;
    case EventKind::overflow:
      logger_->warn("{}", tr("rank %1 step %2: inf/NaN in %3 at loss scale %4; the step is skipped")
                              .arg(e.rank)
                              .arg(e.step)
                              .arg(QString::fromStdString(text))
                              .arg(static_cast<double>(e.loss_scale))
                              .toStdString());
      break;
    default: {
      const auto level = e.level == LogLevel::error     ? spdlog::level::err
                         : e.level == LogLevel::warning ? spdlog::level::warn
                         : e.level == LogLevel::debug   ? spdlog::level::debug
                                                        : spdlog::level::info;
      logger_->log(level, "{}", text);
    }
  }
}

void MainWindow::appendLog(const QString& line, bool error) {
  if (error) logger_->error("{}", line.toStdString());
  else logger_->info("{}", line.toStdString());
}

QString MainWindow::levelName(int level) {
  switch (level) {
    case spdlog::level::trace: return tr("trace");
    case spdlog::level::debug: return tr("debug");
    case spdlog::level::info: return tr("info");
    case spdlog::level::warn: return tr("warning");
    case spdlog::level::err: return tr("error");
    default: return tr("critical");
  }
}

// The GUI's own messages are worded in the language of the moment they were
// logged (tr() at the call); text from the engine (its run summary, device
// notes, errors) is shown as the engine wrote it, in English.
void MainWindow::drainLog() const {
  for (const QueuedLogSink::Line& line : log_sink_->take()) {
    const QString text = QStringLiteral("%1 %2 %3").arg(QString::fromStdString(line.time), levelName(line.level),
                                                        QString::fromStdString(line.text));
    if (line.level >= spdlog::level::err)
      log_->appendHtml(QStringLiteral("<span style=\"color:#b00020\">%1</span>").arg(text.toHtmlEscaped()));
    else if (line.level == spdlog::level::warn)
      log_->appendHtml(QStringLiteral("<span style=\"color:#b36b00\">%1</span>").arg(text.toHtmlEscaped()));
    else
      log_->appendPlainText(text);
  }
}

void MainWindow::clearLog() {
  log_sink_->take();  // lines of what is being cleared away
  log_->clear();
}

}  // namespace shardscope::ui
