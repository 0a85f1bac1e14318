// SPDX-License-Identifier: GPL-3.0-or-later
// The run-config schema's rows of the parallel layout (config/run_schema.h):
// an axis of layout/parallel_axes.h gets its flag, config key, panel field and
// estimate/planner range here (docs/ARCHITECTURE.md, "Adding a parallelism").
#include "config/context_parallel_fields.h"
#include "config/field_access.h"
#include "config/plan_fields.h"
#include "config/run_schema.h"

// Each row names only the members it sets; the rest keep RunField's defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace shardscope {

using namespace field_access;

namespace {
// The pipeline's micro-batches and schedule.
void add_pipeline_schedule_fields(std::vector<RunField>& f) {
  f.push_back({.key = "micro_batches",
               .flag = "--micro-batches",
               .value_name = "N",
               .label = {"Micro-batches", "微批次数"},
               .help = {"Pipeline micro-batches per accumulation step (m)", "每个累积步的流水线微批次数（m）"},
               .min = 1,
               .max = 100'000,
               .get = get_member<&RunConfig::micro_batches>,
               .set = set_member<&RunConfig::micro_batches>,
               .surfaces = surface::train | surface::plan,
               .plan = {.value_name = "M", .min = 1, .max = 1 << 20}});
  f.push_back(
      {.key = "schedule",
       .flag = "--schedule",
       .value_name = "gpipe|1f1b|zb-h1|zb-h2|interleaved-1f1b|zb-v",
       .kind = FieldKind::choice,
       .label = {"Pipeline schedule", "流水线调度"},
       .help =
           {"Pipeline schedule: gpipe (all forwards, then all backwards), 1f1b (one forward, one backward), "
            "zb-h1 or zb-h2 (zero bubble: the weight gradients W split from the backward B and run in the bubbles), "
            "interleaved-1f1b (Megatron-LM: --virtual-stages model chunks per stage), "
            "zb-v (zero bubble with two chunks per stage in a V: stage s holds chunks s and 2pp - 1 - s)",
            "流水线调度：gpipe（先全部前向，再全部反向）、1f1b（一次前向、一次反向交替）、"
            "zb-h1 或 zb-h2（零气泡：权重梯度 W 从反向 B 中拆出，放进气泡中执行）、"
            "interleaved-1f1b（Megatron-LM：每个阶段 --virtual-stages 个模型块）、"
            "zb-v（零气泡，每个阶段两个模型块排成 V 形：阶段 s 持有第 s 与 2pp - 1 - s 块）"},
       .choices = {"1f1b", "gpipe", "zb-h1", "zb-h2", "interleaved-1f1b", "zb-v"},
       .get = [](const RunConfig& c) -> json { return pipeline_schedule_name(c.schedule); },
       .set = [](RunConfig& c, const json& v) { c.schedule = parse_pipeline_schedule_kind(v.get<std::string>()); },
       .surfaces = surface::train | surface::plan});
  f.push_back({.key = "virtual_stages",
               .flag = "--virtual-stages",
               .value_name = "V",
               .label = {"Virtual stages (v)", "虚拟阶段数（v）"},
               .help = {"Model chunks per pipeline stage (v) for --schedule interleaved-1f1b: the layers split into "
                        "pp × v chunks, stage s holding chunks s, pp + s, 2pp + s, ...",
                        "--schedule interleaved-1f1b 下每个流水线阶段的模型块数（v）：层切成 pp × v 块，"
                        "阶段 s 持有第 s、pp + s、2pp + s……块"},
               .min = 1,
               .max = 64,
               .saved = Saved::optional,
               .get = get_member<&RunConfig::virtual_stages>,
               .set = set_member<&RunConfig::virtual_stages>,
               .surfaces = surface::train | surface::plan});
  f.push_back({.key = "schedule_file",
               .flag = "--schedule-file",
               .value_name = "FILE.csv",
               .kind = FieldKind::text,
               .label = {"Schedule file", "调度文件"},
               .help = {"A pipeline schedule written by hand, in place of --schedule: torch.distributed.pipelining's "
                        "CSV, a row per rank of {stage}{F|B|I|W}{micro-batch}, or a .json file of a list per rank of "
                        "{\"phase\", \"micro_batch\", \"chunk\"} actions (shardscope-cli schedule checks and "
                        "prints it); it sets --pp (its rows), --micro-batches and --virtual-stages (its model chunks "
                        "per rank), which, given, must agree with it",
                        "手写的流水线调度，代替 --schedule：torch.distributed.pipelining 的 CSV，每个 rank 一行 "
                        "{stage}{F|B|I|W}{micro-batch}，或 .json 文件：每个 rank 一个 {\"phase\", \"micro_batch\", "
                        "\"chunk\"} 动作列表（shardscope-cli schedule 可检查并打印）；它决定 --pp（行数）、"
                        "--micro-batches 与 --virtual-stages（每个 rank 的模型块数），若给出则须与之一致"},
               .saved = Saved::optional,
               .get = get_member<&RunConfig::schedule_file>,
               .set = set_member<&RunConfig::schedule_file>,
               .surfaces = surface::train});
}

// Tensor parallelism (Megatron-LM) and sequence parallelism (Korthikanti et al. 2022) over it.
void add_tensor_parallel_fields(std::vector<RunField>& f) {
  f.push_back(
      {.key = "tp",
       .flag = "--tp",
       .value_name = "N",
       .label = {"Tensor-parallel ranks", "张量并行 rank 数"},
       .help =
           {"Tensor-parallel ranks: each layer's matrices split over N adjacent ranks (Megatron-LM); "
            "heads and vocabulary must divide by N",
            "张量并行 rank 数：每层的矩阵切分到 N 个相邻 rank 上（Megatron-LM）；注意力头数和词表大小须能被 N 整除"},
       .min = 1,
       .max = 64,
       .saved = Saved::optional,
       .get = get_axis<Axis::tp>,
       .set = set_axis<Axis::tp>,
       .surfaces = surface::all,
       .plan = {.help = {"Tensor-parallel ranks (Megatron-LM): each layer's matrices split over N GPUs of a node; "
                         "heads (and a preset's vocabulary) must divide by N",
                         "张量并行 rank 数（Megatron-LM）：每层的矩阵切分到一个节点内的 N 个 GPU 上；"
                         "注意力头数（以及预设模型的词表大小）须能被 N 整除"},
                .min = 1,
                .max = 1'000'000}});
  f.push_back(
      {.key = "sequence_parallel",
       .flag = "--sequence-parallel",
       .kind = FieldKind::toggle,
       .label = {"Sequence parallel", "序列并行"},
       .help = {"Sequence parallelism over the --tp ranks (Korthikanti et al. 2022): the LayerNorm regions hold "
                "seq / tp tokens of every sequence, all-gathered before and reduce-scattered after the "
                "tensor-parallel matmuls",
                "在 --tp 个 rank 上做序列并行（Korthikanti 等，2022）：LayerNorm 区域只持有每条序列的 seq / tp "
                "个 token，张量并行矩阵乘之前全收集（all-gather），之后归约分散（reduce-scatter）"},
       .saved = Saved::optional,
       .get = get_member<&RunConfig::sequence_parallel>,
       .set = set_member<&RunConfig::sequence_parallel>,
       .surfaces = surface::all});
  f.push_back({.key = "ep",
               .flag = "--ep",
               .value_name = "N",
               .label = {"Expert-parallel ranks", "专家并行 rank 数"},
               .help = {"Expert-parallel ranks (a mixture-of-experts model): the experts split over N consecutive "
                        "data-parallel ranks, which send each token to its experts' rank by all-to-all; "
                        "--dp and the expert count must divide by N",
                        "专家并行 rank 数（混合专家模型）：专家切分到 N 个相邻的数据并行 rank 上，"
                        "每个 token 经 all-to-all 发往其专家所在的 rank；--dp 和专家数须能被 N 整除"},
               .min = 1,
               .max = 64,
               .saved = Saved::optional,
               .get = get_member<&RunConfig::expert_parallel>,
               .set = set_member<&RunConfig::expert_parallel>,
               .surfaces = surface::train | surface::plan,
               .plan = {.help = {"Expert-parallel ranks (a mixture-of-experts model): each of N consecutive "
                                 "data-parallel ranks holds experts / N experts of every MoE layer; --dp and the "
                                 "expert count must divide by N",
                                 "专家并行 rank 数（混合专家模型）：N 个相邻的数据并行 rank 各持有每个 MoE 层的 "
                                 "experts / N 个专家；--dp 和专家数须能被 N 整除"},
                        .min = 1,
                        .max = 1'000'000}});
}
}  // namespace

// The dp x pp x tp grid, then the pipeline's micro-batches and schedule.
void add_layout_fields(std::vector<RunField>& f) {
  f.push_back({.key = "threads",
               .flag = "--threads",
               .value_name = "N",
               .help = {"CPU threads for all ranks together; 0: all cores", "所有 rank 共用的 CPU 线程数；0：全部核心"},
               .min = 0,
               .max = 1024,
               .saved = Saved::never,
               .get = get_member<&RunConfig::threads>,
               .set = set_member<&RunConfig::threads>});
  f.push_back({.key = "ranks",
               .flag = "--ranks",
               .value_name = "N",
               .help = {"Ranks in all; must equal --dp x --pp x --tp (0: their product)",
                        "rank 总数；必须等于 dp × pp × tp（0：三者之积）"},
               .min = 0,
               .max = 4096,
               .saved = Saved::never,
               .get = get_member<&RunConfig::ranks>,
               .set = set_member<&RunConfig::ranks>});
  f.push_back(
      {.key = "dp",
       .flag = "--dp",
       .value_name = "N",
       .label = {"Data-parallel ranks", "数据并行 rank 数"},
       .help = {"Data-parallel ranks (threads of this process)", "数据并行 rank 数（本进程的线程）"},
       .min = 1,
       .max = 64,
       .accelerate = "num_processes",
       .get = get_axis<Axis::dp>,
       .set = set_axis<Axis::dp>,
       .surfaces = surface::all,
       .plan = {.help = {"Data-parallel ranks (dp × pp at most 16384)", "数据并行 rank 数（dp × pp 至多 16384）"},
                .min = 1,
                .max = 1'000'000}});
  f.push_back({.key = "pp",
               .flag = "--pp",
               .value_name = "N",
               .label = {"Pipeline stages", "流水线阶段数"},
               .help = {"Pipeline stages (layers split as evenly as they go, the earlier stages taking one more; "
                        "the first embeds, the last runs the head)",
                        "流水线阶段数（层尽量均分，不能整除时前面的阶段多一层；第一段做嵌入，最后一段做输出头）"},
               .min = 1,
               .max = 64,
               .get = get_axis<Axis::pp>,
               .set = set_axis<Axis::pp>,
               .surfaces = surface::all,
               .plan = {.help = {"Pipeline stages", "流水线阶段数"}, .min = 1, .max = 10'000}});
  // tp and sequence_parallel: panel rows; the Tensor parallel view (ui/views/tensor_parallel_view.h) draws them.
  add_tensor_parallel_fields(f);
  add_context_parallel_fields(f);  // cp and cp_split (config/context_parallel_fields.cpp)
  add_pipeline_schedule_fields(f);
}

}  // namespace shardscope
