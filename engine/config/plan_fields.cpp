// SPDX-License-Identifier: GPL-3.0-or-later
// The estimator's own rows of the run-config schema: no get/set (RunConfig has
// no such field); the estimator reads their values through its settings.
#include "config/plan_fields.h"

// Each row names only the members it sets; the rest keep RunField's defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace shardscope {

namespace {

// What a rank holds: its micro-batch, what it offloads, how its activations are counted.
void add_rank_fields(std::vector<RunField>& f) {
  f.push_back({.key = "micro_batch",
               .flag = "--micro-batch",
               .value_name = "B",
               .help = {"Sequences per rank per micro-step (b)", "每个 rank 每个微步的序列数（b）"},
               .min = 1,
               .max = 1 << 24,
               .default_text = "1",
               .deepspeed = "train_micro_batch_size_per_gpu",
               .saved = Saved::never,
               .surfaces = surface::plan});
  f.push_back(
      {.key = "offload_optimizer",
       .flag = "--offload-optimizer",
       .kind = FieldKind::toggle,
       .help = {"Optimizer states and step on the CPU (ZeRO-Offload)", "优化器状态和更新放在 CPU 上（ZeRO-Offload）"},
       .deepspeed = "zero_optimization.offload_optimizer",
       .accelerate = "deepspeed_config.offload_optimizer_device",
       .saved = Saved::never,
       .surfaces = surface::estimate});
  f.push_back(
      {.key = "offload_params",
       .flag = "--offload-params",
       .kind = FieldKind::toggle,
       .help = {"ZeRO-3 parameters in CPU memory (ZeRO-Infinity)", "ZeRO-3 的参数放在 CPU 内存中（ZeRO-Infinity）"},
       .deepspeed = "zero_optimization.offload_param",
       .accelerate = "deepspeed_config.offload_param_device",
       .saved = Saved::never,
       .surfaces = surface::estimate});
  f.push_back({.key = "activations",
               .flag = "--activations",
               .value_name = "shardscope|formula",
               .kind = FieldKind::choice,
               .help = {"Activation bytes as GPU frameworks keep them, sbh(34 + 5as/h) per layer (16-bit under\n"
                        "      fp16/bf16), or exactly as ShardScope's own kernels keep them (fp32)",
                        "激活字节数按 GPU 框架的做法每层 sbh(34 + 5as/h) 计算（fp16/bf16 下为 16 位），"
                        "或按 ShardScope 自己的内核精确计算（fp32）"},
               .choices = {"shardscope", "formula"},
               .default_text = "formula",
               .saved = Saved::never,
               .surfaces = surface::plan});
}

// The kernel model's inputs for runs that hide collectives behind compute (Megatron-LM's overlaps,
// torchtitan's AsyncTP) or run their linears in FP8 (torchao's Float8Linear).
void add_overlap_and_float8_fields(std::vector<RunField>& f) {
  f.push_back(
      {.key = "tp_comm_overlap",
       .flag = "--tp-comm-overlap",
       .kind = FieldKind::toggle,
       .help = {"Time model (kernels): Megatron-LM's --tp-comm-overlap (Transformer Engine's userbuffers), sequence\n"
                "      parallelism's collectives hidden behind the GEMMs beside them, which run slower\n"
                "      while they do",
                "时间模型（kernels）：Megatron-LM 的 --tp-comm-overlap（Transformer Engine 的 "
                "userbuffers），序列并行的集合通信"
                "隐藏在相邻的 GEMM 之后，这些 GEMM 因此变慢"},
       .saved = Saved::never,
       .surfaces = surface::estimate});
  f.push_back(
      {.key = "async_tp",
       .flag = "--async-tp",
       .kind = FieldKind::toggle,
       .help = {"Time model (kernels): torchtitan's AsyncTP (PyTorch Inductor's micro-pipelined tp), each\n"
                "      all-gather and reduce-scatter of sequence parallelism fused with its matmuls in tp chunks",
                "时间模型（kernels）：torchtitan 的 AsyncTP（PyTorch Inductor 的微流水线张量并行），序列并行的每个 "
                "all-gather 与 reduce-scatter 与其矩阵乘法按 tp 块融合"},
       .saved = Saved::never,
       .surfaces = surface::estimate});
  f.push_back({.key = "overlap_param_gather",
               .flag = "--overlap-param-gather",
               .kind = FieldKind::toggle,
               .help = {"Time model (kernels): Megatron-LM's --overlap-param-gather, the distributed optimizer's\n"
                        "      all-gather hidden behind the next step's first forward (ZeRO-1/2)",
                        "时间模型（kernels）：Megatron-LM 的 --overlap-param-gather，分布式优化器的 all-gather "
                        "隐藏在下一步的第一次前向之后（ZeRO-1/2）"},
               .saved = Saved::never,
               .surfaces = surface::estimate});
  f.push_back({.key = "float8",
               .flag = "--float8",
               .value_name = "none|tensorwise",
               .kind = FieldKind::choice,
               .help = {"Time model (kernels): the layers' linears in FP8 as torchao's Float8Linear (torchtitan),\n"
                        "      one dynamic scale per tensor: GEMMs at the GPU's FP8 peak, amax and casts as memory\n"
                        "      passes; attention core and head stay 16-bit. Estimate only: training runs no FP8",
                        "时间模型（kernels）：各层的线性层按 torchao 的 Float8Linear（torchtitan）以 FP8 运行，"
                        "每个张量一个动态缩放：GEMM 按 GPU 的 FP8 峰值，amax 与转换按访存计算；注意力核心和输出头"
                        "保持 16 位。仅用于估算：训练不运行 FP8"},
               .choices = {"none", "tensorwise"},
               .default_text = "none",
               .saved = Saved::never,
               .surfaces = surface::estimate});
  f.push_back({.key = "float8_all_gather",
               .flag = "--float8-all-gather",
               .kind = FieldKind::toggle,
               .help = {"With --float8 and --zero 1-3: the sharded weights of the FP8 linears are gathered in FP8,\n"
                        "      one byte each (torchtitan's enable_fsdp_float8_all_gather)",
                        "与 --float8 和 --zero 1-3 一起：FP8 线性层的分片权重以 FP8（每个一字节）收集"
                        "（torchtitan 的 enable_fsdp_float8_all_gather）"},
               .saved = Saved::never,
               .surfaces = surface::estimate});
}

// The run's own memory and network where they are not the GPU profile's.
void add_bandwidth_fields(std::vector<RunField>& f) {
  f.push_back({.key = "gpu_bandwidth",
               .flag = "--gpu-bandwidth",
               .value_name = "GB/s",
               .kind = FieldKind::number,
               .help = {"The run's GPU memory bandwidth where it differs from the --gpu profile's data sheet",
                        "运行所用 GPU 的显存带宽（与 --gpu 配置的数据表不同时）"},
               .range = {0.0, 1e6, true},
               .default_text = "-",
               .saved = Saved::never,
               .surfaces = surface::estimate});
  f.push_back(
      {.key = "network_bandwidth",
       .flag = "--network-bandwidth",
       .value_name = "GB/s",
       .kind = FieldKind::number,
       .help = {"The cluster's network between nodes, per GPU and direction, where it differs from the\n"
                "      --gpu profile's (a node's ports over its GPUs: 4 x 100 Gb/s for 8 GPUs is 6.25)",
                "节点之间的网络带宽（每块 GPU、每个方向），与 --gpu 配置假设的网络不同时填写（节点的端口总带宽除以"
                "GPU 数：8 块 GPU 共 4 x 100 Gb/s 即 6.25）"},
       .range = {0.0, 1e6, true},
       .default_text = "-",
       .saved = Saved::never,
       .surfaces = surface::estimate});
}

// The kernel model's inputs that describe the published run itself (docs/PERFORMANCE.md):
// its framework's kernels, its recompute policy, its dropout, and its GPU's memory and network.
void add_kernel_model_fields(std::vector<RunField>& f) {
  f.push_back({.key = "runtime",
               .flag = "--runtime",
               .value_name = "fused|eager",
               .kind = FieldKind::choice,
               .help = {"Time model (kernels): the memory-bound ops between GEMMs as fused kernels (llm.c,\n"
                        "      Megatron-LM, torch.compile) or as eager PyTorch runs them, one kernel per op",
                        "时间模型（kernels）：GEMM 之间的访存密集算子为融合内核（llm.c、Megatron-LM、torch.compile），"
                        "或按 PyTorch eager 模式每个算子一个内核运行"},
               .choices = {"fused", "eager"},
               .default_text = "fused",
               .saved = Saved::never,
               .surfaces = surface::estimate});
  f.push_back({.key = "selective_ac",
               .flag = "--selective-ac",
               .value_name = "core|op",
               .kind = FieldKind::choice,
               .help = {"With --checkpoint selective: recompute the attention core (Korthikanti et al.) or, as\n"
                        "      torchtitan's op policy, every second matmul of a layer and its memory-bound ops",
                        "与 --checkpoint selective 一起：重算注意力核心（Korthikanti 等），或按 torchtitan 的 op "
                        "策略重算每层每隔一个的矩阵乘及其访存密集算子"},
               .choices = {"core", "op"},
               .default_text = "core",
               .saved = Saved::never,
               .surfaces = surface::estimate});
  f.push_back({.key = "dropout",
               .flag = "--dropout",
               .value_name = "P",
               .kind = FieldKind::number,
               .help = {"Time model (kernels): the run's dropout probability; above 0 each dropout writes and\n"
                        "      reads its mask (the attention probabilities' too, unless --attention flash)",
                        "时间模型（kernels）：运行的 dropout 概率；大于 0 时每个 dropout 写入并读取其掩码"
                        "（注意力概率的也是，除非 --attention flash）"},
               .range = {0.0, 1.0, false, true},
               .default_text = "0",
               .saved = Saved::never,
               .surfaces = surface::estimate});
  f.push_back({.key = "reduce_dtype",
               .flag = "--reduce-dtype",
               .value_name = "gradient|fp32",
               .kind = FieldKind::choice,
               .help = {"ZeRO 1-3: the gradients reduce-scattered in their own precision, or cast to fp32 first\n"
                        "      (PyTorch FSDP's MixedPrecision reduce_dtype float32): 4 bytes a value and a cast pass",
                        "ZeRO 1-3：梯度以自身精度 reduce-scatter，或先转换为 fp32（PyTorch FSDP 的 MixedPrecision "
                        "reduce_dtype float32）：每个值 4 字节，外加一次转换"},
               .choices = {"gradient", "fp32"},
               .default_text = "gradient",
               .saved = Saved::never,
               .surfaces = surface::estimate});
  f.push_back({.key = "autocast",
               .flag = "--autocast",
               .kind = FieldKind::toggle,
               .help = {"Time model (kernels): PyTorch AMP, fp32 weights cast to 16 bits in every forward and\n"
                        "      16-bit gradients accumulated in fp32 (Lightning's precision \"bf16\")",
                        "时间模型（kernels）：PyTorch AMP，fp32 权重在每次前向时转换为 16 位，16 位梯度以 fp32 累加"
                        "（Lightning 的 precision \"bf16\"）"},
               .saved = Saved::never,
               .surfaces = surface::estimate});
  add_overlap_and_float8_fields(f);
  add_bandwidth_fields(f);
}

// The cluster: GPU memory, GPUs per machine and machines, and the time model's one assumption.
void add_cluster_fields(std::vector<RunField>& f) {
  f.push_back(
      {.key = "gpu_mem",
       .flag = "--gpu-mem",
       .value_name = "SIZE",
       .kind = FieldKind::text,
       .help = {"GPU memory for the fit instead of the profile's (80GB, 80GiB, 24576MiB; positive, at most\n"
                "      1000000 of its unit)",
                "检查是否放得下时用的显存，代替 GPU 配置的（80GB、80GiB、24576MiB；为正，至多 1000000 个单位）"},
       .saved = Saved::never,
       .surfaces = surface::estimate});
  f.push_back(
      {.key = "gpus_per_node",
       .flag = "--gpus-per-node",
       .value_name = "N",
       .help = {"GPUs per machine (accelerate: num_processes / num_machines), for DeepSpeed's estimator and "
                "the inter-node link",
                "每台机器的 GPU 数（accelerate：num_processes / num_machines），用于 DeepSpeed 的估算器和节点间链路"},
       .min = 1,
       .max = 1 << 16,
       .default_text = "8",
       .accelerate = "num_processes / num_machines",
       .saved = Saved::never,
       .surfaces = surface::plan});
  f.push_back({.key = "nodes",
               .value_name = "N",
               .help = {"Machines", "机器数"},
               .min = 1,
               .max = 1 << 17,
               .default_text = "1",
               .accelerate = "num_machines",
               .saved = Saved::never,
               .surfaces = surface::planner});
  f.push_back(
      {.key = "attention",
       .flag = "--attention",
       .value_name = "materialized|flash|triton",
       .kind = FieldKind::choice,
       .help = {"Time model (kernels): the attention core writes its s x s scores to memory, as the\n"
                "      activation formula keeps them, or runs as one fused kernel that does not (FlashAttention-2;\n"
                "      triton: FlashAttention in Triton, 1.4x its forward and 2x its backward seconds)",
                "时间模型（kernels）：注意力核心把 s x s 分数写入显存（与激活公式一致），或作为不写分数的融合内核运行"
                "（FlashAttention-2；triton：Triton 版 FlashAttention，前向耗时为其 1.4 倍，反向为 2 倍）"},
       .choices = {"materialized", "flash", "triton"},
       .default_text = "materialized",
       .saved = Saved::never,
       .surfaces = surface::estimate});
  f.push_back({.key = "efficiency",
               .flag = "--efficiency",
               .value_name = "X",
               .kind = FieldKind::number,
               .help = {"Flat time model: the fraction of peak FLOP/s a step sustains (an assumption; given\n"
                        "      alone, it picks --time-model flat)",
                        "flat 时间模型：一步能维持的峰值 FLOP/s 比例（假设值；单独给出时即选 --time-model flat）"},
               .range = {0.0, 1.0, true},
               .default_text = "0.5",
               .saved = Saved::never,
               .surfaces = surface::estimate});
  f.push_back(
      {.key = "time_model",
       .flag = "--time-model",
       .value_name = "flat|kernels",
       .kind = FieldKind::choice,
       .help =
           {"Time model: kernels (each kernel from a measured GEMM table at the GPU's sustained clock,\n"
            "      data-parallel traffic overlapped as its strategy overlaps it; docs/PERFORMANCE.md) or\n"
            "      flat (the simple one: every FLOP at --efficiency of peak; --efficiency alone picks it)",
            "时间模型：kernels（按实测 GEMM 表和 GPU 的持续时钟逐个内核计算，数据并行通信按其策略与计算重叠；"
            "docs/PERFORMANCE.md）或 flat（简单模型：所有 FLOP 按 --efficiency 比例计算；只给 --efficiency 即选它）"},
       .choices = {"flat", "kernels"},
       .default_text = "kernels",
       .saved = Saved::never,
       .surfaces = surface::estimate});
  add_kernel_model_fields(f);
}

}  // namespace

void add_plan_fields(std::vector<RunField>& f) {
  add_rank_fields(f);
  add_cluster_fields(f);
}

}  // namespace shardscope
