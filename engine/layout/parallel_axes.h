// SPDX-License-Identifier: GPL-3.0-or-later
// The parallel axes of a run, by name, and their sizes: the one type that
// says how many data-parallel ranks and pipeline stages a run has. RunConfig,
// the estimator's settings and the sharding plan hold a Layout; the rank grid
// (layout/grid.h) numbers the ranks by it.
//
// Ranks are numbered as a mixed-radix number over the axes in kAxes order,
// outermost first: with (pp, dp), global rank r sits at stage r / dp and
// data-parallel rank r % dp, so the dp ranks of a stage are consecutive. This
// is Megatron-LM's order (tensor-parallel ranks innermost, then context,
// data, and pipeline outermost) and picotron's `arange(world).view(dp, pp,
// cp, tp)` read from the inside out. A new axis is a new Axis value placed in
// kAxes where it nests; an axis of size 1 changes no rank number.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace shardscope {

enum class Axis {
  pp,  // pipeline stages: each holds a contiguous slice of the layers
  dp,  // data-parallel ranks: each trains on its own slice of the batch
  cp,  // context-parallel ranks: each holds a slice of every sequence (ring attention)
  tp,  // tensor-parallel ranks: each holds a slice of every layer's matrices (Megatron-LM)
};

// Every axis, outermost first (the rank numbering's order).
inline constexpr std::array<Axis, 4> kAxes{Axis::pp, Axis::dp, Axis::cp, Axis::tp};

// "pp", "dp", "cp", "tp": the axis's schema key and flag name (--pp, --dp, --cp, --tp).
constexpr std::string_view axis_name(Axis axis) {
  switch (axis) {
    case Axis::pp:
      return "pp";
    case Axis::dp:
      return "dp";
    case Axis::cp:
      return "cp";
    case Axis::tp:
      return "tp";
  }
  return "?";
}

// One value for every axis, indexed by the axis.
template <typename T>
class PerAxis {
 public:
  const T& operator[](Axis axis) const { return values_[static_cast<std::size_t>(axis)]; }
  T& operator[](Axis axis) { return values_[static_cast<std::size_t>(axis)]; }
  bool operator==(const PerAxis&) const = default;

 protected:
  std::array<T, kAxes.size()> values_{};
};

// The size of every axis; 1 for an axis the run does not use.
class Layout : public PerAxis<int> {
 public:
  constexpr Layout() { values_.fill(1); }

  int dp() const { return (*this)[Axis::dp]; }
  int pp() const { return (*this)[Axis::pp]; }
  int tp() const { return (*this)[Axis::tp]; }
  int cp() const { return (*this)[Axis::cp]; }
  // The product of every axis's size: the ranks of the run.
  int world_size() const {
    int n = 1;
    for (const int size : values_) n *= size;
    return n;
  }
};

}  // namespace shardscope
