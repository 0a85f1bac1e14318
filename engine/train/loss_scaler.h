// SPDX-License-Identifier: GPL-3.0-or-later
// Loss scaling for fp16 training. The loss is multiplied by scale() before
// backward; after backward the caller checks the (global) gradients for inf/NaN
// and calls update(found_inf) exactly once per optimizer step. When the result
// says `skipped`, the optimizer step must not be applied (parameters, master
// weights and optimizer state stay untouched); otherwise the gradients are
// divided by `scale_used` before the step.
//
// Modes:
//   none    bf16 and fp32 runs: scale 1, never skips (overflows are still counted).
//   fixed   DeepSpeed's static `loss_scale` > 0: the scale never changes, but an
//           overflow still skips the step (DeepSpeed's fp16 optimizers check
//           overflow whatever the scaler is, and skip the step on overflow).
//   dynamic one of two rule sets:
//     torch_grad_scaler  torch.cuda.amp.GradScaler (update() -> _amp_update_scale_,
//                        aten/src/ATen/native/cuda/AmpKernels.cu):
//       overflow: scale *= backoff_factor, growth tracker = 0, step skipped;
//       clean:    tracker + 1; when it equals growth_interval, scale *= growth_factor
//                 (only if the result is finite) and tracker = 0.
//       Defaults: init_scale 2^16, growth 2.0, backoff 0.5, growth_interval 2000.
//     deepspeed          DeepSpeed's DynamicLossScaler.update_scale
//                        (deepspeed/runtime/fp16/loss_scaler.py), state cur_iter,
//                        last_overflow_iter (starts -1), cur_hysteresis (starts
//                        at `hysteresis`, DeepSpeed's delayed_shift):
//       overflow: if hysteresis == 1 or cur_hysteresis == 1: (raise if scale is
//                 already min_scale and raise_error_at_min_scale) scale =
//                 max(scale / 2, min_scale); else cur_hysteresis -= 1 and the
//                 scale stays. Either way last_overflow_iter = cur_iter and the
//                 step is skipped.
//       clean:    if consecutive_hysteresis: cur_hysteresis = hysteresis.
//                 stable = cur_iter - last_overflow_iter - 1; if stable > 0 and
//                 stable % window == 0: scale *= 2 and (without
//                 consecutive_hysteresis) cur_hysteresis = hysteresis.
//       then cur_iter += 1.
//       Consequences, tested: the first growth comes on the (window + 1)-th
//       clean step (stable counts from 0), later ones every `window`; without
//       consecutive_hysteresis the hysteresis is refilled only by a growth, so
//       after it is spent every overflow halves the scale, even non-consecutive ones.
//       Config defaults (deepspeed/runtime/constants.py, the "fp16" block):
//       loss_scale 0 (dynamic), initial_scale_power 16, loss_scale_window 1000,
//       hysteresis 2, consecutive_hysteresis false, min_loss_scale 1; and
//       raise_error_at_min_scale false (RAISE_ERROR_AT_MIN_SCALE_DEFAULT of
//       DeepSpeed's fp16 config reader; the Python class's own default is True).
// One deviation from DeepSpeed, which keeps the scale in a Python float (double):
// here it is an f32, as in PyTorch, so a growth past FLT_MAX is refused in both
// rule sets (only reachable above 2^127).
#pragma once

#include <cstdint>

#include "config/run_config.h"

namespace shardscope {

enum class LossScaleMode { none, fixed, dynamic };

// The "fp16" block of a DeepSpeed config, with DeepSpeed's defaults.
struct DeepSpeedFp16Options {
  float loss_scale = 0.0f;  // 0: dynamic; > 0: a fixed scale
  int initial_scale_power = 16;
  std::int64_t loss_scale_window = 1000;
  int hysteresis = 2;
  bool consecutive_hysteresis = false;
  float min_loss_scale = 1.0f;
  bool raise_error_at_min_scale = false;
};

struct LossScalerOptions {
  LossScaleMode mode = LossScaleMode::dynamic;
  LossScaleRules rules = LossScaleRules::torch_grad_scaler;
  float initial_scale = 65536.0f;  // fixed mode: the scale
  float growth_factor = 2.0f;
  float backoff_factor = 0.5f;
  std::int64_t growth_interval = 2000;  // DeepSpeed: loss_scale_window
  // DeepSpeed rules only:
  int hysteresis = 1;  // delayed_shift
  bool consecutive_hysteresis = false;
  float min_scale = 0.0f;  // min_loss_scale
  bool raise_error_at_min_scale = false;

  static LossScalerOptions grad_scaler();  // torch.cuda.amp.GradScaler() defaults
  static LossScalerOptions deepspeed(const DeepSpeedFp16Options& fp16 = {});
  static LossScalerOptions disabled();  // bf16 / fp32
  static LossScalerOptions fixed(float scale);
};

// What update() decided for the step just finished.
struct LossScaleUpdate {
  bool found_inf = false;
  bool skipped = false;     // do not apply this optimizer step
  float scale_used = 1.0f;  // the scale this step's loss was multiplied by
  float new_scale = 1.0f;   // the scale for the next step
  bool backed_off = false;  // the scale was reduced (or held at min_scale by the floor)
  bool grew = false;
  bool hysteresis_consumed = false;  // DeepSpeed: overflow absorbed, scale kept
};

// Everything update() changes: what a checkpoint saves and restores (train/checkpoint.h).
struct LossScalerState {
  float scale = 1.0f;
  std::int64_t steps = 0, overflows = 0, skipped = 0, since_overflow = 0, growth_tracker = 0;
  std::int64_t last_overflow_iter = -1;
  int hysteresis_left = 1;
};

class DynamicLossScaler {
 public:
  // Throws std::invalid_argument for options no rule set accepts (the message names the field).
  explicit DynamicLossScaler(const LossScalerOptions& options = LossScalerOptions::grad_scaler());

  float scale() const { return scale_; }
  bool enabled() const { return options_.mode != LossScaleMode::none; }
  const LossScalerOptions& options() const { return options_; }

  // Call once per optimizer step with the globally agreed overflow flag.
  // DeepSpeed rules with raise_error_at_min_scale: throws std::runtime_error on
  // an overflow at min_scale, as DeepSpeed does.
  LossScaleUpdate update(bool found_inf);

  std::int64_t steps() const { return steps_; }
  std::int64_t overflows() const { return overflows_; }
  std::int64_t skipped_steps() const { return skipped_; }
  std::int64_t steps_since_overflow() const { return since_overflow_; }  // clean steps in a row
  std::int64_t growth_tracker() const { return growth_tracker_; }       // torch rules
  int hysteresis_left() const { return cur_hysteresis_; }               // deepspeed rules

  LossScalerState state() const {
    return {scale_, steps_, overflows_, skipped_, since_overflow_, growth_tracker_, last_overflow_iter_, cur_hysteresis_};
  }
  void restore(const LossScalerState& s) {
    scale_ = s.scale, steps_ = s.steps, overflows_ = s.overflows, skipped_ = s.skipped;
    since_overflow_ = s.since_overflow, growth_tracker_ = s.growth_tracker;
    last_overflow_iter_ = s.last_overflow_iter, cur_hysteresis_ = s.hysteresis_left;
  }

 private:
  void update_torch(bool found_inf, LossScaleUpdate& result);
  void update_deepspeed(bool found_inf, LossScaleUpdate& result);

  LossScalerOptions options_;
  float scale_ = 1.0f;
  std::int64_t steps_ = 0;
  std::int64_t overflows_ = 0;
  std::int64_t skipped_ = 0;
  std::int64_t since_overflow_ = 0;
  std::int64_t growth_tracker_ = 0;
  std::int64_t last_overflow_iter_ = -1;  // deepspeed rules; cur_iter is steps_
  int cur_hysteresis_ = 1;
};

// The scaler a run uses (RunConfig's fp16 fields): disabled for fp32 and bf16.
LossScalerOptions loss_scaler_options(const RunConfig& config);

}  // namespace shardscope
