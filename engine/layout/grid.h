// SPDX-License-Identifier: GPL-3.0-or-later
// The ranks on a grid of named axes (layout/parallel_axes.h), built in one
// place; every strategy asks the grid for its peers. A global rank is a
// mixed-radix number over the axes, outermost first: with (pp, dp),
//   pipeline stage  s = r / dp,   data-parallel rank  d = r % dp,
// so the dp ranks of one stage are consecutive (as Megatron orders them);
// with (pp, dp, tp) the tp ranks of one (stage, dp rank) are consecutive
// inside that: tensor-parallel rank t = r % tp, d = r / tp % dp, s = r / (tp dp).
// For any axis the grid answers a rank's coordinate, the ranks of its group
// (those that differ from it on that axis only) and its next and previous
// peer on the axis's ring.
#pragma once

#include <array>
#include <vector>

#include "layout/parallel_axes.h"

namespace shardscope {

class Grid {
 public:
  // Throws ConfigError unless every axis is at least 1.
  explicit Grid(const Layout& layout);
  Grid(int dp, int pp);  // Layout with these two axes set

  const Layout& layout() const { return layout_; }
  int size(Axis axis) const { return layout_[axis]; }
  int world_size() const { return layout_.world_size(); }

  // `rank`'s coordinate on `axis` (0 .. size(axis) - 1).
  int coordinate(int rank, Axis axis) const { return rank / stride(axis) % layout_[axis]; }
  // The rank that equals `rank` on every axis but `axis`, where it is `coordinate`.
  int with_coordinate(int rank, Axis axis, int coordinate) const {
    return rank + (coordinate - this->coordinate(rank, axis)) * stride(axis);
  }
  // The ranks of `rank`'s group on `axis`, by their coordinate on it.
  std::vector<int> group(int rank, Axis axis) const;
  // The next and previous rank of that group, around its ring.
  int next(int rank, Axis axis) const { return with_coordinate(rank, axis, (coordinate(rank, axis) + 1) % size(axis)); }
  int previous(int rank, Axis axis) const {
    return with_coordinate(rank, axis, (coordinate(rank, axis) + size(axis) - 1) % size(axis));
  }

  // The axes the runtime has, by their usual names.
  int dp() const { return size(Axis::dp); }
  int pp() const { return size(Axis::pp); }
  int tp() const { return size(Axis::tp); }
  int stage_of(int rank) const { return coordinate(rank, Axis::pp); }
  int dp_rank_of(int rank) const { return coordinate(rank, Axis::dp); }
  int tp_rank_of(int rank) const { return coordinate(rank, Axis::tp); }
  // rank_at, dp_group and pipeline_group below answer for tensor-parallel rank
  // 0; a rank's own groups on every axis are group(rank, axis).
  int rank_at(int stage, int dp_rank) const {
    return with_coordinate(with_coordinate(0, Axis::pp, stage), Axis::dp, dp_rank);
  }
  // Global ranks of the data-parallel group of `stage` (same stage, all dp ranks).
  std::vector<int> dp_group(int stage) const { return group(rank_at(stage, 0), Axis::dp); }
  // Global ranks of the pipeline of `dp_rank` (same dp rank, stages 0 .. pp-1).
  std::vector<int> pipeline_group(int dp_rank) const { return group(rank_at(0, dp_rank), Axis::pp); }

 private:
  // How far apart two ranks are whose coordinates on `axis` differ by one:
  // the product of the sizes of the axes inside it.
  int stride(Axis axis) const { return strides_[static_cast<std::size_t>(axis)]; }

  Layout layout_;
  std::array<int, kAxes.size()> strides_{};
};

}  // namespace shardscope
