// SPDX-License-Identifier: GPL-3.0-or-later
#include "layout/grid.h"

#include <string>

#include "core/error.h"

namespace shardscope {

Grid::Grid(const Layout& layout) : layout_(layout) {
  for (const Axis axis : kAxes)
    if (layout_[axis] < 1)
      throw ConfigError("--" + std::string(axis_name(axis)) + " must be at least 1 (got " +
                        std::to_string(layout_[axis]) + ")");
  int stride = 1;
  for (auto axis = kAxes.rbegin(); axis != kAxes.rend(); ++axis) {  // innermost first
    strides_[static_cast<std::size_t>(*axis)] = stride;
    stride *= layout_[*axis];
  }
}

Grid::Grid(int dp, int pp)
    : Grid([&] {
        Layout layout;
        layout[Axis::dp] = dp;
        layout[Axis::pp] = pp;
        return layout;
      }()) {}

std::vector<int> Grid::group(int rank, Axis axis) const {
  std::vector<int> ranks;
  for (int c = 0; c < size(axis); ++c) ranks.push_back(with_coordinate(rank, axis, c));
  return ranks;
}

}  // namespace shardscope
