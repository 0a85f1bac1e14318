// SPDX-License-Identifier: GPL-3.0-or-later
// A tp rank's tokens of a whole (B, T, C) activation under sequence
// parallelism (model/sequence_parallel.cpp): tokens [r T/t, (r + 1) T/t) of
// every sequence, held as (B, T/t, C). Local copies, no communication: BERT's
// residuals read the rank's tokens of a gathered LayerNorm output, and the
// gradient of a gathered tensor that every rank used whole is its own block.
#pragma once

namespace shardscope {

class Backend;

// shard (rows / t, C) := (add: +=) tp rank `rank`'s tokens of whole (rows, C), T tokens a sequence,
// with the backend's copies and adds (both in its memory).
void copy_rank_tokens(Backend& backend, float* shard, const float* whole, int rows, int T, int t, int rank, int C,
                      bool add = false);

}  // namespace shardscope
