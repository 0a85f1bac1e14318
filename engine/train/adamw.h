// SPDX-License-Identifier: GPL-3.0-or-later
// AdamW (Loshchilov & Hutter 2019) with PyTorch's semantics: bias-corrected
// moments, decoupled weight decay applied only to parameters the layout marks
// (matrices and embeddings, not biases or LayerNorm). m and v are 8 bytes per
// parameter in the `optimizer_states` category.
#pragma once

#include <cstdint>
#include <vector>

#include "core/buffer.h"
#include "core/dtype.h"
#include "model/parameter_layout.h"
#include "ops/backend.h"
#include "ops/math.h"

namespace shardscope {

struct AdamWOptions {
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.1f;
  // Mixed precision: keep fp32 master weights of the parameters this optimizer
  // updates (4 bytes each, in `optimizer_states`: with m and v, the ZeRO
  // paper's 12 bytes per parameter), and update from 16-bit gradients.
  bool master_weights = false;
};

class AdamW {
 public:
  // Updates the flat range [begin, end) of the parameters (end < 0: to the end):
  // the whole model, or this rank's shard under ZeRO; m and v cover only that range.
  AdamW(const ParameterLayout& layout, Backend& backend, MemoryLedger& ledger, const AdamWOptions& options,
        std::int64_t begin = 0, std::int64_t end = -1);
  // A ZeRO-2/3 shard: several flat ranges [flat_begin, flat_end), stored packed
  // one after another from `packed_begin` in the shard buffers.
  struct ShardRange {
    std::int64_t flat_begin, flat_end, packed_begin;
  };
  AdamW(const ParameterLayout& layout, Backend& backend, MemoryLedger& ledger, const AdamWOptions& options,
        const std::vector<ShardRange>& ranges);

  // One update of all parameters with learning rate `lr`, the gradients first
  // multiplied by grad_scale (the clipping factor, folded in to save a pass).
  // Packed: the buffer holds only the shard, in ShardRange order (else it is
  // indexed by flat offset).
  void step(float* params, const float* grads, float lr, float grad_scale = 1.0f, bool params_packed = false,
            bool grads_packed = false);
  // Mixed precision (options.master_weights): the master weights start as the
  // 16-bit parameters widened (as DeepSpeed's fp16 optimizers build them).
  void load_master(const std::uint16_t* params, DType dtype, bool params_packed = false);
  // One update from 16-bit gradients: each is widened and multiplied by
  // grad_scale (1 / loss scale times the clipping factor), the fp32 master
  // weights take the step, and the 16-bit parameters become the master weights
  // rounded to nearest even.
  void step_mixed(std::uint16_t* params, const std::uint16_t* grads, DType dtype, float lr, float grad_scale,
                  bool params_packed = false, bool grads_packed = false);
  float* master() { return master_.floats(); }
  const float* master() const { return master_.floats(); }
  const float* m() const { return m_.floats(); }
  const float* v() const { return v_.floats(); }
  std::int64_t state_size() const { return m_.bytes() / 4; }  // elements of m, v (and master)
  std::int64_t steps_taken() const { return t_; }
  void set_steps_taken(std::int64_t t) { t_ = t; }  // a resumed run's bias correction (train/checkpoint.h)
  // The flat ranges this optimizer updates and where their states are packed.
  const std::vector<ShardRange>& ranges() const { return ranges_; }
  const AdamWOptions& options() const { return options_; }
  float* m() { return m_.floats(); }
  float* v() { return v_.floats(); }

 private:
  // Runs of consecutive parameters that share a weight-decay setting.
  struct Span {
    std::int64_t offset, numel;
    bool decay;
    std::int64_t state;  // index into m and v (= into packed buffers)
  };
  void add_range(const ParameterLayout& layout, std::int64_t begin, std::int64_t end, std::int64_t packed_begin);
  math::AdamWStep next_step(float lr, float grad_scale);
  std::vector<Span> spans_;
  std::vector<ShardRange> ranges_;
  Backend& backend_;
  AdamWOptions options_;
  Buffer m_;  // first moments (P)
  Buffer v_;  // second moments (P)
  Buffer master_;   // mixed precision: fp32 master weights (P)
  Buffer widened_;  // mixed precision: a block of gradients widened to fp32 (workspace)
  std::int64_t t_ = 0;
};

// Global L2 norm of the gradients, accumulated in double.
double global_grad_norm(Backend& backend, const float* grads, std::int64_t n);
// Gradient clipping as torch.nn.utils.clip_grad_norm_: the gradients are scaled
// by max_norm / (norm + 1e-6) when that is below 1. Returns the factor (1 when
// no clipping is needed or max_norm <= 0).
float clip_factor(double norm, float max_norm);

}  // namespace shardscope
