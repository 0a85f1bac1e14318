// SPDX-License-Identifier: GPL-3.0-or-later
// MainWindow, part 2: the drained engine events dispatched to the plots, the
// memory bars, the tab views, the status line and the log.
#include <QLabel>
#include <QPlainTextEdit>

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
        memory_->setSample(e.rank, e.memory);
        break;
      case EventKind::log:
        appendLog(QString::fromUtf8(e.text_view().data(), static_cast<qsizetype>(e.text_view().size())), false);
        break;
      case EventKind::error: {
        const QString text = QString::fromUtf8(e.text_view().data(), static_cast<qsizetype>(e.text_view().size()));
        appendLog(text, true);
        setStatus([this, text] { return tr("Error: %1").arg(text); });
        had_error_ = true;
        break;
      }
      default:
        break;
    }
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
  recorder_->endRun();  // its message (saved, or why not) goes to the log
  updateControls();
}

void MainWindow::setStatus(std::function<QString()> text) {
  status_text_ = std::move(text);
  status_->setText(status_text_());
}

void MainWindow::appendLog(const QString& line, bool error) {
  if (error) log_->appendHtml(QStringLiteral("<span style=\"color:#b00020\">%1</span>").arg(line.toHtmlEscaped()));
  else log_->appendPlainText(line);
}

}  // namespace shardscope::ui
