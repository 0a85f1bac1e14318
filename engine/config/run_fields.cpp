// SPDX-License-Identifier: GPL-3.0-or-later
// The rows of the run-config schema (config/run_schema.h), in the order of
// `shardscope-cli train --help`.
#include <cstdint>
#include <limits>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "config/field_access.h"
#include "config/gpu_profiles.h"
#include "config/plan_fields.h"
#include "config/run_schema.h"
#include "io/model_aliases.h"
#include "model/model_config.h"

// Each row names only the members it sets; the rest keep RunField's defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace shardscope {
namespace {

using nlohmann::json;
using namespace field_access;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::int64_t kMaxSteps = 100'000'000;
constexpr std::int64_t kMaxPlanCount = 1 << 24;  // the estimator's limit on a micro-batch, a sequence, accumulation

// "RANK:STEP" of the test-only failure and overflow hooks; "" when off.
json rank_and_step(int rank, std::int64_t step) {
  return rank < 0 ? std::string() : std::to_string(rank) + ":" + std::to_string(step);
}

void set_rank_and_step(std::string_view key, const json& value, int& rank, std::int64_t& step) {
  const std::string text = value.get<std::string>();
  if (text.empty()) {
    rank = -1;
    return;
  }
  const auto colon = text.find(':');
  if (colon == std::string::npos)
    throw FieldError("{" + std::string(key) + "}: expected RANK:STEP, got '" + text + "'",
                     "{" + std::string(key) + "}：应为 RANK:STEP，实际为 '" + text + "'");
  const RunField& field = run_field(key);
  RunField rank_part = field, step_part = field;
  rank_part.kind = step_part.kind = FieldKind::integer;
  rank_part.min = 0, rank_part.max = 1023;
  step_part.min = 1, step_part.max = std::numeric_limits<std::int64_t>::max();
  rank = field_value_from_text(rank_part, text.substr(0, colon)).get<int>();
  step = field_value_from_text(step_part, text.substr(colon + 1)).get<std::int64_t>();
}

// "RANK:FACTOR" of --slow-rank; "" when off.
json rank_and_factor(int rank, double factor) {
  if (rank < 0) return std::string();
  std::ostringstream text;
  text << rank << ':' << factor;
  return text.str();
}

void set_rank_and_factor(const json& value, int& rank, double& factor) {
  const std::string text = value.get<std::string>();
  if (text.empty()) {
    rank = -1;
    factor = 1.0;
    return;
  }
  const auto colon = text.find(':');
  if (colon == std::string::npos)
    throw FieldError("{slow_rank}: expected RANK:FACTOR, e.g. 3:2.5, got '" + text + "'",
                     "{slow_rank}：应为 RANK:FACTOR（例如 3:2.5），实际为 '" + text + "'");
  RunField rank_part = run_field("slow_rank"), factor_part = rank_part;
  rank_part.kind = FieldKind::integer;
  rank_part.min = 0, rank_part.max = 1023;
  factor_part.kind = FieldKind::number;
  factor_part.range = {1.0, 100.0};
  rank = field_value_from_text(rank_part, text.substr(0, colon)).get<int>();
  factor = field_value_from_text(factor_part, text.substr(colon + 1)).get<double>();
}

// "Model preset: gpt-tiny, gpt-mini, ..." (kept for the program's life: rows hold views).
std::string_view preset_help(std::string_view head) {
  static std::vector<std::unique_ptr<std::string>> texts;
  std::string text(head);
  for (const ModelConfig& preset : model_presets()) text += (text.size() > head.size() ? ", " : "") + preset.name;
  return *texts.emplace_back(std::make_unique<std::string>(std::move(text)));
}

// The presets' help, then `tail` and the shipped configs' names (io/model_aliases.h): the estimator's --model.
std::string_view preset_and_alias_help(std::string_view head, std::string_view tail) {
  static std::vector<std::unique_ptr<std::string>> texts;
  std::string text(preset_help(head));
  text.append(tail);
  for (std::size_t i = 0; i < model_aliases().size(); ++i)
    text.append(i == 0 ? "" : ", ").append(model_aliases()[i].name);
  return *texts.emplace_back(std::make_unique<std::string>(std::move(text)));
}

// "none" (a run without a modeled GPU) and every GPU profile's name (config/gpu_profiles.h keeps the strings).
std::vector<std::string_view> gpu_profile_choices(bool with_none = true) {
  std::vector<std::string_view> choices;
  if (with_none) choices.push_back("none");
  for (const GpuProfile& gpu : gpu_profiles()) choices.push_back(gpu.name);
  return choices;
}

// The help, then "none, A100-40GB, ..." (kept for the program's life: rows hold views).
std::string_view gpu_profile_help(std::string_view head, bool with_none = true) {
  static std::vector<std::unique_ptr<std::string>> texts;
  std::string text(head);
  for (std::string_view choice : gpu_profile_choices(with_none))
    text += (text.size() > head.size() ? ", " : "") + std::string(choice);
  return *texts.emplace_back(std::make_unique<std::string>(std::move(text)));
}

// The model and the optimizer.
void add_model_fields(std::vector<RunField>& f) {
  f.push_back(
      {.key = "model",
       .flag = "--model",
       .value_name = "PRESET",
       .kind = FieldKind::text,
       .label = {"Model", "模型"},
       .help = {preset_help("Model preset: "), preset_help("模型预设：")},
       .get = get_member<&RunConfig::model>,
       .set = set_member<&RunConfig::model>,
       .surfaces = surface::train | surface::estimate,
       .plan = {.value_name = "PRESET|NAME|config.json",
                .help = {preset_and_alias_help("Model preset or a Hugging Face config.json (gpt2, bert, llama, "
                                               "mistral, mixtral, deepseek_v3, qwen2, qwen3, phi3, gemma, gemma2): ",
                                               "; or a shipped config by name (resources/examples): "),
                         preset_and_alias_help("模型预设或 Hugging Face 的 "
                                               "config.json（gpt2、bert、llama、mistral、mixtral、deepseek_"
                                               "v3、qwen2、qwen3、phi3、gemma、gemma2）：",
                                               "；或按名字使用随附的配置（resources/examples）：")}}});
  f.push_back({.key = "init_from", .flag = "--init-from", .value_name = "DIR", .kind = FieldKind::text,
               .help = {"Start from a Hugging Face GPT-2 or BERT directory (config.json + model.safetensors): its shape "
                        "and weights are the run's model (not given with --model); a tokenizer there reads --data",
                        "从 Hugging Face 的 GPT-2 或 BERT 目录（config.json + model.safetensors）开始：用它的结构和权重作为本次运行的模型（不能与模型预设同时给出）；目录中若有分词器，训练文本用它切分"},
               .saved = Saved::optional, .get = get_member<&RunConfig::init_from>,
               .set = set_member<&RunConfig::init_from>});
  f.push_back({.key = "steps", .flag = "--steps", .value_name = "N", .label = {"Steps", "步数"},
               .help = {"Optimizer steps to run", "要运行的优化器步数"}, .min = 1, .max = kMaxSteps,
               .get = get_member<&RunConfig::steps>, .set = set_member<&RunConfig::steps>});
  f.push_back({.key = "batch", .flag = "--batch", .value_name = "N", .label = {"Global batch", "全局批大小"},
               .help = {"Global batch: sequences per optimizer step, split over --dp, --accum and --micro-batches",
                        "全局批大小：每个优化器步的序列数，均分到数据并行、梯度累积和微批次上"},
               .min = 1, .max = 1'000'000, .deepspeed = "train_batch_size",
               .get = get_member<&RunConfig::batch>, .set = set_member<&RunConfig::batch>});
  f.push_back(
      {.key = "seq",
       .flag = "--seq",
       .value_name = "N",
       .label = {"Sequence length", "序列长度"},
       .help = {"Tokens per sequence; at most the model's max_seq", "每个序列的 token 数；不超过模型的 max_seq"},
       .min = 1,
       .max = 1'000'000,
       .get = get_member<&RunConfig::seq>,
       .set = set_member<&RunConfig::seq>,
       .surfaces = surface::all,
       .plan = {.value_name = "T",
                .help = {"Tokens per sequence", "每个序列的 token 数"},
                .min = 1,
                .max = kMaxPlanCount,
                .default_text = "the model's maximum"}});
  f.push_back({.key = "lr", .flag = "--lr", .value_name = "X", .kind = FieldKind::number,
               .label = {"Learning rate", "学习率"}, .help = {"Peak learning rate (AdamW)", "峰值学习率（AdamW）"},
               .range = {0.0, 10.0, true, true}, .get = get_member<&RunConfig::lr>, .set = set_member<&RunConfig::lr>});
  f.push_back({.key = "min_lr_ratio", .flag = "--min-lr-ratio", .value_name = "X", .kind = FieldKind::number,
               .help = {"Cosine decay ends at lr times this", "余弦衰减的终点是 lr 乘以它"}, .range = {0.0, 1.0},
               .get = get_member<&RunConfig::min_lr_ratio>, .set = set_member<&RunConfig::min_lr_ratio>});
  f.push_back({.key = "warmup", .flag = "--warmup", .value_name = "N",
               .help = {"Linear warm-up steps; -1: min(100, steps/10) (saved as the steps it came to)",
                        "线性预热步数；-1：min(100, steps/10)（保存为实际步数）"},
               .min = -1, .max = kMaxSteps, .default_text = "-1",
               .get = [](const RunConfig& c) -> json { return c.warmup_steps(); },
               .set = set_member<&RunConfig::warmup>});
  f.push_back({.key = "weight_decay", .flag = "--weight-decay", .value_name = "X", .kind = FieldKind::number,
               .help = {"AdamW weight decay on matrices and embeddings", "AdamW 对矩阵和嵌入的权重衰减"},
               .range = {0.0, kInf}, .get = get_member<&RunConfig::weight_decay>,
               .set = set_member<&RunConfig::weight_decay>});
  f.push_back({.key = "adam_beta2", .flag = "--adam-beta2", .value_name = "X", .kind = FieldKind::number,
               .help = {"AdamW's second-moment decay beta2", "AdamW 二阶矩的衰减系数 beta2"}, .range = {0.0, 1.0, false, true},
               .saved = Saved::optional, .get = get_member<&RunConfig::adam_beta2>,
               .set = set_member<&RunConfig::adam_beta2>});
  f.push_back({.key = "grad_clip", .flag = "--grad-clip", .value_name = "X", .kind = FieldKind::number,
               .help = {"Clip the global gradient norm to this; 0: off", "把全局梯度范数裁剪到这个值；0：不裁剪"},
               .range = {0.0, kInf}, .deepspeed = "gradient_clipping", .get = get_member<&RunConfig::grad_clip>,
               .set = set_member<&RunConfig::grad_clip>});
  f.push_back({.key = "seed", .flag = "--seed", .value_name = "N",
               .help = {"Seed of the weights and of the batch sampling", "权重初始化和批采样的随机种子"},
               .min = 0, .max = std::numeric_limits<std::int64_t>::max(), .get = get_member<&RunConfig::seed>,
               .set = set_member<&RunConfig::seed>});
}

// The training text and evaluation.
void add_data_fields(std::vector<RunField>& f) {
  f.push_back({.key = "data", .flag = "--data", .value_name = "FILE", .kind = FieldKind::text,
               .label = {"Training text", "训练文本"},
               .help = {"UTF-8 text file to train on; absent: the shipped corpus (English + Chinese)",
                        "用于训练的 UTF-8 文本文件；不填：随程序提供的语料（英文 + 中文）"},
               .get = [](const RunConfig& c) -> json { return c.data.empty() ? "<default corpus>" : c.data; },
               .set = [](RunConfig& c, const json& v) {
                 c.data = v.get<std::string>();
                 if (c.data == "<default corpus>") c.data.clear();
               }});
  f.push_back({.key = "eval_every", .flag = "--eval-every", .value_name = "N",
               .label = {"Evaluate every (steps)", "每隔多少步评估"},
               .help = {"Evaluate on the held-out 10% every N steps and at the end; 0: never",
                        "每 N 步及结束时在留出的 10% 文本上评估；0：从不"},
               .min = 0, .max = kMaxSteps, .get = get_member<&RunConfig::eval_every>,
               .set = set_member<&RunConfig::eval_every>});
  f.push_back({.key = "eval_batches", .flag = "--eval-batches", .value_name = "N",
               .help = {"Validation batches per evaluation", "每次评估的验证批次数"}, .min = 1, .max = 100'000,
               .get = get_member<&RunConfig::eval_batches>, .set = set_member<&RunConfig::eval_batches>});
}

// How gradients are made and combined: data-parallel mode, ZeRO, accumulation,
// checkpointing (what backward recomputes) and DDP's buckets.
void add_gradient_fields(std::vector<RunField>& f) {
  f.push_back({.key = "dp_mode",
               .flag = "--dp-mode",
               .value_name = "naive|ddp",
               .kind = FieldKind::choice,
               .label = {"Data-parallel mode", "数据并行模式"},
               .help = {"How ranks combine gradients: ddp (ring all-reduce in buckets, overlapped with backward) or\n"
                        "      naive (torch.nn.DataParallel: rank 0 scatters, gathers, updates and broadcasts)",
                        "rank 如何合并梯度：ddp（分桶环形 all-reduce，与反向重叠）或 naive（torch.nn.DataParallel："
                        "rank 0 分发、收集、更新并广播）"},
               .choices = {"naive", "ddp"},
               .get = [](const RunConfig& c) -> json { return data_parallel_mode_name(c.dp_mode); },
               .set =
                   [](RunConfig& c, const json& v) {
                     c.dp_mode = v.get<std::string>() == "naive" ? DataParallelMode::naive : DataParallelMode::ddp;
                   },
               .surfaces = surface::train | surface::estimate});
  f.push_back(
      {.key = "zero",
       .flag = "--zero",
       .value_name = "N",
       .label = {"ZeRO stage", "ZeRO 阶段"},
       .help = {"ZeRO stage: 0 replicated, 1 optimizer states sharded, 2 + gradients, 3 + parameters (pp 1 only)",
                "ZeRO 阶段：0 全复制，1 切分优化器状态，2 再切分梯度，3 再切分参数（仅 pp 1）"},
       .min = 0,
       .max = 3,
       .deepspeed = "zero_optimization.stage",
       .accelerate = "deepspeed_config.zero_stage",
       .get = get_member<&RunConfig::zero_stage>,
       .set = set_member<&RunConfig::zero_stage>,
       .surfaces = surface::all,
       .plan = {.value_name = "S"}});
  f.push_back({.key = "accum",
               .flag = "--accum",
               .value_name = "N",
               .label = {"Accumulation steps", "梯度累积步数"},
               .help = {"Gradient accumulation micro-steps per optimizer step", "每个优化器步的梯度累积微步数"},
               .min = 1,
               .max = 1'000'000,
               .deepspeed = "gradient_accumulation_steps",
               .accelerate = "deepspeed_config.gradient_accumulation_steps",
               .get = get_member<&RunConfig::accum>,
               .set = set_member<&RunConfig::accum>,
               .surfaces = surface::train | surface::estimate,
               .plan = {.value_name = "K", .min = 1, .max = kMaxPlanCount}});
  f.push_back(
      {.key = "checkpoint",
       .flag = "--checkpoint",
       .value_name = "none|full",
       .kind = FieldKind::choice,
       .label = {"Activation checkpointing", "激活检查点"},
       .help = {"Activation checkpointing: full keeps only each layer's input and recomputes in backward",
                "激活检查点：full 只保留每层的输入，反向时重计算"},
       .choices = {"none", "full"},
       .deepspeed = "activation_checkpointing",
       .accelerate = "fsdp_config.fsdp_activation_checkpointing",
       .get = [](const RunConfig& c) -> json { return c.checkpoint ? "full" : "none"; },
       .set = [](RunConfig& c, const json& v) { c.checkpoint = v.get<std::string>() == "full"; },
       .surfaces = surface::all,
       .plan = {.value_name = "none|selective|full",
                .help = {"Activation recompute (Korthikanti et al. 2022): selective recomputes the attention "
                         "core, full keeps only each layer's input",
                         "激活重计算（Korthikanti 等，2022）：selective 重计算注意力核心，full 只保留每层的输入"},
                .choices = {"none", "selective", "full"}}});
  f.push_back({.key = "bucket_mb",
               .flag = "--bucket-mb",
               .value_name = "X",
               .kind = FieldKind::number,
               .label = {"DDP bucket size (MiB)", "DDP 梯度桶大小（MiB）"},
               .help = {"DDP gradient bucket size in MiB, 2^20 bytes (PyTorch's bucket_cap_mb, which counts MiB "
                        "too and defaults to 25 for larger models; 0.5 here, so a small model's gradients make "
                        "several buckets): smaller buckets start their all-reduce earlier in backward",
                        "DDP 梯度桶大小（MiB，即 2^20 字节；即 PyTorch 的 bucket_cap_mb，"
                        "它同样以 MiB 计，为较大的模型默认取 25，这里默认 0.5，"
                        "让小模型的梯度也分成几个桶）：桶越小，其 all-reduce 在反向中开始得越早"},
               .range = {0.0, 4096.0, true},
               .get = get_member<&RunConfig::bucket_mb>,
               .set = set_member<&RunConfig::bucket_mb>});
}

// The clock of the run's timeline and the link between the virtual devices (clock/).
void add_clock_fields(std::vector<RunField>& f) {
  f.push_back({.key = "clock", .flag = "--clock", .value_name = "virtual|wall", .kind = FieldKind::choice,
               .label = {"Clock", "时钟"},
               .help = {"The clock of the run's timeline: virtual (each CPU rank on its own device: a compute span\n"
                        "      lasts the CPU time the rank's threads spent on it / their number, communication\n"
                        "      follows --link and waits for its peers) or wall (this machine's steady clock: how\n"
                        "      long the rank threads took while sharing its cores with each other and every\n"
                        "      other process). GPU ranks always use the wall clock",
                        "时间线所用的时钟：virtual（每个 CPU rank 在自己的虚拟设备上：计算区段的长度是该 rank 的线程"
                        "花在它上面的 CPU 时间除以线程数，通信按 --link 计时并等待对端）或 wall（本机的单调时钟：rank "
                        "线程与彼此及其他进程共享 CPU 核时实际用了多久）。GPU rank 总是使用 wall"},
               .choices = {"virtual", "wall"}, .saved = Saved::optional, .legacy = "wall",
               .get = [](const RunConfig& c) -> json { return clock_kind_name(c.clock); },
               .set = [](RunConfig& c, const json& v) { c.clock = parse_clock_kind(v.get<std::string>()); }});
  f.push_back({.key = "link", .flag = "--link", .value_name = "auto|host|pcie4|nvlink|infiniband",
               .kind = FieldKind::choice, .label = {"Link", "链路"},
               .help = {"With --clock virtual, the link between the ranks' devices: auto (the --gpu-profile's own\n"
                        "      link: NVLink for A100/H100/H200, PCIe 4.0 for the RTX 4090; host without one), host\n"
                        "      (this machine's measured memory-copy bandwidth), pcie4 (PCIe 4.0 x16), nvlink (NVLink 4,\n"
                        "      H100) or infiniband (NDR 400 Gb/s); each transfer takes latency + bytes / bandwidth",
                        "配合 --clock virtual：rank 设备之间的链路：auto（--gpu-profile 自带的链路：A100/H100/H200 为 "
                        "NVLink，RTX 4090 为 PCIe 4.0；没有 GPU 配置时为 host）、host（实测的本机内存拷贝带宽）、"
                        "pcie4（PCIe 4.0 x16）、nvlink（NVLink 4，H100）或 infiniband（NDR 400 Gb/s）；"
                        "每次传输耗时 延迟 + 字节数 / 带宽"},
               .choices = {"auto", "host", "pcie4", "nvlink", "infiniband"}, .saved = Saved::optional,
               .get = [](const RunConfig& c) -> json { return c.link ? link_kind_name(*c.link) : "auto"; },
               .set = [](RunConfig& c, const json& v) {
                 const std::string name = v.get<std::string>();
                 c.link = name == "auto" ? std::nullopt : std::optional(parse_link_kind(name));
               }});
  f.push_back({.key = "gpu_profile",
               .flag = "--gpu-profile",
               .value_name = "NAME",
               .kind = FieldKind::choice,
               .label = {"GPU profile", "GPU 配置"},
               .help = {gpu_profile_help("With --clock virtual, the GPU each rank is modeled on: every op still runs "
                                         "here, but its\n      span lasts its time on that GPU, max(FLOPs / (peak x "
                                         "efficiency), bytes / memory\n      bandwidth) (docs/ESTIMATE.md); the panel "
                                         "also checks the predicted memory against it:\n      "),
                        gpu_profile_help("配合 --clock virtual：为每个 rank 建模的 GPU：每个算子仍在本机运行，但其区段"
                                         "时长取它在该 GPU 上的时间 max(FLOPs / (峰值 × 效率), 字节数 / 显存带宽)"
                                         "（docs/ESTIMATE.md）；配置面板也用它检查预测的内存：")},
               .choices = gpu_profile_choices(),
               .saved = Saved::optional,
               .get = get_member<&RunConfig::gpu_profile>,
               .set = set_member<&RunConfig::gpu_profile>,
               .surfaces = surface::all,
               .plan = {.flag = "--gpu",
                        .help = {gpu_profile_help("GPU profile: ", false), gpu_profile_help("GPU 配置：", false)},
                        .choices = gpu_profile_choices(false),
                        .default_text = "-"}});
}

// Ranks as processes under mpirun (parallel/mpi/); threads ignore them.
void add_process_fields(std::vector<RunField>& f) {
  f.push_back({.key = "collectives", .flag = "--collectives", .value_name = "ring|native", .kind = FieldKind::choice,
               .help = {"Under mpirun: ring (the ring algorithms over MPI messages, every chunk an event, results\n"
                        "      equal to threads) or native (MPI's own all-reduce, reduce-scatter and all-gather: faster,\n"
                        "      one event per call, so the ring view shows one span per call)",
                        "在 mpirun 下：ring（用 MPI 消息执行环形算法，每个分块都是一个事件，结果与线程一致）或 native"
                        "（MPI 自带的 all-reduce、reduce-scatter 和 all-gather：更快，每次调用一个事件，环形视图每次调用只显示一段）"},
               .choices = {"ring", "native"}, .saved = Saved::never,
               .get = get_member<&RunConfig::collectives>, .set = set_member<&RunConfig::collectives>});
  f.push_back({.key = "comm_timeout", .flag = "--comm-timeout", .value_name = "S", .kind = FieldKind::number,
               .help = {"Under mpirun: a blocking communication call that makes no progress for S seconds stops\n"
                        "      the job, naming the rank it waited for (a dead process is detected within a second);\n"
                        "      an NCCL call (--device cuda) not finished after S seconds aborts the run",
                        "在 mpirun 下：阻塞的通信调用 S 秒没有进展即停止整个作业，并指出它在等待的 rank（进程死亡在一秒内即可发现）；"
                        "NCCL 调用（--device cuda）S 秒未完成即中止运行"},
               .range = {0.0, 1e6, true}, .saved = Saved::never,
               .get = get_member<&RunConfig::comm_timeout_s>, .set = set_member<&RunConfig::comm_timeout_s>});
  f.push_back({.key = "heartbeat_timeout",
               .flag = "--heartbeat-timeout",
               .value_name = "S",
               .kind = FieldKind::number,
               .help = {"Under mpirun: every process sends the others a heartbeat each second; one that sends none\n"
                        "      for S seconds (stopped, frozen, its machine hung) stops the job, named, however long a\n"
                        "      collective may take (--comm-timeout)",
                        "在 mpirun 下：每个进程每秒向其他进程发送一次心跳；某个进程 S "
                        "秒没有心跳（被暂停、冻结或所在机器卡死）即停止整个作业"
                        "并指出它，与集合通信允许的时长（--comm-timeout）无关"},
               .range = {2.0, 1e6, false},
               .saved = Saved::never,
               .get = get_member<&RunConfig::heartbeat_timeout_s>,
               .set = set_member<&RunConfig::heartbeat_timeout_s>});
}

// Precision and the fp16 loss scale.
void add_precision_fields(std::vector<RunField>& f) {
  f.push_back(
      {.key = "precision",
       .flag = "--precision",
       .value_name = "fp32|fp16|bf16",
       .kind = FieldKind::choice,
       .label = {"Precision", "精度"},
       .help = {"fp16/bf16: 16-bit parameters and gradients, fp32 master weights and AdamW states (fp16 with a\n"
                "      dynamic loss scale)",
                "fp16/bf16：16 位参数和梯度，fp32 主权重和 AdamW 状态（fp16 带动态损失缩放）"},
       .choices = {"fp32", "fp16", "bf16"},
       .deepspeed = "fp16.enabled / bf16.enabled",
       .accelerate = "mixed_precision",
       .saved = Saved::optional,
       .get = [](const RunConfig& c) -> json { return precision_name(c.precision); },
       .set = [](RunConfig& c, const json& v) { c.precision = parse_precision(v.get<std::string>()); },
       .surfaces = surface::all});
  f.push_back({.key = "loss_scaler", .flag = "--loss-scaler", .value_name = "torch|deepspeed",
               .kind = FieldKind::choice,
               .help = {"fp16 loss-scale rules: torch GradScaler (default) or DeepSpeed's fp16 optimizer",
                        "fp16 损失缩放规则：torch GradScaler（默认）或 DeepSpeed 的 fp16 优化器"},
               .choices = {"torch", "deepspeed"}, .saved = Saved::optional,
               .get = [](const RunConfig& c) -> json { return loss_scaler_rules_name(c.loss_scaler); },
               .set = [](RunConfig& c, const json& v) {
                 c.loss_scaler = parse_loss_scaler_rules(v.get<std::string>());
               }});
  f.push_back({.key = "loss_scale", .flag = "--loss-scale", .value_name = "X", .kind = FieldKind::number,
               .help = {"fp16: a static loss scale; 0: dynamic", "fp16：固定损失缩放；0：动态"}, .range = {0.0, 3.0e38},
               .deepspeed = "fp16.loss_scale", .saved = Saved::optional, .get = get_member<&RunConfig::loss_scale>,
               .set = set_member<&RunConfig::loss_scale>});
  f.push_back({.key = "initial_scale_power", .flag = "--initial-scale-power", .value_name = "N",
               .label = {"Initial loss scale", "初始损失缩放"},
               .help = {"fp16: the first loss scale is 2^N", "fp16：第一个损失缩放值是 2^N"}, .min = 0, .max = 127,
               .deepspeed = "fp16.initial_scale_power", .saved = Saved::optional,
               .get = get_member<&RunConfig::initial_scale_power>, .set = set_member<&RunConfig::initial_scale_power>});
  f.push_back({.key = "scale_window", .flag = "--scale-window", .value_name = "N",
               .help = {"fp16: clean steps before the scale doubles; -1: the rules' own (torch 2000, DeepSpeed 1000)",
                        "fp16：缩放值翻倍前的无溢出步数；-1：规则自己的默认值（torch 2000，DeepSpeed 1000）"},
               .min = -1, .max = std::numeric_limits<std::int64_t>::max(), .deepspeed = "fp16.loss_scale_window",
               .saved = Saved::optional, .get = get_member<&RunConfig::scale_window>,
               .set = set_member<&RunConfig::scale_window>});
  f.push_back({.key = "hysteresis", .flag = "--hysteresis", .value_name = "N",
               .help = {"fp16, DeepSpeed rules: overflows absorbed before the scale backs off; -1: 2",
                        "fp16，DeepSpeed 规则：缩放值回退前容忍的溢出次数；-1：2"},
               .min = -1, .max = 1'000'000, .deepspeed = "fp16.hysteresis", .saved = Saved::optional,
               .get = get_member<&RunConfig::hysteresis>, .set = set_member<&RunConfig::hysteresis>});
  f.push_back({.key = "min_loss_scale", .flag = "--min-loss-scale", .value_name = "X", .kind = FieldKind::number,
               .help = {"fp16, DeepSpeed rules: the scale never goes below this; -1: 1",
                        "fp16，DeepSpeed 规则：缩放值的下限；-1：1"},
               .range = {-1.0, 3.0e38}, .deepspeed = "fp16.min_loss_scale", .saved = Saved::optional,
               .get = get_member<&RunConfig::min_loss_scale>, .set = set_member<&RunConfig::min_loss_scale>});
  f.push_back({.key = "inject_overflow", .flag = "--inject-overflow", .value_name = "RANK:STEP",
               .kind = FieldKind::text,
               .help = {"Test only: fp16, RANK writes an inf into its gradients at STEP, to see every rank skip it",
                        "仅供测试：fp16 下 RANK 在第 STEP 步往梯度写入 inf，观察所有 rank 跳过该步"},
               .saved = Saved::never,
               .get = [](const RunConfig& c) { return rank_and_step(c.overflow_rank, c.overflow_step); },
               .set = [](RunConfig& c, const json& v) {
                 set_rank_and_step("inject_overflow", v, c.overflow_rank, c.overflow_step);
               }});
}

// Where the ranks compute, what the run writes, and its test hooks.
void add_device_fields(std::vector<RunField>& f) {
  f.push_back(
      {.key = "device",
       .flag = "--device",
       .value_name = "cpu|cuda",
       .kind = FieldKind::choice,
       .label = {"Device", "设备"},
       .help =
           {"Where the ranks compute: cpu (threads of this process) or cuda (GPUs, through the CUDA\n"
            "      plugin; where none is usable the run says so and uses the CPU)",
            "rank 在哪里计算：cpu（本进程的线程）或 cuda（通过 CUDA 插件使用 GPU；没有可用 GPU 时会说明并改用 CPU）"},
       .choices = {"cpu", "cuda"},
       .saved = Saved::optional,
       .get = get_member<&RunConfig::device>,
       .set = set_member<&RunConfig::device>,
       .surfaces = surface::train | surface::estimate,
       .plan = {.help = {"Whose kernels ShardScope's activation bytes follow: cpu or cuda, whose fp16/bf16\n"
                         "      attention is fused and keeps b·a·s rows instead of b·a·s² probabilities",
                         "ShardScope 的激活字节数按谁的内核计算：cpu 或 cuda（其 fp16/bf16 注意力是融合的，"
                         "保留 b·a·s 行而不是 b·a·s² 个概率）"}}});
  f.push_back({.key = "gpus", .flag = "--gpus", .value_name = "0,1,...", .kind = FieldKind::list,
               .help = {"With --device cuda: one GPU that every rank shares, or one GPU per rank (NCCL between them)",
                        "配合 --device cuda：所有 rank 共用一块 GPU，或每个 rank 一块 GPU（之间用 NCCL）"},
               .min = 0, .max = 1023, .saved = Saved::optional, .get = get_member<&RunConfig::gpus>,
               .set = set_member<&RunConfig::gpus>});
  f.push_back({.key = "profile_ops", .flag = "--profile-ops", .kind = FieldKind::toggle,
               .help = {"Time every backend op of rank 0 and print where a step goes (slower: each op waits for the\n"
                        "      device; steps after the first are counted)",
                        "为 rank 0 的每个后端算子计时并打印一步的时间分布（更慢：每个算子都等待设备；从第二步起计）"},
               .saved = Saved::never, .get = get_member<&RunConfig::profile_ops>,
               .set = set_member<&RunConfig::profile_ops>});
  f.push_back({.key = "metrics_out", .flag = "--metrics-out", .value_name = "FILE", .kind = FieldKind::text,
               .help = {"Write one JSON object per step to FILE (JSONL)", "把每一步的指标写成一行 JSON（JSONL）"},
               .saved = Saved::never, .get = get_member<&RunConfig::metrics_out>,
               .set = set_member<&RunConfig::metrics_out>});
  f.push_back({.key = "save_dir", .flag = "--save-dir", .value_name = "DIR", .kind = FieldKind::text,
               .help = {"Save checkpoints (training state, per rank) under DIR/step-N/", "在 DIR/step-N/ 下保存检查点（训练状态，每个 rank 一个文件）"},
               .saved = Saved::never, .get = get_member<&RunConfig::save_dir>, .set = set_member<&RunConfig::save_dir>});
  f.push_back({.key = "save_every", .flag = "--save-every", .value_name = "N",
               .help = {"With --save-dir: save every N steps, and at the end (0: only at the end)",
                        "配合 --save-dir：每 N 步保存一次，结束时也保存（0：只在结束时）"},
               .min = 0, .max = kMaxSteps, .saved = Saved::never, .get = get_member<&RunConfig::save_every>,
               .set = set_member<&RunConfig::save_every>});
  f.push_back({.key = "resume", .flag = "--resume", .value_name = "DIR", .kind = FieldKind::text,
               .help = {"Resume from a checkpoint: a step directory, or a --save-dir root (its newest)",
                        "从检查点继续：一个 step 目录，或 --save-dir 根目录（取最新的）"},
               .saved = Saved::never, .get = get_member<&RunConfig::resume_dir>,
               .set = set_member<&RunConfig::resume_dir>});
  f.push_back(
      {.key = "inject_failure",
       .flag = "--inject-failure",
       .value_name = "RANK:STEP",
       .kind = FieldKind::text,
       .label = {"Fail a rank (rank:step)", "让 rank 失败（rank:步）"},
       .help = {"Test only: make RANK throw at STEP, to see all ranks stop",
                "仅供测试：让 RANK 在第 STEP 步抛出异常，观察所有 rank 停止"},
       .saved = Saved::never,
       .get = [](const RunConfig& c) { return rank_and_step(c.fail_rank, c.fail_step); },
       .set = [](RunConfig& c, const json& v) { set_rank_and_step("inject_failure", v, c.fail_rank, c.fail_step); }});
  f.push_back(
      {.key = "slow_rank",
       .flag = "--slow-rank",
       .value_name = "RANK:FACTOR",
       .kind = FieldKind::text,
       .label = {"Straggler (rank:factor)", "慢 rank（rank:倍数）"},
       .help = {"Make RANK a straggler: its compute takes FACTOR times as long (1-100) on the virtual clock,\n"
                "      so the other ranks wait for it at every collective (the wait is attributed to it)",
                "让 RANK 成为慢 rank：在虚拟时钟上它的计算耗时乘以 FACTOR（1–100），其他 rank 在每个集合通信处等它"
                "（等待记在它名下）"},
       .saved = Saved::optional,
       .get = [](const RunConfig& c) { return rank_and_factor(c.slow_rank, c.slow_factor); },
       .set = [](RunConfig& c, const json& v) { set_rank_and_factor(v, c.slow_rank, c.slow_factor); }});
}

}  // namespace

namespace {
struct Table {
  std::vector<RunField> rows;  // RunConfig's rows, then the estimator's own
  std::size_t run_rows = 0;
};

const Table& table() {
  static const Table t = [] {
    Table out;
    std::vector<RunField>& f = out.rows;
    add_model_fields(f);
    add_data_fields(f);
    add_layout_fields(f);  // config/layout_fields.cpp
    add_gradient_fields(f);
    add_clock_fields(f);
    add_process_fields(f);
    add_precision_fields(f);
    add_device_fields(f);
    out.run_rows = f.size();
    add_plan_fields(f);  // config/plan_fields.cpp
    for (std::size_t i = 0; i < f.size(); ++i)
      if ((i < out.run_rows) != (f[i].get != nullptr && f[i].on(surface::train)))
        throw std::logic_error("run schema: row \"" + std::string(f[i].key) + "\" is on the wrong side");
    return out;
  }();
  return t;
}
}  // namespace

std::span<const RunField> run_fields() {
  return std::span<const RunField>(table().rows).first(table().run_rows);
}

std::span<const RunField> schema_fields() {
  return table().rows;
}

}  // namespace shardscope
