// SPDX-License-Identifier: GPL-3.0-or-later
// The ranks on a data-parallel x pipeline-parallel grid, built in one place;
// every strategy asks the grid for its peers. Global rank r sits at
//   pipeline stage  s = r / dp,   data-parallel rank  d = r % dp,
// so the dp ranks of one stage are consecutive (as Megatron orders them).
#pragma once

#include <vector>

namespace shardscope {

class Grid {
 public:
  // Throws ConfigError unless dp >= 1 and pp >= 1.
  Grid(int dp, int pp);

  int dp() const { return dp_; }
  int pp() const { return pp_; }
  int world_size() const { return dp_ * pp_; }

  int stage_of(int rank) const { return rank / dp_; }
  int dp_rank_of(int rank) const { return rank % dp_; }
  int rank_at(int stage, int dp_rank) const { return stage * dp_ + dp_rank; }

  // Global ranks of the data-parallel group of `stage` (same stage, all dp ranks).
  std::vector<int> dp_group(int stage) const;
  // Global ranks of the pipeline of `dp_rank` (same dp rank, stages 0 .. pp-1).
  std::vector<int> pipeline_group(int dp_rank) const;

 private:
  int dp_, pp_;
};

}  // namespace shardscope
