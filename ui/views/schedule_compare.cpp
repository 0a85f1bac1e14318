// SPDX-License-Identifier: GPL-3.0-or-later
// The schedule comparison (schedule_compare.h): the runs one after another on
// a RunController of its own, each cell filled from its run's events.
#include "views/schedule_compare.h"

#include <QEvent>
#include <QGridLayout>
#include <QLabel>
#include <QPushButton>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>

#include "byte_text.h"
#include "config/run_choices.h"
#include "config/run_schema.h"
#include "i18n.h"
#include "run_controller.h"
#include "schedule_names.h"
#include "views/pipeline_timeline.h"

namespace shardscope::ui {

namespace {
constexpr int kColumns = 3;  // six schedules in two rows fit 1280×720

// A FieldError's text in one language, its fields named as the panel labels them in that language.
QString fieldErrorText(const FieldError& e, bool chinese) {
  const auto label = [chinese](std::string_view key) {
    const RunField* field = find_run_field(key);
    if (field == nullptr || field->label.empty()) return std::string(key);
    return std::string(chinese ? field->label.zh : field->label.en);
  };
  return QString::fromStdString(e.text(label, chinese));
}

bool chineseShown() {
  return currentLanguage().startsWith(QLatin1String("zh"));
}
}  // namespace

ScheduleCompareView::ScheduleCompareView(QWidget* parent)
    : QWidget(parent),
      controller_(new RunController(this)),
      compare_(new QPushButton),
      intro_(new QLabel),
      grid_(new QGridLayout) {
  compare_->setObjectName(QStringLiteral("compareSchedules"));
  intro_->setWordWrap(true);
  auto* top = new QHBoxLayout;
  top->addWidget(compare_);
  top->addWidget(intro_, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addLayout(grid_, 1);
  connect(compare_, &QPushButton::clicked, this, [this] {
    if (source_) compare(source_());
  });
  connect(controller_, &RunController::eventsDrained, this, [this](const std::vector<Event>& events) {
    if (!running()) return;
    Cell& cell = cells_[static_cast<std::size_t>(next_ - 1)];
    cell.timeline->consume(events);
    cell.timeline->refresh();
    for (const Event& e : events)
      if (e.kind == EventKind::memory_sample)
        activation_peaks_[{e.step, e.rank}] = e.memory_peak[static_cast<std::size_t>(MemoryCategory::activations)];
  });
  connect(controller_, &RunController::runFinished, this, &ScheduleCompareView::finishCurrent);
  retranslate();
}

ScheduleCompareView::~ScheduleCompareView() {
  controller_->shutdown();
}

RunConfig ScheduleCompareView::scheduleRun(const RunConfig& base, const QString& key) {
  RunConfig c = base;
  c.steps = kSteps;
  c.clock = ClockKind::virtual_device;
  c.eval_every = 0;
  c.save_dir.clear();
  c.resume_dir.clear();
  c.schedule_file.clear();
  c.batch = std::max(1, base.batch / std::max(1, base.layout.dp()));  // one replica, its share of the batch
  c.layout[Axis::dp] = 1;
  c.schedule = parse_pipeline_schedule_kind(key.toStdString());
  c.virtual_stages = key.startsWith(QLatin1String("interleaved")) ? std::max(2, base.virtual_stages) : 1;
  return c;
}

void ScheduleCompareView::clearCells() {
  for (Cell& cell : cells_) {
    delete cell.title;
    delete cell.timeline;
    delete cell.summary;
  }
  cells_.clear();
}

void ScheduleCompareView::compare(const RunConfig& config) {
  if (controller_->busy()) controller_->shutdown();  // waits for the step under way
  clearCells();
  const RunField& field = run_field("schedule");
  int index = 0;
  for (std::string_view choice : field.choices) {
    Cell cell;
    cell.key = QString::fromUtf8(choice.data(), static_cast<qsizetype>(choice.size()));
    cell.config = scheduleRun(config, cell.key);
    cell.title = new QLabel;
    cell.title->setText(QStringLiteral("<b>%1</b>").arg(scheduleDisplayName(cell.key)));
    cell.timeline = new PipelineTimelineView;
    cell.timeline->setObjectName(QStringLiteral("timeline_") + cell.key);
    cell.timeline->setCompact();
    cell.summary = new QLabel;
    cell.summary->setWordWrap(true);
    cell.summary->setMinimumWidth(120);
    cell.summary->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    cell.summary->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    const int row = 3 * (index / kColumns), column = index % kColumns;
    grid_->addWidget(cell.title, row, column);
    grid_->addWidget(cell.timeline, row + 1, column);
    grid_->addWidget(cell.summary, row + 2, column);
    grid_->setRowStretch(row + 1, 1);
    grid_->setColumnStretch(column, 1);  // equal columns, whatever each one's text
    cells_.push_back(cell);
    ++index;
  }
  next_ = 0;
  for (Cell& cell : cells_) updateCell(cell);
  startNext();
}

void ScheduleCompareView::startNext() {
  while (next_ < static_cast<int>(cells_.size())) {
    Cell& cell = cells_[static_cast<std::size_t>(next_++)];
    try {
      plan_ = make_run_plan(cell.config);
    } catch (const FieldError& e) {  // the English as before (flags), the Chinese with the panel's labels
      cell.refused = QString::fromUtf8(e.what());
      cell.refused_zh = fieldErrorText(e, true);
      cell.timeline->hide();
      updateCell(cell);
      continue;
    } catch (const std::exception& e) {
      cell.refused = QString::fromUtf8(e.what());
      cell.timeline->hide();  // nothing to draw: the reason stands in its place
      updateCell(cell);
      continue;
    }
    cell.timeline->reset(*plan_);
    activation_peaks_.clear();
    controller_->setPlaybackSpeed(1.0);
    controller_->start(plan_);
    updateCell(cell);
    return;
  }
  next_ = static_cast<int>(cells_.size()) + 1;
  Q_EMIT comparisonFinished();
}

void ScheduleCompareView::finishCurrent(bool ok, const QString& message) {
  if (!running()) return;
  Cell& cell = cells_[static_cast<std::size_t>(next_ - 1)];
  if (!ok) {
    cell.refused = message;
  } else {
    cell.done = true;
    cell.timeline->refresh();
    const std::int64_t step = cell.timeline->shownStep();  // the last completed: kSteps
    cell.step = step;
    const ScheduleSummary summary = cell.timeline->summary(step);
    cell.measured = summary.bubble ? summary.bubble->measured : 0.0;
    cell.idle = summary.bubble ? summary.bubble->idle : 0.0;
    cell.formula = cell.timeline->scheduleFormula(step);
    cell.peak_activations = stagePeaks(step);
    const auto [first, last] = cell.timeline->stepExtent(step);
    cell.step_ns = last - first;
    shareTimeAxis();
  }
  updateCell(cell);
  QTimer::singleShot(0, this, [this] { startNext(); });  // after the controller has gone idle
}

// Each rank's memory sample at the end of the step carries the ledger's activation peak (since the
// run started: every step runs the same schedule, so its peak is the step's); a rank whose sample
// was dropped under load counts with the run's final memory instead.
std::vector<std::int64_t> ScheduleCompareView::stagePeaks(std::int64_t step) const {
  const Grid& grid = plan_->sharding().grid();
  std::vector<std::int64_t> stages(static_cast<std::size_t>(grid.pp()), 0);
  const std::vector<MemoryBytes> final_memory = controller_->finalMemory();
  for (int rank = 0; rank < grid.world_size(); ++rank) {
    const auto sample = activation_peaks_.find({step, rank});
    std::int64_t peak = 0;
    if (sample != activation_peaks_.end())
      peak = sample->second;
    else if (rank < static_cast<int>(final_memory.size()))
      peak = final_memory[static_cast<std::size_t>(rank)][MemoryCategory::activations];
    std::int64_t& stage = stages[static_cast<std::size_t>(grid.stage_of(rank))];
    stage = std::max(stage, peak);
  }
  return stages;
}

std::int64_t ScheduleCompareView::timeSpan() const {
  std::int64_t longest = 0;
  for (const Cell& cell : cells_) longest = std::max(longest, cell.step_ns);
  return longest;
}

// Every finished timeline against the longest step so far: the axes agree, so the lengths compare.
void ScheduleCompareView::shareTimeAxis() {
  const std::int64_t span = timeSpan();
  for (Cell& cell : cells_) {
    if (!cell.done) continue;
    cell.timeline->setTimeSpan(span);
    // "ZB-H1 · 36.63 ms": the step's length, in the axis labels' words (already translated).
    const QString length =
        PipelineTimelineView::tr("%1 ms").arg(QString::number(static_cast<double>(cell.step_ns) / 1e6, 'f', 2));
    cell.title->setText(QStringLiteral("<b>%1</b> · %2").arg(scheduleDisplayName(cell.key), length));
  }
}

QString ScheduleCompareView::refusalText(const Cell& cell) const {
  return chineseShown() && !cell.refused_zh.isEmpty() ? cell.refused_zh : cell.refused;
}

void ScheduleCompareView::updateCell(Cell& cell) const {
  QString text;
  if (!cell.refused.isEmpty()) {
    text = tr("Not run for this layout: %1").arg(refusalText(cell));
  } else if (!cell.done) {
    const int index = static_cast<int>(&cell - cells_.data());
    text = index == next_ - 1 ? tr("Running %1 steps...").arg(kSteps) : tr("Waiting");
  } else {
    QStringList peaks;
    for (std::int64_t bytes : cell.peak_activations) peaks << byteText(bytes);
    // Idle in all is what the zero-bubble formulas predict; fill and drain is GPipe's and 1F1B's (schedule_summary.h).
    text = tr("idle in all %1%, fill and drain %2% · %3\npeak activations per stage: %4")
               .arg(QString::number(100.0 * cell.idle, 'f', 1), QString::number(100.0 * cell.measured, 'f', 1),
                    cell.formula, peaks.join(QStringLiteral(", ")));
  }
  cell.summary->setText(text);
  cell.summary->setToolTip(text);
}

void ScheduleCompareView::retranslate() {
  compare_->setText(tr("Compare schedules"));
  intro_->setText(
      tr("The panel's model, pipeline stages and micro-batches (one data-parallel replica) under each "
         "schedule, %1 training steps each on the virtual clock, in the background. Each cell draws the last "
         "step, its bubble and its peak activations: the first step also allocates the buffers, which would "
         "blur the comparison.")
          .arg(kSteps));
  for (Cell& cell : cells_) {
    if (cell.done) cell.formula = cell.timeline->scheduleFormula(cell.timeline->shownStep());
    updateCell(cell);
  }
  shareTimeAxis();  // the titles' "step … ms"
}

void ScheduleCompareView::changeEvent(QEvent* event) {
  if (event->type() == QEvent::LanguageChange) retranslate();
  QWidget::changeEvent(event);
}

}  // namespace shardscope::ui
