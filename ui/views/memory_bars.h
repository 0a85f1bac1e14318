// SPDX-License-Identifier: GPL-3.0-or-later
// Per-rank memory as stacked bars, one layer per ledger category (parameters,
// gradients, optimizer_states, activations, communication, workspace), fed
// from memory_sample events: each solid bar shows its rank's peak so far (each
// category's own peak, as the ledger keeps it), and a light bar beside it the
// estimator's predicted peak for the same run; the totals are written above
// the bars. For ranks on the host, a line under the bars sets the ledger's
// total beside the process's resident memory (the operating system's count).
// For ranks on a GPU, a line per rank under the bars sets the ledger beside
// the device's own count (cudaMemGetInfo) and the caching allocator's hold.
#pragma once

#include <QColor>
#include <QWidget>

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/memory_ledger.h"

class QCustomPlot;
class QCPBars;
class QCPTextElement;
class QCPItemStraightLine;
class QCPItemText;

class QLabel;

namespace shardscope::ui {

class MemoryBars : public QWidget {
  Q_OBJECT

 public:
  explicit MemoryBars(QWidget* parent = nullptr);

  void setRankCount(int ranks);  // clears the bars
  void setSample(int rank, const std::array<std::int64_t, kMemoryCategoryCount>& current,
                 const std::array<std::int64_t, kMemoryCategoryCount>& peak);
  // The process's resident memory now and its peak (host ranks' samples; 0: unknown).
  void setProcessMemory(std::int64_t resident, std::int64_t peak_resident);
  // "Process: 182 MiB resident, peak 190 MiB · ledger 166 MiB now, peaks 170 MiB (all ranks)"; empty if unknown.
  QString processText() const;
  // A GPU rank's device figures (a memory_sample with device >= 0). Host ranks
  // never get any, and then no device line is shown.
  void setDeviceUsage(int rank, const DeviceUsage& usage);
  // "GPU 0 (rank 0): 12.3 of 139.8 GiB in use (cudaMemGetInfo); allocator holds
  // 10.1 GiB; ledger 9.8 GiB", a line per GPU rank; empty for a CPU run.
  QString deviceText() const;
  // The estimator's per-rank bytes for this run (empty: none shown).
  void setPrediction(const std::vector<MemoryBytes>& per_rank);
  // Mixed precision: a line under the title says which bytes are 16-bit and
  // which stay fp32 (the prediction counts them as the engine does).
  void setMixedPrecision(bool mixed);
  // Tensor parallelism: the bars of a tp group (adjacent ranks) stand
  // together between dashed lines, each labelled with its tp rank. Set before setRankCount.
  void setTensorParallel(int tp);
  int tensorParallel() const { return tp_; }
  // Pin (compare two runs): this run's peaks stay, hatched on the left of each
  // rank, beside every later run's (solid, middle) and prediction (light,
  // right), labelled with the runs' setups, until unpin(). setRankCount keeps them.
  void pin(const QString& label);
  void unpin();
  bool pinned() const { return !pinned_peaks_.empty(); }
  QString pinNote() const;  // "Hatched, left: the pinned run (...). Solid: this run (...)."; empty when none
  MemoryBytes pinnedBytes(int rank) const;
  void setRunLabel(const QString& label);  // the current run's setup, for the title while pinned
  QString note() const;
  void replot();  // redraws if anything changed since the last call

  int rankCount() const { return static_cast<int>(samples_.size()); }
  // The bytes the bars show for a rank (its peaks), by category (MemoryBytes order).
  MemoryBytes bytes(int rank) const;
  MemoryBytes current(int rank) const;  // the rank's latest sample
  MemoryBytes predicted(int rank) const;
  QCustomPlot* plot() const { return plot_; }
  QString title() const;
  // A ledger category's name as the legend shows it, in the current language.
  static QString categoryLabel(MemoryCategory category);
  // Its colour, the same in every view that stacks the ledger's categories.
  static QColor categoryColor(MemoryCategory category);

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void retranslate();
  void setRankTicks();
  void updateDeviceText();
  void updateProcessText();
  void updateTotals(double top);
  void buildBars();
  void placeBars();  // the bars' widths: two per rank, three while pinned
  double measuredOffset() const;
  double predictedOffset() const;

  QCustomPlot* plot_;
  std::array<QCPBars*, kMemoryCategoryCount> bars_{};
  std::array<QCPBars*, kMemoryCategoryCount> predicted_bars_{};
  std::array<QCPBars*, kMemoryCategoryCount> pinned_bars_{};
  std::vector<MemoryBytes> pinned_peaks_;  // by rank; empty: nothing pinned
  QString pinned_label_, run_label_;
  std::vector<MemoryBytes> samples_;  // latest
  std::vector<MemoryBytes> peaks_;
  std::vector<MemoryBytes> prediction_;
  std::vector<std::optional<DeviceUsage>> device_;  // by rank; empty entries: host memory
  QCPTextElement* title_;
  QLabel* note_ = nullptr;  // under the plot while mixed_
  QLabel* pin_note_ = nullptr;     // under the plot while a run is pinned: which bars are which run
  QLabel* device_note_ = nullptr;  // under the plot while a rank has device figures
  QLabel* process_note_ = nullptr;  // under the plot while the process's memory is known
  std::vector<QCPItemText*> totals_;  // per rank: measured peak, predicted peak, pinned peak
  std::int64_t resident_ = 0, peak_resident_ = 0;
  bool mixed_ = false;
  int tp_ = 1;
  std::vector<QCPItemStraightLine*> group_lines_;  // between tp groups
  bool dirty_ = false;
};

}  // namespace shardscope::ui
