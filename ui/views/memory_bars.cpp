// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/memory_bars.h"

#include <QEvent>
#include <QLabel>
#include <QSharedPointer>
#include <QStringList>
#include <QVBoxLayout>
#include <algorithm>

#include "byte_text.h"
#include "views/plot_legend.h"
#include "views/plot_ticks.h"
#include "views/qcustomplot_include.h"

namespace shardscope::ui {

namespace {

// One colour per category, in MemoryBytes order.
const std::array<QColor, kMemoryCategoryCount> kColors = {
    QColor(31, 119, 180), QColor(255, 127, 14), QColor(44, 160, 44),
    QColor(214, 39, 40),  QColor(148, 103, 189), QColor(140, 86, 75)};

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kPinnedSpacing = 0.28;  // a pinned run's bars: left of the rank, the prediction right

}  // namespace

MemoryBars::MemoryBars(QWidget* parent) : QWidget(parent), plot_(new QCustomPlot(this)) {
  title_ = installTitledPlot(this, plot_, 200);
  auto* layout = static_cast<QVBoxLayout*>(this->layout());
  // The lines under the plot, each shown only while it has something to say.
  const auto note = [&](const char* name, const char* style) {
    auto* label = new QLabel(this);
    label->setObjectName(QLatin1String(name));
    label->setWordWrap(true);
    label->setStyleSheet(QLatin1String(style));
    label->setVisible(false);
    label->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Maximum);
    layout->addWidget(label);
    return label;
  };
  note_ = note("memoryNote", "color: #5a5a5a; padding: 0 8px;");
  pin_note_ = note("pinnedMemoryNote", "padding: 0 8px;");
  device_note_ = note("deviceMemoryNote", "padding: 0 8px;");
  process_note_ = note("processMemoryNote", "padding: 0 8px;");
  layout->setStretch(0, 1);  // the plot takes the height; the note only its lines
  buildBars();
  placeBars();
  plot_->xAxis->grid()->setVisible(false);
  spaceValueTicks(plot_);
  // The legend in its own column right of the bars, so it never covers a rank.
  // Bars and legend share one cell under the title, so that the title spans
  // both and the plot's minimum width is the wider of the two, not their sum.
  plot_->legend->setVisible(true);
  plot_->axisRect()->insetLayout()->take(plot_->legend);
  QCPAxisRect* bars_rect = plot_->axisRect();
  plot_->plotLayout()->take(bars_rect);
  auto* body = new QCPLayoutGrid;
  plot_->plotLayout()->addElement(1, 0, body);
  body->addElement(0, 0, bars_rect);
  auto* side = new QCPLayoutGrid;
  body->addElement(0, 1, side);
  body->setColumnStretchFactor(1, 0.001);
  side->addElement(0, 0, plot_->legend);
  side->addElement(1, 0, new QCPLayoutElement(plot_));  // takes the height below the legend
  side->setRowStretchFactor(0, 0.001);
  // QPainter draws the legend's 1-pixel border just outside its rect: keep it
  // off the widget's last column and row, where it was cut off.
  side->setMargins(QMargins(0, 0, 2, 2));
  plot_->legend->setMargins(QMargins(4, 4, 4, 4));
  QFont legendFont = font();
  legendFont.setPointSizeF(legendFont.pointSizeF() * 0.85);
  plot_->legend->setFont(legendFont);
  setRankCount(0);
  retranslate();
}

// The stacked bar sets, one layer per category: measured (solid), predicted
// (light, dashed) and a pinned run's (hatched), the last two off the legend.
void MemoryBars::buildBars() {
  QCPBars* below = nullptr;
  for (std::size_t c = 0; c < kMemoryCategoryCount; ++c) {
    auto* bars = new QCPBars(plot_->xAxis, plot_->yAxis);
    bars->setBrush(kColors[c]);
    bars->setPen(QPen(kColors[c].darker(130)));
    bars->setWidth(0.36);
    if (below != nullptr) bars->moveAbove(below);
    below = bars;
    bars_[c] = bars;
  }
  below = nullptr;
  for (std::size_t c = 0; c < kMemoryCategoryCount; ++c) {
    auto* bars = new QCPBars(plot_->xAxis, plot_->yAxis);
    QColor light = kColors[c];
    light.setAlpha(90);
    bars->setBrush(light);
    bars->setPen(QPen(kColors[c], 1, Qt::DashLine));
    bars->setWidth(0.36);
    bars->removeFromLegend();
    if (below != nullptr) bars->moveAbove(below);
    below = bars;
    predicted_bars_[c] = bars;
  }
  below = nullptr;
  for (std::size_t c = 0; c < kMemoryCategoryCount; ++c) {
    auto* bars = new QCPBars(plot_->xAxis, plot_->yAxis);
    bars->setBrush(QBrush(kColors[c], Qt::BDiagPattern));
    bars->setPen(QPen(kColors[c].darker(130)));
    bars->removeFromLegend();
    if (below != nullptr) bars->moveAbove(below);
    below = bars;
    pinned_bars_[c] = bars;
  }
}

QColor MemoryBars::categoryColor(MemoryCategory category) { return kColors[static_cast<std::size_t>(category)]; }

QString MemoryBars::categoryLabel(MemoryCategory category) {
  switch (category) {
    case MemoryCategory::parameters: return tr("parameters");
    case MemoryCategory::gradients: return tr("gradients");
    case MemoryCategory::optimizer_states: return tr("optimizer states");
    case MemoryCategory::activations: return tr("activations");
    case MemoryCategory::communication: return tr("communication");
    case MemoryCategory::workspace: return tr("workspace");
  }
  return QString::fromLatin1(memory_category_name(category).data());
}

void MemoryBars::retranslate() {
  title_->setText(pinned() ? tr("Memory per rank: pinned run (hatched), this run (solid), predicted (light)")
                           : tr("Memory per rank: peak measured (solid), peak predicted (light)"));
  pin_note_->setText(
      pinned()
          ? tr("Hatched, left of each rank: the pinned run (%1). Solid: this run (%2).").arg(pinned_label_, run_label_)
          : QString());
  pin_note_->setVisible(pinned());
  note_->setText(mixed_ ? tr("Mixed precision: 16-bit parameters and gradients; fp32 master weights and Adam moments "
                             "(optimizer states); fp32 activations; each unit's fp32 working copy while it runs "
                             "(workspace).")
                        : QString());
  plot_->yAxis->setLabel(tr("MiB"));
  plot_->xAxis->setLabel(tr("Rank"));
  for (std::size_t c = 0; c < kMemoryCategoryCount; ++c) bars_[c]->setName(categoryLabel(kAllMemoryCategories[c]));
  device_note_->setToolTip(
      tr("In use: the whole GPU as its driver counts it (every process). Allocator: what this rank's caching "
         "allocator holds, freed blocks kept for reuse included. Ledger: the bytes of the rank's live buffers."));
  process_note_->setToolTip(
      tr("Resident: the memory the operating system gives this process (VmRSS; peak: VmHWM), code, thread stacks "
         "and the data set included. Ledger: the bytes of the ranks' live buffers, summed over the ranks."));
  setRankTicks();
  updateDeviceText();
  updateProcessText();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void MemoryBars::updateProcessText() {
  QString text;
  if (resident_ > 0) {
    std::int64_t now = 0, peaks = 0;
    for (const auto& s : samples_) now += s.total();
    for (const auto& p : peaks_) peaks += p.total();
    text = tr("Process: %1 resident, peak %2 · ledger %3 now, peaks %4 (all ranks)")
               .arg(byteText(resident_), byteText(peak_resident_), byteText(now), byteText(peaks));
  }
  process_note_->setText(text);
  process_note_->setVisible(!text.isEmpty());
}

QString MemoryBars::processText() const { return process_note_->text(); }

void MemoryBars::setProcessMemory(std::int64_t resident, std::int64_t peak_resident) {
  resident_ = resident;
  peak_resident_ = peak_resident;
  dirty_ = true;
}

void MemoryBars::updateDeviceText() {
  QStringList lines;
  for (std::size_t r = 0; r < device_.size(); ++r) {
    if (!device_[r]) continue;
    const DeviceUsage& usage = *device_[r];
    const std::int64_t ledger = r < samples_.size() ? samples_[r].total() : 0;
    lines << tr("GPU %1 (rank %2): %3 of %4 in use (cudaMemGetInfo); allocator holds %5; ledger %6")
                 .arg(usage.device)
                 .arg(r)
                 .arg(byteText(usage.used_bytes))
                 .arg(byteText(usage.total_bytes))
                 .arg(byteText(usage.reserved_bytes))
                 .arg(byteText(ledger));
  }
  device_note_->setText(lines.join(QLatin1Char('\n')));
  device_note_->setVisible(!lines.isEmpty());
}

QString MemoryBars::deviceText() const { return device_note_->text(); }

void MemoryBars::changeEvent(QEvent* event) {
  if (event->type() == QEvent::LanguageChange) retranslate();
  QWidget::changeEvent(event);
}

QString MemoryBars::title() const { return title_->text(); }

QString MemoryBars::note() const { return mixed_ ? note_->text() : QString(); }

void MemoryBars::setMixedPrecision(bool mixed) {
  mixed_ = mixed;
  note_->setVisible(mixed);
  retranslate();
}

void MemoryBars::setTensorParallel(int tp) {
  tp_ = std::max(tp, 1);
}

void MemoryBars::setRankTicks() {
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  for (int r = 0; r < rankCount(); ++r)
    ticker->addTick(r, tp_ > 1 ? tr("rank %1\ntp %2").arg(r).arg(r % tp_) : tr("rank %1").arg(r));
  plot_->xAxis->setTicker(ticker);
  for (QCPItemStraightLine* line : group_lines_) plot_->removeItem(line);
  group_lines_.clear();
  if (tp_ < 2) return;
  for (int first = tp_; first < rankCount(); first += tp_) {  // tp groups are adjacent ranks (tp innermost)
    auto* line = new QCPItemStraightLine(plot_);
    line->point1->setCoords(first - 0.5, 0);
    line->point2->setCoords(first - 0.5, 1);
    line->setPen(QPen(QColor(120, 120, 120), 1, Qt::DashLine));
    group_lines_.push_back(line);
  }
}

void MemoryBars::setRankCount(int ranks) {
  samples_.assign(static_cast<std::size_t>(std::max(ranks, 0)), MemoryBytes{});
  peaks_ = samples_;
  device_.assign(samples_.size(), std::nullopt);
  resident_ = peak_resident_ = 0;
  for (QCPItemText* t : totals_) plot_->removeItem(t);
  totals_.clear();
  for (std::size_t i = 0; i < 3 * samples_.size(); ++i) {
    auto* t = new QCPItemText(plot_);
    t->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
    t->setClipToAxisRect(false);
    QFont small = font();
    small.setPointSizeF(small.pointSizeF() * 0.8);
    t->setFont(small);
    t->setColor(i % 3 == 1 ? QColor(110, 110, 110) : QColor(40, 40, 40));
    totals_.push_back(t);
  }
  updateDeviceText();
  updateProcessText();
  setRankTicks();
  plot_->xAxis->setRange(-0.6, std::max(ranks, 1) - 0.4);
  dirty_ = true;
  replot();
}

void MemoryBars::setSample(int rank, const std::array<std::int64_t, kMemoryCategoryCount>& current,
                           const std::array<std::int64_t, kMemoryCategoryCount>& peak) {
  if (rank < 0) return;
  if (rank >= rankCount()) {
    samples_.resize(static_cast<std::size_t>(rank) + 1);
    peaks_.resize(samples_.size());
  }
  samples_[static_cast<std::size_t>(rank)].bytes = current;
  MemoryBytes& p = peaks_[static_cast<std::size_t>(rank)];
  for (std::size_t c = 0; c < kMemoryCategoryCount; ++c) p.bytes[c] = std::max({p.bytes[c], peak[c], current[c]});
  dirty_ = true;
}

void MemoryBars::setDeviceUsage(int rank, const DeviceUsage& usage) {
  if (rank < 0) return;
  if (static_cast<std::size_t>(rank) >= device_.size()) device_.resize(static_cast<std::size_t>(rank) + 1);
  device_[static_cast<std::size_t>(rank)] = usage;
  dirty_ = true;  // the line is rewritten by replot(), once per batch of events
}

void MemoryBars::setPrediction(const std::vector<MemoryBytes>& per_rank) {
  prediction_ = per_rank;
  dirty_ = true;
}

MemoryBytes MemoryBars::predicted(int rank) const {
  if (rank < 0 || rank >= static_cast<int>(prediction_.size())) return {};
  return prediction_[static_cast<std::size_t>(rank)];
}

MemoryBytes MemoryBars::bytes(int rank) const {
  if (rank < 0 || rank >= rankCount()) return {};
  return peaks_[static_cast<std::size_t>(rank)];
}

MemoryBytes MemoryBars::current(int rank) const {
  if (rank < 0 || rank >= rankCount()) return {};
  return samples_[static_cast<std::size_t>(rank)];
}

void MemoryBars::replot() {
  if (!dirty_) return;
  dirty_ = false;
  double top = 1.0;
  for (std::size_t c = 0; c < kMemoryCategoryCount; ++c) {
    const auto set = [c](QCPBars* bars, const std::vector<MemoryBytes>& by_rank, double offset) {
      QVector<double> keys, values;
      for (std::size_t r = 0; r < by_rank.size(); ++r) {
        keys.push_back(static_cast<double>(r) + offset);
        values.push_back(static_cast<double>(by_rank[r].bytes[c]) / kMiB);
      }
      bars->setData(keys, values, true);
    };
    set(bars_[c], peaks_, measuredOffset());
    set(predicted_bars_[c], prediction_, predictedOffset());
    set(pinned_bars_[c], pinned_peaks_, -kPinnedSpacing);
  }
  for (const auto& peak : peaks_) top = std::max(top, static_cast<double>(peak.total()) / kMiB);
  for (const auto& peak : pinned_peaks_) top = std::max(top, static_cast<double>(peak.total()) / kMiB);
  for (const auto& p : prediction_) top = std::max(top, static_cast<double>(p.total()) / kMiB);
  plot_->yAxis->setRange(0, top * 1.18);  // room for the totals above the bars
  updateTotals(top);
  updateDeviceText();
  updateProcessText();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

// Each bar's total above it: the measured peak over the solid bar, the
// prediction over the light one (blank until there is one).
void MemoryBars::updateTotals(double top) {
  const auto mib = [](std::int64_t bytes) { return QString::number(static_cast<double>(bytes) / kMiB, 'f', 1); };
  const auto place = [&](QCPItemText* t, double x, std::optional<std::int64_t> bytes) {
    t->position->setCoords(x, static_cast<double>(bytes.value_or(0)) / kMiB + top * 0.01);
    t->setText(bytes ? mib(*bytes) : QString());
  };
  for (int r = 0; r < rankCount() && 3 * r + 2 < static_cast<int>(totals_.size()); ++r) {
    const auto ur = static_cast<std::size_t>(r);
    const std::int64_t m = peaks_[ur].total();
    place(totals_[3 * ur], r + measuredOffset(), m > 0 ? std::optional(m) : std::nullopt);
    place(totals_[3 * ur + 1], r + predictedOffset(),
          ur < prediction_.size() ? std::optional(prediction_[ur].total()) : std::nullopt);
    place(totals_[3 * ur + 2], r - kPinnedSpacing,
          ur < pinned_peaks_.size() ? std::optional(pinned_peaks_[ur].total()) : std::nullopt);
  }
}

// Two bars per rank (measured left, predicted right), or three while a run is
// pinned (pinned, measured, predicted), narrower so that they do not touch.
double MemoryBars::measuredOffset() const {
  return pinned() ? 0.0 : -0.19;
}
double MemoryBars::predictedOffset() const {
  return pinned() ? kPinnedSpacing : 0.19;
}

void MemoryBars::placeBars() {
  const double width = pinned() ? 0.26 : 0.36;
  for (std::size_t c = 0; c < kMemoryCategoryCount; ++c)
    for (QCPBars* bars : {bars_[c], predicted_bars_[c], pinned_bars_[c]}) bars->setWidth(width);
}

void MemoryBars::pin(const QString& label) {
  pinned_peaks_ = peaks_;
  pinned_label_ = label;
  run_label_ = label;
  placeBars();
  retranslate();
  dirty_ = true;
  replot();
}

void MemoryBars::unpin() {
  pinned_peaks_.clear();
  pinned_label_.clear();
  placeBars();
  retranslate();
  dirty_ = true;
  replot();
}

void MemoryBars::setRunLabel(const QString& label) {
  run_label_ = label;
  if (pinned()) retranslate();
}

QString MemoryBars::pinNote() const {
  return pin_note_->text();
}

MemoryBytes MemoryBars::pinnedBytes(int rank) const {
  if (rank < 0 || rank >= static_cast<int>(pinned_peaks_.size())) return {};
  return pinned_peaks_[static_cast<std::size_t>(rank)];
}

}  // namespace shardscope::ui
