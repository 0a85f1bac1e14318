// SPDX-License-Identifier: GPL-3.0-or-later
#include "train/adamw.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>


namespace shardscope {

namespace {
constexpr std::int64_t kWidenBlock = 16384;  // gradients widened per backend call (64 KiB)
std::int64_t range_end(const ParameterLayout& layout, std::int64_t end) { return end < 0 ? layout.total() : end; }
}  // namespace

AdamW::AdamW(const ParameterLayout& layout, Backend& backend, MemoryLedger& ledger, const AdamWOptions& options,
             std::int64_t begin, std::int64_t end)
    : AdamW(layout, backend, ledger, options, std::vector<ShardRange>{{begin, range_end(layout, end), 0}}) {}

AdamW::AdamW(const ParameterLayout& layout, Backend& backend, MemoryLedger& ledger, const AdamWOptions& options,
             const std::vector<ShardRange>& ranges)
    : ranges_(ranges), backend_(backend), options_(options) {
  std::int64_t packed = 0;
  for (const ShardRange& r : ranges) {
    add_range(layout, r.flat_begin, r.flat_end, r.packed_begin);
    packed = std::max(packed, r.packed_begin + (r.flat_end - r.flat_begin));
  }
  m_ = Buffer(ledger, MemoryCategory::optimizer_states, packed * 4);
  v_ = Buffer(ledger, MemoryCategory::optimizer_states, packed * 4);
  if (options.master_weights) {
    master_ = Buffer(ledger, MemoryCategory::optimizer_states, packed * 4);
    widened_ = Buffer(ledger, MemoryCategory::workspace, std::min(packed, kWidenBlock) * 4);
  }
}

void AdamW::add_range(const ParameterLayout& layout, std::int64_t begin, std::int64_t end, std::int64_t packed_begin) {
  for (const auto& e : layout.entries()) {
    const std::int64_t lo = std::max(e.offset, begin), hi = std::min(e.offset + e.numel, end);
    if (lo >= hi) continue;
    const std::int64_t state = packed_begin + (lo - begin);
    Span* last = spans_.empty() ? nullptr : &spans_.back();
    if (last != nullptr && last->decay == e.weight_decay && last->offset + last->numel == lo &&
        last->state + last->numel == state) {
      last->numel += hi - lo;
    } else {
      spans_.push_back({lo, hi - lo, e.weight_decay, state});
    }
  }
}

math::AdamWStep AdamW::next_step(float lr, float grad_scale) {
  ++t_;
  math::AdamWStep s{};
  s.lr = lr;
  s.beta1 = options_.beta1;
  s.beta2 = options_.beta2;
  s.eps = options_.eps;
  s.bias_correction1 = 1.0f - static_cast<float>(std::pow(options_.beta1, static_cast<double>(t_)));
  s.bias_correction2 = 1.0f - static_cast<float>(std::pow(options_.beta2, static_cast<double>(t_)));
  s.grad_scale = grad_scale;
  return s;
}

void AdamW::step(float* params, const float* grads, float lr, float grad_scale, bool params_packed,
                 bool grads_packed) {
  math::AdamWStep s = next_step(lr, grad_scale);
  for (const Span& span : spans_) {
    s.weight_decay = span.decay ? options_.weight_decay : 0.0f;
    backend_.adamw(params + (params_packed ? span.state : span.offset),
                   grads + (grads_packed ? span.state : span.offset), m_.floats() + span.state,
                   v_.floats() + span.state, span.numel, s);
  }
}

void AdamW::load_master(const std::uint16_t* params, DType dtype, bool params_packed) {
  if (master_.empty()) throw std::logic_error("AdamW::load_master: the optimizer keeps no master weights");
  for (const Span& span : spans_)
    backend_.widen(dtype, params + (params_packed ? span.state : span.offset), master_.floats() + span.state,
                   span.numel);
}

void AdamW::step_mixed(std::uint16_t* params, const std::uint16_t* grads, DType dtype, float lr, float grad_scale,
                       bool params_packed, bool grads_packed) {
  if (master_.empty()) throw std::logic_error("AdamW::step_mixed: the optimizer keeps no master weights");
  math::AdamWStep s = next_step(lr, grad_scale);
  float* wide = widened_.floats();
  for (const Span& span : spans_) {
    s.weight_decay = span.decay ? options_.weight_decay : 0.0f;
    for (std::int64_t done = 0; done < span.numel; done += kWidenBlock) {
      const std::int64_t n = std::min(kWidenBlock, span.numel - done);
      const std::int64_t state = span.state + done;
      backend_.widen(dtype, grads + (grads_packed ? state : span.offset + done), wide, n);
      float* master = master_.floats() + state;
      backend_.adamw(master, wide, m_.floats() + state, v_.floats() + state, n, s);
      backend_.narrow(dtype, master, params + (params_packed ? state : span.offset + done), n);
    }
  }
}

double global_grad_norm(Backend& backend, const float* grads, std::int64_t n) {
  return std::sqrt(backend.sum_of_squares(grads, n));
}

float clip_factor(double norm, float max_norm) {
  if (max_norm <= 0.0f) return 1.0f;
  const double factor = max_norm / (norm + 1e-6);
  return factor < 1.0 ? static_cast<float>(factor) : 1.0f;
}

}  // namespace shardscope
