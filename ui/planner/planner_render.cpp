// SPDX-License-Identifier: GPL-3.0-or-later
// PlannerDialog, part 2: planning (one compute_estimate per ZeRO stage) and
// what it shows: the bars, the verdict in words, the model states line and the
// table of every number with its formula.
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QLabel>
#include <QScrollBar>
#include <QSpinBox>
#include <QTextBrowser>
#include <QTimer>
#include <algorithm>

#include "i18n.h"
#include "planner/planner_bars.h"
#include "planner/planner_dialog.h"
#include "views/memory_bars.h"

namespace shardscope::ui {

void PlannerDialog::replan() { plan(true); }

// One plan at a time on the planner's own worker thread: a cluster of 16384
// GPUs takes seconds to estimate per stage, and the window never waits for it.
// A newer request drops the queued one; a result older than the newest
// request is dropped when it arrives.
void PlannerDialog::plan(bool clear_error) {
  debounce_->stop();
  const std::uint64_t generation = ++generation_;
  const EstimateRequest r = request();
  const bool chinese = currentLanguage() == QStringLiteral("zh_CN");
  pool_.clear();  // a queued plan that has not started is stale now
  planning_->show();
  pool_.start([this, r, chinese, generation, clear_error] {
    auto outcome = std::make_shared<PlanOutcome>();
    try {
      outcome->plans = planZeroStages(r, chinese);
    } catch (const std::exception& e) {  // settings no stage can take: said, the last plan kept
      outcome->error = QString::fromStdString(e.what());
    }
    QMetaObject::invokeMethod(this, [this, outcome, generation, clear_error] {
      planFinished(generation, *outcome, clear_error);
    }, Qt::QueuedConnection);
  });
}

void PlannerDialog::planFinished(std::uint64_t generation, const PlanOutcome& outcome, bool clear_error) {
  finished_ = std::max(finished_, generation);
  if (finished_ >= generation_) planning_->hide();
  if (generation != generation_) return;  // a newer request is on its way
  if (!outcome.plans) {
    const QString message = outcome.error;
    setError([message] { return tr("Cannot plan these settings: %1. The plan shown is the previous one.").arg(message); });
    return;
  }
  plans_ = *outcome.plans;
  planned_ = true;
  if (clear_error) setError({});
  render();
}

bool PlannerDialog::waitForPlan(int timeout_ms) {
  QElapsedTimer clock;
  clock.start();
  while (finished_ < generation_ || debounce_->isActive()) {
    if (clock.elapsed() > timeout_ms) return false;
    QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
  }
  return true;
}

void PlannerDialog::render() {
  std::vector<PlannerBar> bars;
  for (const StagePlan& plan : plans_) {
    PlannerBar bar;
    bar.title = tr("ZeRO-%1").arg(plan.stage);
    if (const RankMemory* rank = plan.fullest()) {
      bar.valid = true;
      bar.bytes = rank->bytes;
      for (MemoryCategory c : kAllMemoryCategories)
        bar.formulas[static_cast<std::size_t>(c)] = QString::fromStdString(rank->formula(c));
      bar.fits = plan.estimate->fit.fits;
      bar.caption = PlannerText::shortVerdict(plan.estimate->fit);
    } else {
      bar.caption = plan.refused;
    }
    bars.push_back(std::move(bar));
  }
  const EstimateRequest r = request();
  const QString gpu = r.gpu ? QString::fromStdString(r.gpu->name) : QString();
  const std::int64_t capacity = r.gpu ? r.gpu->memory_bytes : 0;
  bars_->setBars(std::move(bars), capacity, tr("%1: %2 per GPU").arg(gpu, PlannerText::bytes(capacity)),
                 zero_->value());
  renderVerdict();
  renderFormulas();
}

void PlannerDialog::renderVerdict() {
  const StagePlan& plan = plans_[static_cast<std::size_t>(zero_->value())];
  const EstimateSettings s = settings();
  const QString gpu = QString::fromStdString(request().gpu ? request().gpu->name : std::string());
  if (!plan.estimate) {
    verdict_->setText(tr("ZeRO-%1 is refused for this layout: %2").arg(plan.stage).arg(plan.refused));
    states_->clear();
    return;
  }
  verdict_->setText(tr("ZeRO-%1 on %n GPU(s) (%2): %3", nullptr, s.world_size())
                        .arg(plan.stage)
                        .arg(gpu, PlannerText::verdict(*plan.estimate)));
  const RankMemory& rank = *plan.fullest();
  const std::int64_t states = rank.bytes[MemoryCategory::parameters] + rank.bytes[MemoryCategory::gradients] +
                              rank.bytes[MemoryCategory::optimizer_states];
  states_->setText(tr("Model states on the fullest GPU (rank %1): %2 = parameters %3 + gradients %4 + optimizer "
                      "states %5. Sizes: GB = 10⁹ bytes.")
                       .arg(plan.estimate->memory.fullest_rank())
                       .arg(PlannerText::bytes(states), PlannerText::bytes(rank.bytes[MemoryCategory::parameters]),
                            PlannerText::bytes(rank.bytes[MemoryCategory::gradients]),
                            PlannerText::bytes(rank.bytes[MemoryCategory::optimizer_states])));
}

QString PlannerDialog::formulaHtml() const {
  QString html = QStringLiteral("<table width='100%' cellspacing=0 cellpadding=4 border=1 style='border-collapse:collapse'><tr><th></th>");
  for (const StagePlan& plan : plans_)
    html += QStringLiteral("<th>%1</th>")
                .arg(plan.estimate ? tr("ZeRO-%1, rank %2").arg(plan.stage).arg(plan.estimate->memory.fullest_rank())
                                   : tr("ZeRO-%1").arg(plan.stage));
  html += QStringLiteral("</tr>");
  auto cell = [](std::int64_t bytes, const std::string& formula) {
    return QStringLiteral("<td><b>%1</b><br><span style='color:#555555'>%2</span></td>")
        .arg(PlannerText::bytes(bytes), QString::fromStdString(formula).toHtmlEscaped());
  };
  for (MemoryCategory c : kAllMemoryCategories) {
    html += QStringLiteral("<tr><td><span style='color:%1'>■</span> %2</td>")
                .arg(MemoryBars::categoryColor(c).name(), MemoryBars::categoryLabel(c));
    for (const StagePlan& plan : plans_)
      html += plan.fullest() ? cell(plan.fullest()->bytes[c], plan.fullest()->formula(c)) : QStringLiteral("<td></td>");
    html += QStringLiteral("</tr>");
  }
  html += QStringLiteral("<tr><td><b>%1</b></td>").arg(tr("total"));
  for (const StagePlan& plan : plans_)
    html += plan.fullest() ? cell(plan.fullest()->total(), std::string()) : QStringLiteral("<td>%1</td>").arg(plan.refused.toHtmlEscaped());
  html += QStringLiteral("</tr></table>");
  const StagePlan& chosen = plans_[static_cast<std::size_t>(zero_->value())];
  if (chosen.estimate) {
    html += QStringLiteral("<p>%1 %2</p>")
                .arg(tr("Basis:"), QString::fromStdString(chosen.estimate->memory.basis).toHtmlEscaped());
    if (const TimeEstimate& t = chosen.estimate->time; t.has_gpu)
      html += QStringLiteral("<p>%1</p>")
                  .arg((t.measured_kernels
                            ? tr("Time on %1 (the kernel model, docs/PERFORMANCE.md: GEMMs from a measured table at "
                                 "the sustained clock, memory-bound kernels at the measured bandwidth, data-parallel "
                                 "traffic overlapped; %2% of peak reached): %3 s per step, %4 tokens/s per GPU, %5 "
                                 "TFLOP/s per GPU, MFU %6%.")
                            : tr("Time on %1 (a model, docs/ESTIMATE.md: every matmul at %2% of peak, nothing "
                                 "overlapped): %3 s per step, %4 tokens/s per GPU, %5 TFLOP/s per GPU, MFU %6%."))
                           .arg(QString::fromStdString(t.gpu))
                           .arg(100.0 * t.efficiency, 0, 'f', 0)
                           .arg(t.step_s, 0, 'g', 3)
                           .arg(t.tokens_per_s_per_gpu, 0, 'f', 0)
                           .arg(t.tflops_per_gpu, 0, 'f', 1)
                           .arg(100.0 * t.mfu, 0, 'f', 1)
                           .toHtmlEscaped());
    QStringList notes;
    const EstimateSettings now = settings();
    for (const auto& [setting, where] : import_origins_)
      notes << (settingChanged(setting, base_, now) ? tr("%1 from %2, overridden here") : tr("%1 from %2"))
                   .arg(QString::fromStdString(setting), QString::fromStdString(where))
                   .toHtmlEscaped();
    for (const std::string& w : chosen.estimate->warnings) notes << QString::fromStdString(w).toHtmlEscaped();
    if (!notes.isEmpty())
      html += QStringLiteral("<p>%1</p><ul><li>%2</li></ul>").arg(tr("Notes:"), notes.join(QStringLiteral("</li><li>")));
  }
  return html;
}

void PlannerDialog::renderFormulas() {
  const int scroll = formulas_->verticalScrollBar() ? formulas_->verticalScrollBar()->value() : 0;
  formulas_->setHtml(formulaHtml());
  formulas_->verticalScrollBar()->setValue(scroll);
}

QString PlannerDialog::verdictText() const { return verdict_->text(); }
QString PlannerDialog::modelStatesText() const { return states_->text(); }

}  // namespace shardscope::ui
