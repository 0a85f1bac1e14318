// SPDX-License-Identifier: GPL-3.0-or-later
#include "data/masked_lm.h"

namespace shardscope {

void mask_tokens(const std::int32_t* tokens, std::int32_t* inputs, std::int32_t* targets, int T, Rng& rng,
                 const MaskedLmOptions& o) {
  int chosen = 0;
  for (int t = 0; t < T; ++t) {
    inputs[t] = tokens[t];
    targets[t] = -1;
    if (rng.uniform() >= o.select_prob) continue;
    ++chosen;
    targets[t] = tokens[t];
    const float r = rng.uniform();
    if (r < o.mask_prob) {
      inputs[t] = o.mask_id;
    } else if (r < o.mask_prob + o.random_prob) {
      inputs[t] = static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(o.random_vocab)));
    }
  }
  if (chosen == 0 && T > 0) {
    const int t = static_cast<int>(rng.below(static_cast<std::uint64_t>(T)));
    targets[t] = tokens[t];
    inputs[t] = o.mask_id;
  }
}

}  // namespace shardscope
