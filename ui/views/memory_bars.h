// SPDX-License-Identifier: GPL-3.0-or-later
// Per-rank memory as stacked bars, one layer per ledger category (parameters,
// gradients, optimizer_states, activations, communication, workspace), fed
// from memory_sample events: each solid bar shows its rank's latest sample,
// and a light bar beside it the estimator's prediction for the same run.
#pragma once

#include <QWidget>

#include <array>
#include <cstdint>
#include <vector>

#include "core/memory_ledger.h"

class QCustomPlot;
class QCPBars;
class QCPTextElement;

class QLabel;

namespace shardscope::ui {

class MemoryBars : public QWidget {
  Q_OBJECT

 public:
  explicit MemoryBars(QWidget* parent = nullptr);

  void setRankCount(int ranks);  // clears the bars
  void setSample(int rank, const std::array<std::int64_t, kMemoryCategoryCount>& bytes);
  // The estimator's per-rank bytes for this run (empty: none shown).
  void setPrediction(const std::vector<MemoryBytes>& per_rank);
  // Mixed precision: the prediction counts 16-bit activations, as a GPU keeps
  // them, where the CPU engine keeps fp32; a line under the title says so.
  void setMixedPrecision(bool mixed);
  QString note() const;
  void replot();  // redraws if anything changed since the last call

  int rankCount() const { return static_cast<int>(samples_.size()); }
  // The bytes the bars show for a rank, by category (MemoryBytes order).
  MemoryBytes bytes(int rank) const;
  MemoryBytes predicted(int rank) const;
  QCustomPlot* plot() const { return plot_; }
  QString title() const;
  // A ledger category's name as the legend shows it, in the current language.
  static QString categoryLabel(MemoryCategory category);

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void retranslate();
  void setRankTicks();

  QCustomPlot* plot_;
  std::array<QCPBars*, kMemoryCategoryCount> bars_{};
  std::array<QCPBars*, kMemoryCategoryCount> predicted_bars_{};
  std::vector<MemoryBytes> samples_;
  std::vector<MemoryBytes> prediction_;
  QCPTextElement* title_;
  QLabel* note_ = nullptr;  // under the plot while mixed_
  bool mixed_ = false;
  bool dirty_ = false;
};

}  // namespace shardscope::ui
