// SPDX-License-Identifier: GPL-3.0-or-later
// The loss scaler's rules; loss_scaler.h states them with their sources.
#include "train/loss_scaler.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace shardscope {

LossScalerOptions LossScalerOptions::grad_scaler() { return LossScalerOptions{}; }

LossScalerOptions LossScalerOptions::deepspeed(const DeepSpeedFp16Options& fp16) {
  if (fp16.loss_scale > 0.0f) return fixed(fp16.loss_scale);
  if (fp16.initial_scale_power < -126 || fp16.initial_scale_power > 127)
    throw std::invalid_argument("initial_scale_power " + std::to_string(fp16.initial_scale_power) +
                                " is outside [-126, 127]");
  LossScalerOptions o;
  o.mode = LossScaleMode::dynamic;
  o.rules = LossScaleRules::deepspeed;
  o.initial_scale = std::ldexp(1.0f, fp16.initial_scale_power);  // 2**initial_scale_power
  o.growth_factor = 2.0f;                                        // DeepSpeed's scale_factor
  o.backoff_factor = 0.5f;                                       // cur_scale / scale_factor
  o.growth_interval = fp16.loss_scale_window;
  o.hysteresis = fp16.hysteresis;
  o.consecutive_hysteresis = fp16.consecutive_hysteresis;
  o.min_scale = fp16.min_loss_scale;
  o.raise_error_at_min_scale = fp16.raise_error_at_min_scale;
  return o;
}

LossScalerOptions LossScalerOptions::disabled() {
  LossScalerOptions o;
  o.mode = LossScaleMode::none;
  o.initial_scale = 1.0f;
  return o;
}

LossScalerOptions LossScalerOptions::fixed(float scale) {
  LossScalerOptions o;
  o.mode = LossScaleMode::fixed;
  o.initial_scale = scale;
  return o;
}

namespace {

void require(bool ok, const char* field, const std::string& why) {
  if (!ok) throw std::invalid_argument(std::string("loss scaler: ") + field + " " + why);
}

bool positive_finite(float v) { return v > 0.0f && std::isfinite(v); }

}  // namespace

DynamicLossScaler::DynamicLossScaler(const LossScalerOptions& options) : options_(options) {
  if (options_.mode == LossScaleMode::none) {
    scale_ = 1.0f;
    return;
  }
  require(positive_finite(options_.initial_scale), "initial scale", "must be positive and finite");
  scale_ = options_.initial_scale;
  if (options_.mode == LossScaleMode::fixed) return;
  require(positive_finite(options_.growth_factor) && options_.growth_factor > 1.0f, "growth factor",
          "must be finite and > 1");
  require(options_.backoff_factor > 0.0f && options_.backoff_factor < 1.0f, "backoff factor", "must be in (0, 1)");
  require(options_.growth_interval >= 1, "growth interval (loss_scale_window)", "must be >= 1");
  require(options_.hysteresis >= 1, "hysteresis", "must be >= 1");
  require(options_.min_scale >= 0.0f && std::isfinite(options_.min_scale), "min loss scale",
          "must be finite and >= 0");
  cur_hysteresis_ = options_.hysteresis;
}

LossScaleUpdate DynamicLossScaler::update(bool found_inf) {
  LossScaleUpdate result;
  result.found_inf = found_inf;
  result.scale_used = scale_;
  if (found_inf) ++overflows_;
  since_overflow_ = found_inf ? 0 : since_overflow_ + 1;

  switch (options_.mode) {
    case LossScaleMode::none:  // bf16/fp32: nothing to scale, nothing skipped
      break;
    case LossScaleMode::fixed:  // the scale never moves; an overflowed step is still skipped
      result.skipped = found_inf;
      break;
    case LossScaleMode::dynamic:
      result.skipped = found_inf;
      if (options_.rules == LossScaleRules::torch_grad_scaler)
        update_torch(found_inf, result);
      else
        update_deepspeed(found_inf, result);
      break;
  }
  if (result.skipped) ++skipped_;
  ++steps_;
  result.new_scale = scale_;
  return result;
}

// torch _amp_update_scale_ (AmpKernels.cu / AmpKernels.cpp).
void DynamicLossScaler::update_torch(bool found_inf, LossScaleUpdate& result) {
  if (found_inf) {
    scale_ *= options_.backoff_factor;
    growth_tracker_ = 0;
    result.backed_off = true;
    return;
  }
  const std::int64_t successful = growth_tracker_ + 1;
  if (successful == options_.growth_interval) {
    const float grown = scale_ * options_.growth_factor;
    if (std::isfinite(grown)) {  // "Do not grow the scale past fp32 bounds to inf."
      scale_ = grown;
      result.grew = true;
    }
    growth_tracker_ = 0;
  } else {
    growth_tracker_ = successful;
  }
}

// DeepSpeed DynamicLossScaler.update_scale (deepspeed/runtime/fp16/loss_scaler.py).
void DynamicLossScaler::update_deepspeed(bool found_inf, LossScaleUpdate& result) {
  const std::int64_t cur_iter = steps_;
  if (found_inf) {
    if (options_.hysteresis == 1 || cur_hysteresis_ == 1) {
      if (scale_ == options_.min_scale && options_.raise_error_at_min_scale)
        throw std::runtime_error("Current loss scale already at minimum - cannot decrease scale anymore.");
      const float next = scale_ * options_.backoff_factor;
      scale_ = next > options_.min_scale ? next : options_.min_scale;  // max(cur / factor, min_scale)
      result.backed_off = true;
    } else {
      --cur_hysteresis_;
      result.hysteresis_consumed = true;
    }
    last_overflow_iter_ = cur_iter;
    return;
  }
  if (options_.consecutive_hysteresis) cur_hysteresis_ = options_.hysteresis;
  const std::int64_t stable_interval = (cur_iter - last_overflow_iter_) - 1;
  if (stable_interval > 0 && stable_interval % options_.growth_interval == 0) {
    if (!options_.consecutive_hysteresis) cur_hysteresis_ = options_.hysteresis;
    const float grown = scale_ * options_.growth_factor;
    if (std::isfinite(grown)) {  // f32 scale (see the header); DeepSpeed's double would keep growing
      scale_ = grown;
      result.grew = true;
    }
  }
}

LossScalerOptions loss_scaler_options(const RunConfig& c) {
  if (c.precision != Precision::fp16) return LossScalerOptions::disabled();
  if (c.loss_scale > 0.0f) {
    LossScalerOptions o = LossScalerOptions::fixed(c.loss_scale);
    o.rules = c.loss_scaler;
    return o;
  }
  if (c.loss_scaler == LossScaleRules::deepspeed) {
    DeepSpeedFp16Options ds;
    ds.initial_scale_power = c.initial_scale_power;
    if (c.scale_window > 0) ds.loss_scale_window = c.scale_window;
    if (c.hysteresis > 0) ds.hysteresis = c.hysteresis;
    if (c.min_loss_scale >= 0.0f) ds.min_loss_scale = c.min_loss_scale;
    return LossScalerOptions::deepspeed(ds);
  }
  LossScalerOptions o = LossScalerOptions::grad_scaler();
  o.initial_scale = std::ldexp(1.0f, c.initial_scale_power);
  if (c.scale_window > 0) o.growth_interval = c.scale_window;
  return o;
}

}  // namespace shardscope
