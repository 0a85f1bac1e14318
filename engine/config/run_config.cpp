// SPDX-License-Identifier: GPL-3.0-or-later
#include "config/run_config.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>

#include "config/context_parallel_fields.h"
#include "config/run_schema.h"
#include "core/error.h"
#include "data/byte_tokenizer.h"
#include "io/hf_model.h"
#include "model/model_config.h"

namespace shardscope {

ModelConfig run_model_config(const RunConfig& config) {
  if (!config.init_from.empty()) return read_hf_model_config(config.init_from);
  // A GPT-2 or BERT config.json trains from fresh weights, as a preset does (its directory holds no weights).
  // Only a file named config.json: its directory is what read_hf_model_config reads, so another
  // name ending in config.json would silently train (or estimate) the config.json beside it.
  const std::string& m = config.model;
  const std::filesystem::path path(m);
  if (path.filename() == "config.json")
    return read_hf_model_config(path.has_parent_path() ? path.parent_path().string() : ".");
  if (m.size() >= 11 && m.compare(m.size() - 11, 11, "config.json") == 0)
    throw ConfigError(m +
                      ": train reads a model from a file named config.json (a Hugging Face model "
                      "directory's); copy it to a directory of its own as config.json");
  return find_model_preset(m);
}

std::int64_t RunConfig::warmup_steps() const {
  return warmup >= 0 ? warmup : std::min<std::int64_t>(100, steps / 10);
}

namespace {
std::string str(std::int64_t v) {
  return std::to_string(v);
}

// A rule of the run config: the messages name fields as {key} (config/run_schema.h).
void require(bool ok, const std::string& message_en, const std::string& message_zh) {
  if (!ok) throw FieldError(message_en, message_zh);
}

// The model's limits on the batch shape and the layout.
void validate_model_limits(const RunConfig& c, const ModelConfig& model) {
  require(c.seq <= model.max_seq,
          "{seq} " + str(c.seq) + " exceeds the maximum sequence length of " + model.name + " (" +
              str(model.max_seq) + ")",
          "{seq} " + str(c.seq) + " 超过了 " + model.name + " 的最大序列长度（" + str(model.max_seq) + "）");
  // The flag that named the model: --init-from DIR, or --model DIR/config.json (fresh weights).
  const std::string source = c.init_from.empty() ? "{model}" : "{init_from}";
  require(model.vocab >= ByteTokenizer::kVocabSize || (!c.init_from.empty() && has_hf_tokenizer(c.init_from)),
          source + ": the vocabulary of " + model.name + " (" + str(model.vocab) + ") is smaller than the " +
              str(ByteTokenizer::kVocabSize) + " ids of the byte tokenizer that the training text is read with",
          source + "：" + model.name + " 的词表（" + str(model.vocab) + "）小于读取训练文本所用字节分词器的 " +
              str(ByteTokenizer::kVocabSize) + " 个 id");
  require(c.layout.pp() <= model.layers,
          "{pp} " + str(c.layout.pp()) + " is more pipeline stages than " + model.name + " has layers (" +
              str(model.layers) + ")",
          "{pp} " + str(c.layout.pp()) + " 个流水线阶段多于 " + model.name + " 的层数（" + str(model.layers) + "）");
}

// The grid's axes for a message, "dp x pp" and those beyond it only where they are there: a plain
// layout's message reads as it always did.
std::string grid_axes(const RunConfig& c) {
  return std::string("dp x pp") + (c.layout.cp() > 1 ? " x cp" : "") + (c.layout.tp() > 1 ? " x tp" : "");
}
std::string chinese_times(std::string text) {
  for (std::size_t at = text.find(" x "); at != std::string::npos; at = text.find(" x ", at))
    text.replace(at, 3, " × ");
  return text;
}

// The dp x pp grid and how the batch splits over it.
void validate_grid(const RunConfig& c) {
  const int cp = c.layout.cp(), tp = c.layout.tp();
  const std::string more = (cp > 1 ? " x {cp} " + str(cp) : "") + (tp > 1 ? " x {tp} " + str(tp) : "");
  const std::string grid = grid_axes(c);
  const auto chinese = chinese_times;
  require(c.ranks == 0 || c.ranks == c.world_size(),
          "{ranks} " + str(c.ranks) + " does not equal {dp} " + str(c.layout.dp()) + " x {pp} " + str(c.layout.pp()) +
              more + " = " + str(c.world_size()) + " (every rank sits on the " + grid + " grid)",
          "{ranks} " + str(c.ranks) + " 不等于 {dp} " + str(c.layout.dp()) + " × {pp} " + str(c.layout.pp()) +
              chinese(more) + " = " + str(c.world_size()) + "（每个 rank 都在 " + chinese(grid) + " 网格上）");
  const long long split = static_cast<long long>(c.layout.dp()) * c.accum * c.micro_batches;
  require(c.batch % split == 0,
          "{batch} " + str(c.batch) + " does not split into {dp} " + str(c.layout.dp()) + " x {accum} " + str(c.accum) +
              " x {micro_batches} " + str(c.micro_batches) + " equal micro-batches (" + str(c.batch) +
              " is not a multiple of " + str(split) + ")",
          "{batch} " + str(c.batch) + " 无法均分为 {dp} " + str(c.layout.dp()) + " × {accum} " + str(c.accum) +
              " × {micro_batches} " + str(c.micro_batches) + " 个相等的微批次（" + str(c.batch) + " 不是 " +
              str(split) + " 的倍数）");
}

// Tensor parallelism (Megatron-LM): the heads and the vocabulary split over
// the tp ranks, on CPU ranks and on GPUs (--device cuda) alike; what it does
// not combine with is refused by name, so no layout trains silently wrong.
void validate_tensor_parallel(const RunConfig& c, const ModelConfig& model) {
  const int tp = c.layout.tp();
  if (tp == 1) return;
  const std::string t = str(tp);
  require(model.heads % tp == 0,
          "{tp} " + t + ": the " + str(model.heads) + " attention heads of " + model.name + " do not split over " + t +
              " tensor-parallel ranks (each rank takes heads / tp whole heads)",
          "{tp} " + t + "：" + model.name + " 的 " + str(model.heads) + " 个注意力头无法均分到 " + t +
              " 个张量并行 rank（每个 rank 取 heads / tp 个完整的头）");
  require(model.vocab % tp == 0,
          "{tp} " + t + ": the vocabulary of " + model.name + " (" + str(model.vocab) + ") does not split over " + t +
              " tensor-parallel ranks (the vocabulary-parallel embedding gives each rank vocab / tp rows)",
          "{tp} " + t + "：" + model.name + " 的词表（" + str(model.vocab) + "）无法均分到 " + t +
              " 个张量并行 rank（词表并行嵌入给每个 rank vocab / tp 行）");
  require(
      c.dp_mode != DataParallelMode::naive,
      "{tp} " + t +
          " with {dp_mode} naive is refused: tensor parallelism runs with DDP (Megatron-LM has no "
          "DataParallel replicas)",
      "{tp} " + t + " 不能与 {dp_mode} naive 一起用：张量并行与 DDP 一起运行（Megatron-LM 没有 DataParallel 副本）");
}

// Sequence parallelism (Korthikanti et al. 2022) splits every sequence's
// tokens over the tp ranks: it needs tp > 1 and a sequence that divides by it.
// It trains wherever tensor parallelism does (validate_tensor_parallel refuses the rest).
void validate_sequence_parallel(const RunConfig& c) {
  if (!c.sequence_parallel) return;
  const int tp = c.layout.tp();
  const std::string t = str(tp);
  require(tp > 1, "{sequence_parallel} needs {tp} > 1 (it splits the tokens over the tensor-parallel ranks); {tp} is 1",
          "{sequence_parallel} 需要 {tp} > 1（它把 token 切分到张量并行 rank 上）；{tp} 现在是 1");
  require(c.seq % tp == 0,
          "{sequence_parallel}: {seq} " + str(c.seq) + " does not split over {tp} " + t +
              " (each tensor-parallel rank holds seq / tp tokens of every sequence)",
          "{sequence_parallel}：{seq} " + str(c.seq) + " 无法均分到 {tp} " + t +
              "（每个张量并行 rank 持有每条序列的 seq / tp 个 token）");
}

// A mixture-of-experts model (model/mixture_of_experts.h) trains on CPU ranks with data,
// expert and pipeline parallelism (each micro-batch in flight keeps its own routing);
// tensor parallelism does not split experts yet, and cp and CUDA are not built for it.
void validate_mixture_of_experts(const RunConfig& c, const ModelConfig& model) {
  require(model.experts > 0 || c.expert_parallel == 1,
          "{ep} " + str(c.expert_parallel) + " needs a mixture-of-experts model; " + model.name + " has no experts",
          "{ep} " + str(c.expert_parallel) + " 需要混合专家模型；" + model.name + " 没有专家");
  if (model.experts == 0) return;
  const auto not_yet = [&](bool refused, const std::string& with) {
    require(!refused,
            "{model} " + model.name + " (mixture of experts) with " + with +
                " is not built yet (MoE models train on CPU ranks with data, expert and pipeline parallelism, for now)",
            "{model} " + model.name + "（混合专家）与 " + with +
                " 的组合尚未实现（MoE 模型目前只在 CPU rank 上用数据、专家和流水线并行训练）");
  };
  not_yet(c.layout.tp() > 1, "{tp} " + str(c.layout.tp()));
  not_yet(c.layout.cp() > 1, "{cp} " + str(c.layout.cp()));
  not_yet(c.device != "cpu", "{device} " + c.device);
  // --init-from reads GPT-2's or BERT's Hugging Face tensors, which hold no router or experts.
  // (--save-dir and --resume work: train/trainer_checkpoint.cpp keeps the experts whole in the manifest.)
  not_yet(!c.init_from.empty(), "{init_from}");
  const int ep = c.expert_parallel, dp = c.layout.dp();
  require(ep == 1 || c.dp_mode == DataParallelMode::ddp,
          "{ep} " + str(ep) +
              " with {dp_mode} naive is refused: the ep ranks exchange tokens as peers, "
              "which DataParallel's one master does not have",
          "{ep} " + str(ep) +
              " 不能与 {dp_mode} naive 一起用：ep 个 rank 作为对等方交换 token，DataParallel 只有一个主 rank");
  require(ep == 1 || c.zero_stage <= 1,
          "{ep} " + str(ep) + " with {zero} " + str(c.zero_stage) +
              " is not built yet (ZeRO-1 shards the experts' optimizer states over the expert-data-parallel "
              "group; ZeRO-2/3's unit chunks would need a second chunking of every MoE layer over that group)",
          "{ep} " + str(ep) + " 与 {zero} " + str(c.zero_stage) +
              " 的组合尚未实现（ZeRO-1 已在专家数据并行组内切分专家的优化器状态；ZeRO-2/3 的单元分块还需把每个 MoE "
              "层在该组内再分块一次）");
  require(model.experts % ep == 0,
          "{ep} " + str(ep) + ": the " + str(model.experts) + " experts of " + model.name + " do not split over " +
              str(ep) + " expert-parallel ranks (each rank holds experts / ep of them)",
          "{ep} " + str(ep) + "：" + model.name + " 的 " + str(model.experts) + " 个专家无法均分到 " + str(ep) +
              " 个专家并行 rank（每个 rank 持有 experts / ep 个）");
  require(dp % ep == 0,
          "{ep} " + str(ep) + " does not divide {dp} " + str(dp) +
              " (expert parallelism groups ep consecutive data-parallel ranks)",
          "{ep} " + str(ep) + " 不能整除 {dp} " + str(dp) + "（专家并行把 ep 个相邻的数据并行 rank 分为一组）");
}

// Which data-parallel mode, ZeRO stage and pipeline go together.
void validate_strategies(const RunConfig& c) {
  check_layout_rules(c.layout.pp(), c.zero_stage, c.dp_mode);
}

// fp16 loss scaling (and its test hook).
void validate_loss_scaling(const RunConfig& c) {
  const bool torch_rules = c.loss_scaler == LossScaleRules::torch_grad_scaler;
  require(c.min_loss_scale == -1.0f || c.min_loss_scale > 0.0f, "{min_loss_scale} must be positive",
          "{min_loss_scale} 必须为正数");
  require(!torch_rules || (c.hysteresis == -1 && c.min_loss_scale == -1.0f),
          std::string(c.hysteresis != -1 ? "{hysteresis}" : "{min_loss_scale}") +
              " is a DeepSpeed rule: add {loss_scaler} deepspeed (torch GradScaler has neither)",
          std::string(c.hysteresis != -1 ? "{hysteresis}" : "{min_loss_scale}") +
              " 是 DeepSpeed 的规则：请加上 {loss_scaler} deepspeed（torch GradScaler 没有这两项）");
  const bool dynamic_defaults = c.scale_window == -1 && c.hysteresis == -1 && c.min_loss_scale == -1.0f &&
                                c.initial_scale_power == 16;
  require(c.precision == Precision::fp16 || (c.loss_scale == 0.0f && dynamic_defaults && torch_rules),
          "the loss-scale settings ({loss_scaler}, {loss_scale}, {initial_scale_power}, {scale_window}, "
          "{hysteresis}, {min_loss_scale}) apply to {precision} fp16 only (bf16 and fp32 run without a loss scaler)",
          "损失缩放设置（{loss_scaler}、{loss_scale}、{initial_scale_power}、{scale_window}、{hysteresis}、"
          "{min_loss_scale}）只适用于 {precision} fp16（bf16 和 fp32 不使用损失缩放）");
  require(c.loss_scale == 0.0f || dynamic_defaults,
          "{loss_scale} sets a static scale: {initial_scale_power}, {scale_window}, {hysteresis} and "
          "{min_loss_scale} apply to the dynamic scale only",
          "{loss_scale} 设定的是固定缩放：{initial_scale_power}、{scale_window}、{hysteresis} 和 "
          "{min_loss_scale} 只适用于动态缩放");
  require(c.overflow_rank < c.world_size(),
          "{inject_overflow}: rank " + str(c.overflow_rank) + " does not exist (world size " + str(c.world_size()) +
              ")",
          "{inject_overflow}：rank " + str(c.overflow_rank) + " 不存在（共 " + str(c.world_size()) + " 个 rank）");
  require(c.overflow_rank < 0 || c.precision == Precision::fp16, "{inject_overflow} needs {precision} fp16",
          "{inject_overflow} 需要 {precision} fp16");
}

// Where the ranks compute (and the failure test hook).
void validate_devices(const RunConfig& c) {
  std::vector<int> sorted = c.gpus;
  std::sort(sorted.begin(), sorted.end());
  require(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end(),
          "{gpus} lists a GPU twice; to put several ranks on one GPU, list that GPU alone (0)",
          "{gpus} 把同一块 GPU 列了两次；要让多个 rank 共用一块 GPU，只列出这一块（0）");
  const auto gpu_count = static_cast<int>(c.gpus.size());
  require(gpu_count == 1 || gpu_count == c.world_size(),
          "{gpus} lists " + str(gpu_count) + " GPUs for " + str(c.world_size()) + " ranks (" + grid_axes(c) +
              "): list one GPU for every rank (NCCL between them), or one GPU that all ranks share",
          "{gpus} 为 " + str(c.world_size()) + " 个 rank（" + chinese_times(grid_axes(c)) + "）列出了 " +
              str(gpu_count) + " 块 GPU：请为每个 rank 列一块 GPU（之间用 NCCL），或只列一块让所有 rank 共用");
  require(c.fail_rank < c.world_size(),
          "{inject_failure}: rank " + str(c.fail_rank) + " does not exist (world size " + str(c.world_size()) + ")",
          "{inject_failure}：rank " + str(c.fail_rank) + " 不存在（共 " + str(c.world_size()) + " 个 rank）");
  if (c.slow_rank < 0) return;
  require(c.slow_rank < c.world_size(),
          "{slow_rank}: rank " + str(c.slow_rank) + " does not exist (world size " + str(c.world_size()) + ")",
          "{slow_rank}：rank " + str(c.slow_rank) + " 不存在（共 " + str(c.world_size()) + " 个 rank）");
  require(c.clock == ClockKind::virtual_device && c.device == "cpu",
          "{slow_rank} slows a rank on the virtual clock: it needs {clock} virtual and {device} cpu (the wall "
          "clock and a real GPU time what really ran)",
          "{slow_rank} 在虚拟时钟上放慢一个 rank：需要 {clock} virtual 和 {device} cpu（wall 时钟和真实 GPU "
          "记录的是实际运行的时间）");
}

// A GPU profile prices the virtual clock's compute spans (clock/gpu_time_model.h).
void validate_gpu_profile(const RunConfig& c) {
  const std::string& gpu = c.gpu_profile;
  require(gpu == "none" || c.clock == ClockKind::virtual_device,
          "{gpu_profile} " + gpu + " sets the compute spans of the virtual clock: it needs {clock} virtual (the "
              "wall clock measures how long this machine's threads took)",
          "{gpu_profile} " + gpu + " 决定的是虚拟时钟的计算区段：需要 {clock} virtual（wall 时钟测量的是本机线程实际用了多久）");
  require(gpu == "none" || c.device == "cpu",
          "{gpu_profile} " + gpu + " models CPU ranks on a GPU: with {device} cuda the ranks run on a real GPU, "
              "timed by the wall clock",
          "{gpu_profile} " + gpu + " 把 CPU rank 建模为 GPU：{device} cuda 时 rank 在真实 GPU 上运行，按 wall 时钟计时");
}
}  // namespace

void check_zero_stage_range(int zero_stage) {
  if (zero_stage < 0 || zero_stage > 3)
    throw FieldError("{zero} must be 0, 1, 2 or 3 (got " + str(zero_stage) + ")",
                     "{zero} 必须0, 1, 2 or 3（实际为 " + str(zero_stage) + "）");
}

void check_offload_rules(int zero_stage, int dp, bool offload_params, bool offload_optimizer) {
  if (offload_params && zero_stage != 3)
    throw FieldError(
        "{offload_params}: parameter offload needs {zero} 3 (DeepSpeed offloads parameters only under "
        "stage 3)",
        "{offload_params}：参数卸载需要 {zero} 3（DeepSpeed 只在第 3 阶段卸载参数）");
  if (offload_optimizer && zero_stage < 1 && dp > 1)
    throw FieldError("{offload_optimizer}: optimizer offload (ZeRO-Offload) needs {zero} 1, 2 or 3 when {dp} > 1",
                     "{offload_optimizer}：{dp} > 1 时优化器卸载（ZeRO-Offload）需要 {zero} 1、2 或 3");
}

void check_layout_rules(int pp, int zero_stage, DataParallelMode dp_mode) {
  const std::string zero = str(zero_stage);
  require(pp == 1 || dp_mode == DataParallelMode::ddp,
          "{dp_mode} naive runs without pipeline stages (torch.nn.DataParallel has none): use {pp} 1 or "
          "{dp_mode} ddp",
          "{dp_mode} naive 不能与流水线阶段一起用（torch.nn.DataParallel 没有流水线）：请用 {pp} 1 或 {dp_mode} ddp");
  require(zero_stage <= 1 || pp == 1,
          "{zero} " + zero + " with {pp} " + str(pp) +
              " is refused: ZeRO-2/3 shard gradients across data-parallel ranks per layer, which pipeline stages "
              "would interleave (DeepSpeed refuses it too); use {zero} 0 or 1 with pipelines",
          "{zero} " + zero + " 与 {pp} " + str(pp) +
              " 不能同时使用：ZeRO-2/3 按层在数据并行 rank 之间切分梯度，流水线阶段会打乱这一点（DeepSpeed "
              "也拒绝）；使用流水线时请用 {zero} 0 或 1");
  require(zero_stage == 0 || dp_mode == DataParallelMode::ddp,
          "{zero} " + zero + " needs {dp_mode} ddp (ZeRO shards across DDP ranks)",
          "{zero} " + zero + " 需要 {dp_mode} ddp（ZeRO 在 DDP 的 rank 之间切分）");
}

namespace {
std::atomic<std::int64_t> validations{0};

// The zero-bubble schedules run a backward as B, then W later (model.h,
// backward_input): with --checkpoint B keeps each linear's input for W beside
// its output gradient; with fp16/bf16 B sets each layer's fp32 unit gradient
// aside for its own W, and ZeRO-2/3's reduce-scatter starts from W.
void validate_zero_bubble(const RunConfig& c) {
  if (c.schedule != PipelineScheduleKind::zb_h1 && c.schedule != PipelineScheduleKind::zb_h2) return;
  validate_split_backward(c, "{schedule} " + std::string(pipeline_schedule_name(c.schedule)));
}

// ZB-V (plan/zb_v_schedule.h): two chunks per stage in a V, the backward
// split as the other zero-bubble schedules' (validate_zero_bubble).
void validate_zb_v(const RunConfig& c, const ModelConfig& model) {
  if (c.schedule != PipelineScheduleKind::zb_v) return;
  const int p = c.layout.pp(), m = c.micro_batches;
  require(p >= 2, "{schedule} zb-v needs {pp} 2 or more (got " + str(p) + ")",
          "{schedule} zb-v 需要 {pp} 至少为 2（实为 " + str(p) + "）");
  require(m >= 2 * p - 1 || !c.schedule_file.empty(),  // a V file of its own (plan/schedule_file.h) may run fewer
          "{schedule} zb-v needs {micro_batches} at least 2 x {pp} - 1 = " + str(2 * p - 1) + " (got " + str(m) +
              "): stage 0 runs 2p - 1 forwards down the V before the first micro-batch comes back up to it",
          "{schedule} zb-v 需要 {micro_batches} 至少为 2 × {pp} - 1 = " + str(2 * p - 1) + "（实为 " + str(m) +
              "）：第一个微批次沿 V 回到阶段 0 之前，阶段 0 要先做 2p - 1 次前向");
  require(model.layers % (2 * p) == 0,
          "{schedule} zb-v: " + model.name + "'s " + str(model.layers) + " layers do not split into 2 x {pp} " +
              str(p) + " = " + str(2 * p) + " equal chunks",
          "{schedule} zb-v：" + model.name + " 的 " + str(model.layers) + " 层不能均分为 2 × {pp} " + str(p) + " = " +
              str(2 * p) + " 块");
  validate_split_backward(c, "{schedule} zb-v");
  require(c.layout.cp() == 1,
          "{schedule} zb-v with {cp} " + str(c.layout.cp()) + " is not built yet (not tested together); use {cp} 1",
          "{schedule} zb-v 与 {cp} " + str(c.layout.cp()) + " 的组合尚未实现（尚未一起测试）；请用 {cp} 1");
  require(c.device == "cpu",
          "{schedule} zb-v with {device} " + c.device +
              " is not built yet (the V's transfers go both ways between two stages at once); use {device} cpu",
          "{schedule} zb-v 与 {device} " + c.device +
              " 的组合尚未实现（V 的传输在两个阶段之间双向同时进行）；请用 {device} cpu");
}

// Interleaved 1F1B (plan/interleaved_schedule.h): v model chunks per stage,
// the layers split evenly into p·v of them, stage s holding chunks s, p + s, ...
void check_interleaved_rules(int p, int v, int m);

void validate_interleaved(const RunConfig& c, const ModelConfig& model) {
  const bool interleaved = c.schedule == PipelineScheduleKind::interleaved_1f1b;
  const bool from_file = !c.schedule_file.empty();  // a file's chunks: validate_schedule_file (plan/schedule_file.h)
  const int p = c.layout.pp(), v = c.virtual_stages, m = c.micro_batches;
  require(interleaved || from_file || v == 1,
          "{virtual_stages} " + str(v) + " needs {schedule} interleaved-1f1b (" + pipeline_schedule_name(c.schedule) +
              " holds one model chunk per stage)",
          "{virtual_stages} " + str(v) + " 需要 {schedule} interleaved-1f1b（" + pipeline_schedule_name(c.schedule) +
              " 每个阶段只有一个模型块）");
  if (!interleaved && v == 1) return;
  const std::string what = interleaved ? "{schedule} interleaved-1f1b" : "{schedule_file} " + c.schedule_file;
  if (interleaved) check_interleaved_rules(p, v, m);
  require(model.layers % (p * v) == 0,
          what + ": " + model.name + "'s " + str(model.layers) + " layers do not split into {pp} " + str(p) +
              " x {virtual_stages} " + str(v) + " = " + str(p * v) + " equal chunks",
          what + "：" + model.name + " 的 " + str(model.layers) + " 层不能均分为 {pp} " + str(p) +
              " × {virtual_stages} " + str(v) + " 块");
  // Each stage runs its v chunks in one model (model.h, select_chunk), each tp rank
  // its slice of them. Not yet on NCCL, whose grouped sends the runtime does not post.
  require(
      c.device == "cpu",
      what + " with {device} " + c.device +
          " is not built yet (NCCL needs its grouped transfers posted as one group); use {device} cpu",
      what + " 与 {device} " + c.device + " 的组合尚未实现（NCCL 需要把成组的传输作为一组提交）；请用 {device} cpu");
}

// Megatron's rules for the generated interleaved lists (plan/interleaved_schedule.h).
void check_interleaved_rules(int p, int v, int m) {
  require(v >= 2, "{schedule} interleaved-1f1b needs {virtual_stages} 2 or more (got 1; one chunk per stage is 1f1b)",
          "{schedule} interleaved-1f1b 需要 {virtual_stages} 至少为 2（实为 1；每阶段一个块即 1f1b）");
  require(p >= 2, "{schedule} interleaved-1f1b needs {pp} 2 or more (got " + str(p) + ")",
          "{schedule} interleaved-1f1b 需要 {pp} 至少为 2（实为 " + str(p) + "）");
  require(m % p == 0,
          "{schedule} interleaved-1f1b needs {micro_batches} a multiple of {pp} (got " + str(m) + " and " + str(p) +
              "): Megatron's interleaving sends the micro-batches round the stages in groups of p",
          "{schedule} interleaved-1f1b 需要 {micro_batches} 是 {pp} 的倍数（实为 " + str(m) + " 与 " + str(p) +
              "）：Megatron 的交错调度按每组 p 个微批次轮流经过各阶段");
}
}  // namespace

void validate_split_backward(const RunConfig& c, const std::string& schedule) {
  // ZeRO-2/3: a unit's reduce-scatter starts at its W (Model::backward_weights
  // calls gradients_done there); with --pp 2+ validate_strategies refuses them.
  // Tensor parallelism: B runs the layers' collectives, W is local
  // (model/weight_gradient_split.cpp); trained and tested on CPU ranks only.
  require(c.layout.tp() == 1 || c.device == "cpu",
          schedule + " with {tp} " + str(c.layout.tp()) + " and {device} " + c.device +
              " is not built yet (not tested together); use {device} cpu or {tp} 1",
          schedule + " 与 {tp} " + str(c.layout.tp()) + " 和 {device} " + c.device +
              " 的组合尚未实现（尚未一起测试）；请用 {device} cpu 或 {tp} 1");
}

std::int64_t run_config_validations() {
  return validations.load();
}

void validate_run_config(const RunConfig& c) {
  validations.fetch_add(1);
  const ModelConfig model = run_model_config(c);
  check_field_ranges(c);
  validate_model_limits(c, model);
  validate_grid(c);
  validate_tensor_parallel(c, model);
  validate_sequence_parallel(c);
  validate_context_parallel(c, model);
  validate_mixture_of_experts(c, model);
  validate_strategies(c);
  validate_zero_bubble(c);
  validate_interleaved(c, model);
  validate_zb_v(c, model);
  require(c.save_every == 0 || !c.save_dir.empty(), "{save_every} needs {save_dir}: where to save",
          "{save_every} 需要 {save_dir}：保存到哪里");
  validate_loss_scaling(c);
  validate_devices(c);
  validate_gpu_profile(c);
}

}  // namespace shardscope
