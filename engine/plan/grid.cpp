// SPDX-License-Identifier: GPL-3.0-or-later
#include "plan/grid.h"

#include <string>

#include "core/error.h"

namespace shardscope {

Grid::Grid(int dp, int pp) : dp_(dp), pp_(pp) {
  if (dp < 1) throw ConfigError("--dp must be at least 1 (got " + std::to_string(dp) + ")");
  if (pp < 1) throw ConfigError("--pp must be at least 1 (got " + std::to_string(pp) + ")");
}

std::vector<int> Grid::dp_group(int stage) const {
  std::vector<int> ranks;
  for (int d = 0; d < dp_; ++d) ranks.push_back(rank_at(stage, d));
  return ranks;
}

std::vector<int> Grid::pipeline_group(int dp_rank) const {
  std::vector<int> ranks;
  for (int s = 0; s < pp_; ++s) ranks.push_back(rank_at(s, dp_rank));
  return ranks;
}

}  // namespace shardscope
