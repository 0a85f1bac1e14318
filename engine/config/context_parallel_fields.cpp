// SPDX-License-Identifier: GPL-3.0-or-later
#include "config/context_parallel_fields.h"

#include <string>

#include "config/field_access.h"

// Each row names only the members it sets; the rest keep RunField's defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace shardscope {

using namespace field_access;

void add_context_parallel_fields(std::vector<RunField>& f) {
  f.push_back({.key = "cp",
               .flag = "--cp",
               .value_name = "N",
               .label = {"Context-parallel ranks", "上下文并行 rank 数"},
               .help = {"Context-parallel ranks: every sequence split over N ranks, attention passing keys and "
                        "values round their ring (ring attention); --seq must divide by N (by 2N with --cp-split "
                        "zigzag)",
                        "上下文并行 rank 数：每条序列切分到 N 个 rank 上，注意力在它们的环上传递键和值（环形注意力）；"
                        "--seq 须能被 N 整除（--cp-split zigzag 时须能被 2N 整除）"},
               .min = 1,
               .max = 64,
               .saved = Saved::optional,
               .get = get_axis<Axis::cp>,
               .set = set_axis<Axis::cp>,
               .surfaces = surface::train | surface::plan,
               .plan = {.help = {"Context-parallel ranks: every sequence split over N GPUs (ring attention); "
                                 "activations per GPU at seq / N tokens; --seq must divide by N",
                                 "上下文并行 rank 数：每条序列切分到 N 个 GPU 上（环形注意力）；每个 GPU 的激活按 "
                                 "seq / N 个 token 计；--seq 须能被 N 整除"},
                        .min = 1,
                        .max = 1'000'000}});
  f.push_back({.key = "cp_split",
               .flag = "--cp-split",
               .value_name = "zigzag|contiguous",
               .kind = FieldKind::choice,
               .label = {"Context-parallel split", "上下文并行切分方式"},
               .help = {"How --cp splits each sequence: zigzag (2 cp chunks, rank i holding chunks i and "
                        "2 cp - 1 - i, so causal attention costs every rank the same) or contiguous (rank i "
                        "holding the i-th seq / cp tokens)",
                        "--cp 如何切分每条序列：zigzag（切成 2 cp 块，rank i 持有第 i 和第 2 cp - 1 - i 块，"
                        "因果注意力在每个 rank 上的计算量相同）或 contiguous（rank i 持有第 i 段 seq / cp 个 token）"},
               .choices = {"zigzag", "contiguous"},
               .saved = Saved::optional,
               .get = get_member<&RunConfig::cp_split>,
               .set = set_member<&RunConfig::cp_split>,
               .surfaces = surface::train});
}

namespace {
std::string str(long long v) {
  return std::to_string(v);
}
void require(bool ok, const std::string& en, const std::string& zh) {
  if (!ok) throw FieldError(en, zh);
}
}  // namespace

void validate_context_parallel(const RunConfig& c, const ModelConfig& /*model*/) {
  const int cp = c.layout.cp();
  if (cp == 1) return;
  const bool zigzag = c.cp_split == "zigzag";
  const int pieces = zigzag ? 2 * cp : cp;
  require(c.seq % pieces == 0,
          "{cp} " + str(cp) + ": {seq} " + str(c.seq) + " does not split into " + str(pieces) + " equal chunks (" +
              (zigzag ? "{cp_split} zigzag gives each rank 2 of 2 cp chunks" : "each rank holds seq / cp tokens") + ")",
          "{cp} " + str(cp) + "：{seq} " + str(c.seq) + " 无法均分为 " + str(pieces) + " 块（" +
              (zigzag ? "{cp_split} zigzag 给每个 rank 2 cp 块中的 2 块" : "每个 rank 持有 seq / cp 个 token") + "）");
  const int local = c.seq / cp, tp = c.layout.tp();
  require(!c.sequence_parallel || local % tp == 0,
          "{sequence_parallel} with {cp} " + str(cp) + ": the " + str(local) + " tokens per cp rank ({seq} " +
              str(c.seq) + " / " + str(cp) + ") do not split over {tp} " + str(tp),
          "{sequence_parallel} 与 {cp} " + str(cp) + "：每个 cp rank 的 " + str(local) + " 个 token（{seq} " +
              str(c.seq) + " / " + str(cp) + "）无法均分到 {tp} " + str(tp));
  const auto not_yet = [&](bool refused, const std::string& with_en, const std::string& with_zh) {
    require(!refused,
            "{cp} " + str(cp) + " with " + with_en +
                " is not built yet (context parallelism trains GPT and BERT with DDP or ZeRO, tensor parallelism "
                "and pipelines, for now)",
            "{cp} " + str(cp) + " 与 " + with_zh +
                " 的组合尚未实现（上下文并行目前训练 GPT 和 BERT，可与 DDP 或 ZeRO、张量并行以及"
                "流水线并行组合）");
  };
  not_yet(c.dp_mode == DataParallelMode::naive, "{dp_mode} naive", "{dp_mode} naive");
}

}  // namespace shardscope
