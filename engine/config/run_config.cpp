// SPDX-License-Identifier: GPL-3.0-or-later
#include "config/run_config.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "model/model_config.h"

namespace shardscope {

std::int64_t RunConfig::warmup_steps() const {
  return warmup >= 0 ? warmup : std::min<std::int64_t>(100, steps / 10);
}

namespace {
void require(bool ok, const std::string& message) {
  if (!ok) throw ConfigError(message);
}

// Steps, batch shape, learning rate and the other training fields.
void validate_training(const RunConfig& c, const ModelConfig& model) {
  require(c.steps > 0, "--steps must be at least 1 (got " + std::to_string(c.steps) + ")");
  require(c.batch > 0, "--batch must be at least 1 (got " + std::to_string(c.batch) + ")");
  require(c.seq > 0, "--seq must be at least 1 (got " + std::to_string(c.seq) + ")");
  require(c.seq <= model.max_seq, "--seq " + std::to_string(c.seq) + " exceeds the maximum sequence length of " +
                                      model.name + " (" + std::to_string(model.max_seq) + ")");
  require(std::isfinite(c.lr) && c.lr > 0.0f && c.lr < 10.0f, "--lr must be in (0, 10) (got " + std::to_string(c.lr) + ")");
  require(c.min_lr_ratio >= 0.0f && c.min_lr_ratio <= 1.0f, "--min-lr-ratio must be in [0, 1]");
  require(c.warmup >= -1, "--warmup must be 0 or more");
  require(c.weight_decay >= 0.0f && std::isfinite(c.weight_decay), "--weight-decay must be 0 or more");
  require(c.grad_clip >= 0.0f && std::isfinite(c.grad_clip), "--grad-clip must be 0 (off) or more");
  require(c.eval_every >= 0, "--eval-every must be 0 (off) or more");
  require(c.eval_batches > 0, "--eval-batches must be at least 1");
  require(c.threads >= 0 && c.threads <= 1024, "--threads must be between 0 (all cores) and 1024");
}

// The dp x pp grid, the data-parallel mode, ZeRO and how the batch splits.
void validate_layout(const RunConfig& c, const ModelConfig& model) {
  require(c.dp >= 1 && c.dp <= 64, "--dp must be between 1 and 64 (got " + std::to_string(c.dp) + ")");
  require(c.pp >= 1, "--pp must be at least 1 (got " + std::to_string(c.pp) + ")");
  require(c.ranks == 0 || c.ranks == c.dp * c.pp,
          "--ranks " + std::to_string(c.ranks) + " does not equal --dp " + std::to_string(c.dp) + " x --pp " +
              std::to_string(c.pp) + " = " + std::to_string(c.dp * c.pp) + " (every rank sits on the dp x pp grid)");
  require(c.pp <= model.layers, "--pp " + std::to_string(c.pp) + " is more pipeline stages than " + model.name +
                                    " has layers (" + std::to_string(model.layers) + ")");
  require(c.micro_batches >= 1, "--micro-batches must be at least 1 (got " + std::to_string(c.micro_batches) + ")");
  require(c.pp == 1 || c.dp_mode == DataParallelMode::ddp,
          "--dp-mode naive runs without pipeline stages (torch.nn.DataParallel has none): use --pp 1 or --dp-mode ddp");
  require(c.accum >= 1, "--accum must be at least 1 (got " + std::to_string(c.accum) + ")");
  require(c.zero_stage >= 0 && c.zero_stage <= 3, "--zero must be 0, 1, 2 or 3 (got " +
                                                      std::to_string(c.zero_stage) + ")");
  require(c.zero_stage <= 1 || c.pp == 1, "--zero " + std::to_string(c.zero_stage) +
                                              " with --pp " + std::to_string(c.pp) +
                                              " is refused: ZeRO-2/3 shard gradients across data-parallel ranks "
                                              "per layer, which pipeline stages would interleave (DeepSpeed refuses "
                                              "it too); use --zero 0 or 1 with pipelines");
  require(c.zero_stage == 0 || c.dp_mode == DataParallelMode::ddp,
          "--zero " + std::to_string(c.zero_stage) + " needs --dp-mode ddp (ZeRO shards across DDP ranks)");
  require(c.bucket_mb > 0.0 && c.bucket_mb <= 4096.0, "--bucket-mb must be in (0, 4096]");
  const long long split = static_cast<long long>(c.dp) * c.accum * c.micro_batches;
  require(c.batch % split == 0, "--batch " + std::to_string(c.batch) + " does not split into --dp " +
                                    std::to_string(c.dp) + " x --accum " + std::to_string(c.accum) +
                                    " x --micro-batches " + std::to_string(c.micro_batches) +
                                    " equal micro-batches (" + std::to_string(c.batch) + " is not a multiple of " +
                                    std::to_string(split) + ")");
}

// fp16 loss scaling (and its test hook).
void validate_loss_scaling(const RunConfig& c) {
  require(c.initial_scale_power >= 0 && c.initial_scale_power <= 127,
          "--initial-scale-power must be between 0 and 127 (the scale is 2^power, a finite f32)");
  require(c.loss_scale >= 0.0f && std::isfinite(c.loss_scale), "--loss-scale must be 0 (dynamic) or a positive scale");
  require(c.scale_window == -1 || c.scale_window >= 1, "--scale-window must be at least 1");
  require(c.hysteresis == -1 || c.hysteresis >= 1, "--hysteresis must be at least 1");
  require(c.min_loss_scale == -1.0f || (c.min_loss_scale > 0.0f && std::isfinite(c.min_loss_scale)),
          "--min-loss-scale must be positive");
  require(c.loss_scaler == LossScaleRules::deepspeed || (c.hysteresis == -1 && c.min_loss_scale == -1.0f),
          std::string(c.hysteresis != -1 ? "--hysteresis" : "--min-loss-scale") +
              " is a DeepSpeed rule: add --loss-scaler deepspeed (torch GradScaler has neither)");
  require(c.precision == Precision::fp16 ||
              (c.loss_scale == 0.0f && c.scale_window == -1 && c.hysteresis == -1 && c.min_loss_scale == -1.0f &&
               c.initial_scale_power == 16 && c.loss_scaler == LossScaleRules::torch_grad_scaler),
          "the loss-scale flags apply to --precision fp16 only (bf16 and fp32 run without a loss scaler)");
  require(c.loss_scale == 0.0f || (c.scale_window == -1 && c.hysteresis == -1 && c.min_loss_scale == -1.0f &&
                                   c.initial_scale_power == 16),
          "--loss-scale sets a static scale: --initial-scale-power, --scale-window, --hysteresis and "
          "--min-loss-scale apply to the dynamic scale only");
  require(c.overflow_rank < c.world_size(), "--inject-overflow: rank " + std::to_string(c.overflow_rank) +
                                                " does not exist (world size " + std::to_string(c.world_size()) + ")");
  require(c.overflow_rank < 0 || c.precision == Precision::fp16, "--inject-overflow needs --precision fp16");
}

// Where the ranks compute (and the failure test hook).
void validate_devices(const RunConfig& c) {
  require(c.device == "cpu" || c.device == "cuda", "--device must be cpu or cuda (got \"" + c.device + "\")");
  require(!c.gpus.empty() && std::all_of(c.gpus.begin(), c.gpus.end(), [](int g) { return g >= 0 && g < 1024; }),
          "--gpus must list GPU indices, e.g. 0 or 0,1");
  {
    std::vector<int> sorted = c.gpus;
    std::sort(sorted.begin(), sorted.end());
    require(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end(),
            "--gpus lists a GPU twice; to put several ranks on one GPU, list that GPU alone (--gpus 0)");
  }
  const auto gpu_count = static_cast<int>(c.gpus.size());
  require(gpu_count == 1 || gpu_count == c.world_size(),
          "--gpus lists " + std::to_string(gpu_count) + " GPUs for " + std::to_string(c.world_size()) +
              " ranks (dp x pp): list one GPU for every rank (NCCL between them), or one GPU that all ranks share");
  require(c.fail_rank < c.world_size(), "--inject-failure: rank " + std::to_string(c.fail_rank) +
                                            " does not exist (world size " + std::to_string(c.world_size()) + ")");
}
}  // namespace

void validate_run_config(const RunConfig& c) {
  const ModelConfig model = find_model_preset(c.model);
  validate_training(c, model);
  validate_layout(c, model);
  validate_loss_scaling(c);
  validate_devices(c);
}

}  // namespace shardscope
