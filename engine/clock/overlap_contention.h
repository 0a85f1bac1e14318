// SPDX-License-Identifier: GPL-3.0-or-later
// What hiding a collective behind compute costs that compute. A collective that runs beside the
// GEMMs takes some of their SMs and memory bandwidth, so the kernels it overlaps run slower than
// they would alone. Measured: overlapping slows the computation by 18.9% on average (40.0% at most)
// against the same computation with nothing beside it, over GPT and LLaMA training on 4 × A100,
// H100, MI250 and MI210 (Lee et al. 2025, "Characterizing Compute-Communication Overlap in
// GPU-Accelerated Distributed Deep Learning: Performance and Power Implications", arXiv 2507.03114).
// The mean of four GPUs with NCCL's (and RCCL's) collectives, not an H100 figure nor Transformer
// Engine's userbuffers; the one measurement found (docs/PERFORMANCE.md).
#pragma once

#include <algorithm>

namespace shardscope {

inline constexpr double kOverlapComputeSlowdown = 0.189;  // σ: compute beside a collective takes (1 + σ)×

struct HiddenCollective {
  double exposed_s = 0;     // the collective's seconds the compute could not cover
  double contention_s = 0;  // what the compute it hid behind lost: hidden·σ/(1 + σ)
};

// A collective of comm_s beside compute_s seconds of compute that may overlap it, of which at least
// first_chunk_s always shows (a bucket the first layer waits for). Compute beside the collective
// runs (1 + σ) times as long, so compute_s covers up to (1 + σ)·compute_s of it; each hidden second
// is a second in which the compute did 1/(1 + σ) of a second's work, σ/(1 + σ) of it lost.
inline HiddenCollective hide_collective(double comm_s, double compute_s, double first_chunk_s = 0,
                                        double slowdown = kOverlapComputeSlowdown) {
  HiddenCollective h;
  h.exposed_s = std::min(comm_s, std::max(first_chunk_s, comm_s - compute_s * (1 + slowdown)));
  h.contention_s = (comm_s - h.exposed_s) * slowdown / (1 + slowdown);
  return h;
}

}  // namespace shardscope
