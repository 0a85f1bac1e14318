// SPDX-License-Identifier: GPL-3.0-or-later
#include "estimate/step_kernels.h"

#include <algorithm>
#include <initializer_list>

#include "clock/attention_kernel.h"
#include "estimate/moe_kernels.h"

namespace shardscope {

namespace {

// Forward and backward seconds of one part of a layer (or the head), per micro-batch.
struct Pass {
  double forward = 0, backward = 0;
  double kernels_forward = 0, kernels_backward = 0;
};

struct Dims {
  double r, s, b, h, f, q, qkv, kv, heads, hd, vocab, t, d, dropout;  // q: the queries' width a·d
  double cp;  // context-parallel ranks: each holds r = b·s/cp tokens and runs attention as cp blocks
  bool gated, causal, eager;
};

// The GEMMs of a linear: their kernel model and the bytes a value of their operands and output.
struct Linear {
  KernelModel km;
  double operand_bytes, output_bytes;  // d and d; FP8: 1 in, d out
};

// out (m × n) = in (m × k) · W (k × n), `batch` of them in one kernel.
double gemm(const Linear& lin, double m, double n, double k, double batch = 1) {
  return lin.km.gemm_s(m, n, k, batch, batch * (lin.operand_bytes * (m * k + k * n) + lin.output_bytes * m * n));
}

// A weight GEMM r × n × k forward, and its two backward GEMMs.
void add_weight_gemm(Pass& p, const Linear& lin, const Dims& x, double n, double k) {
  p.forward += gemm(lin, x.r, n, k);
  p.backward += gemm(lin, x.r, k, n) + gemm(lin, k, n, x.r);
  p.kernels_forward += 1;
  p.kernels_backward += 2;
}

Pass weight_gemms(const Linear& lin, const Dims& x) {
  Pass p;
  add_weight_gemm(p, lin, x, x.qkv / x.t, x.h);
  add_weight_gemm(p, lin, x, x.h, x.q / x.t);
  if (x.f == 0) return p;  // a MoE layer: its MLP is the experts' (estimate/moe_kernels.h)
  add_weight_gemm(p, lin, x, (x.gated ? 2 : 1) * x.f / x.t, x.h);
  add_weight_gemm(p, lin, x, x.h, x.f / x.t);
  return p;
}

// torchtitan's op policy recomputes every second matmul in the layer's forward order: of Llama's
// wq, wk, wv, wo, w1, w3, w2 the wk, wo and w3; of GPT's qkv, out, fc, down the out and down.
Pass every_second_matmul(const Linear& lin, const Dims& x) {
  Pass p;
  if (x.gated) add_weight_gemm(p, lin, x, x.kv / x.t, x.h);
  add_weight_gemm(p, lin, x, x.h, x.q / x.t);
  if (x.f == 0) return p;  // a MoE layer's experts: not recomputed by the op policy here
  if (x.gated)
    add_weight_gemm(p, lin, x, x.f / x.t, x.h);
  else
    add_weight_gemm(p, lin, x, x.h, x.f / x.t);
  return p;
}

// Bytes of torchao's tensorwise casts around the layers' Float8Linears, per micro-batch of r tokens on one
// tp rank, as torchtitan 9dec370 runs them on torchao eab345c, one pass per kernel (the eager count).
// A dynamic cast of a 16-bit tensor of d bytes a value is two passes, its amax (read d) and the
// scale-and-cast (read d, write 1): 2d + 1 a value (float8_scaling_utils.py, hp_tensor_to_float8_dynamic).
//   forward (float8_linear.py, Float8Linear.forward): the input (cast_input_to_float8) and the weight
//     (cast_weight_to_float8_t), each skipped when it arrives already cast (tensor_already_casted_to_fp8);
//   backward: the output's gradient (NoopFwToFloat8BwDynamic); cuBLAS's FP8 GEMMs take the first operand
//     row-major and the second column-major (float8_ops.py, preprocess_addmm), so the weight (for d_in),
//     the gradient and the input (for d_W) are each copied transposed, 1 byte read and 1 written.
// Recompute runs the forward's casts again: full checkpointing all of them; torchtitan's op policy saves
// the amax (its save list keeps abs and max) and runs the scale-and-cast again (d + 1).
struct CastBytes {
  double forward = 0, backward = 0;
  double recast = 0;   // the op policy's forward again
  double gathers = 0;  // FSDP's FP8 all-gather: the weight shards' casts, outside the checkpointed forward
};

// Where the weights are cast. Without --float8-all-gather each Float8Linear casts its whole (tp-local)
// 16-bit weight in its forward. With it FSDP casts each rank's 1/dp shard before every all-gather
// (fsdp_utils.py, WeightWithDynamicFloat8CastTensor.fsdp_pre_all_gather), the gathered weight arrives
// cast, and torchtitan's precompute_float8_dynamic_scale_for_fsdp takes the shards' amax once a step
// after the optimizer (one _foreach_norm and one all-reduce for all weights). The shard is FSDP's fp32
// parameter (its bf16 param_dtype is the cast the hook replaces): 4 read and 1 written a cast, 4 the amax.
struct WeightCasts {
  bool gathered = false;
  double shard = 1;           // 1/dp
  double gathers = 0;         // per micro-step: ZeRO-3 2 (forward and backward), ZeRO-1/2 1/K
  double amax_per_micro = 0;  // 1/K
};

void add_activation_cast(CastBytes& c, const Dims& x, double values) {
  c.forward += (2 * x.d + 1) * values;
  c.recast += (x.d + 1) * values;
}

// One Float8Linear in (k) × out (n): its weight's cast and its backward passes. `gradient_tokens`: the
// tokens whose output gradient it casts (all r, or r/t where a row-parallel output's gradient is cast on
// its sequence shard before the all-gather).
void add_linear_casts(CastBytes& c, const Dims& x, const WeightCasts& w, double k, double n, double gradient_tokens) {
  const double fp32_shard = 4;
  if (w.gathered)
    c.gathers += k * n * w.shard * ((fp32_shard + 1) * w.gathers + fp32_shard * w.amax_per_micro);
  else
    add_activation_cast(c, x, k * n);
  c.backward += (2 * x.d + 1) * gradient_tokens * n + 2 * (k * n + x.r * n + x.r * k);
}

// One block (attention or MLP): column-parallel linears of output widths `columns` reading the block's
// normed input (h wide), then a row-parallel linear `row_in` × h. Under --tp with --sequence-parallel,
// torchtitan's apply_tp wraps the block in PrepareFloat8ModuleInput (float8_tensor_parallel.py): it casts
// the block's input on this rank's r/t tokens before the all-gather, once for all its linears, and
// Float8ColwiseParallel and the Float8Linears find it cast; Float8RowwiseParallel casts the row-parallel
// output's gradient where it arrives, on the r/t tokens of the sequence shard, and the reduce-scatter's
// backward gathers it at 1 byte (the Float8Linear finds it cast). Without sequence parallelism (or tp)
// each linear casts its whole input and the row-parallel gradient covers all r tokens.
void add_block_casts(CastBytes& c, const Dims& x, const WeightCasts& w, std::initializer_list<double> columns,
                     double row_in, bool sequence_parallel) {
  const bool split = sequence_parallel && x.t > 1;
  if (split) add_activation_cast(c, x, x.r / x.t * x.h);
  for (const double n : columns) {
    if (!split) add_activation_cast(c, x, x.r * x.h);
    add_linear_casts(c, x, w, x.h, n, x.r);
  }
  add_activation_cast(c, x, x.r * row_in);  // the row-parallel input: all tokens, this rank's columns
  add_linear_casts(c, x, w, row_in, x.h, split ? x.r / x.t : x.r);
}

// Llama's linears as torchtitan's model runs them, each its own Float8Linear (wq, wk, wv, wo; w1, w3, w2);
// GPT's fused qkv and fc one each.
CastBytes float8_cast_bytes(const Dims& x, const WeightCasts& w, bool sequence_parallel) {
  CastBytes c;
  const double q = x.q / x.t, kv = x.kv / x.t, f = x.f / x.t;
  if (x.gated) {
    add_block_casts(c, x, w, {q, kv, kv}, q, sequence_parallel);
    add_block_casts(c, x, w, {f, f}, f, sequence_parallel);
  } else {
    add_block_casts(c, x, w, {x.qkv / x.t}, q, sequence_parallel);
    add_block_casts(c, x, w, {f}, f, sequence_parallel);
  }
  return c;
}

// `flash_km`: the kernel model at the fused attention kernel's own FLOP rate (clock/attention_kernel.h).
// `triton`: FlashAttention in Triton, FlashAttention-2's seconds times the ratios its paper measured.
// Context parallelism (ring attention): a rank's s/cp queries meet the s keys as cp blocks of s/cp × s/cp,
// one kernel each. Under a causal mask the load-balanced split (each rank two chunks, i and 2cp − 1 − i:
// model/context_parallel.h, PyTorch's round-robin) leaves every block half a tile of work, the diagonal
// one by its mask and the others as one chunk of queries or keys, so every rank does s²/(2cp).
Pass attention_core(const KernelModel& km, const KernelModel& flash_km, const Dims& x, bool flash, bool triton) {
  const double batch = x.b * x.heads / x.t, s = x.s / x.cp, hd = x.hd, blocks = x.cp;
  Pass p;
  if (flash) {
    // Under a causal mask the kernel skips the blocks above the diagonal: half the work.
    const double work = x.causal ? 0.5 : 1.0;
    p.forward = blocks * flash_km.gemm_s(work * 4 * batch * s * s * hd, x.d * batch * 4 * s * hd);
    // Two backward kernels (FlashAttention-2's row sums of dO·O, then the main one): two floors.
    p.backward =
        blocks * (flash_km.gemm_s(work * 10 * batch * s * s * hd, x.d * batch * 8 * s * hd) + flash_km.gemm_floor_s);
    if (triton) {
      p.forward *= triton_forward_slowdown;
      p.backward *= triton_backward_slowdown;
    }
    p.kernels_forward = blocks;
    p.kernels_backward = 2 * blocks;
    return p;
  }
  const double scores = x.d * batch * s * s;  // one pass over a block's s/cp × s/cp scores
  // Dropout on the probabilities: forward writes the dropped copy and a 1-byte mask, backward
  // reads both and writes the gradient (Megatron-LM runs it apart from its fused softmax).
  const double mask = x.dropout > 0 ? batch * s * s * (2 * x.d + 1) : 0;
  const Linear scores_gemm{km, x.d, x.d};
  const double qk = gemm(scores_gemm, s, s, hd, batch), pv = gemm(scores_gemm, s, hd, s, batch);
  p.forward = blocks * (qk + pv + km.memory_s(2 * scores + mask));       // QKᵀ, softmax, dropout, PV
  p.backward = blocks * (qk + 3 * pv + km.memory_s(3 * scores + mask));  // dP, dV, dQ, dK, dropout's, softmax's
  p.kernels_forward = 2 * blocks;
  p.kernels_backward = 4 * blocks;
  return p;
}

// Ring attention's memory-bound passes around its blocks, bytes per layer and micro-batch, as PyTorch's
// context parallel runs them under torchtitan (torch/distributed/tensor/experimental/_attention.py, read at
// a stored version later than the benchmark's torch 1963fc8; the merge and the accumulators are the same
// code there as in the older `_ring_rotate` version), one kernel per op as the Python issues them. o: the
// values of the rank's attention output, r·q/t (K and V, repeated to every query head, as many); d: the
// activations' bytes. Counted for the last cp rank, whose blocks after the first take all its queries and the
// first half of the keys (the load balance): the most bytes of any rank (the others' partial updates copy
// less), and the ring waits for it every layer.
//   forward (_templated_ring_attention): K and V made contiguous (torchtitan's transposed views: 2 · 2d),
//     then concatenated for the rotater before every block but the last ((cp − 1) · 2 · 2d; the all-gather
//     uses the first); _SDPAMerger.step casts each block's output to fp32 (d + 4), and from the second block
//     _merge_one runs out − sigmoid(lse_b − lse)·(out − out_b) in fp32, three passes (12 + 8 + 12);
//     results() casts the merged output back (4 + d).
//   backward (_templated_ring_attention_backward): dQ, dK, dV zeroed in fp32 (3 · 4); K and V contiguous
//     and concatenated as forward; the first block adds its dQ, dK, dV into the fp32 accumulators
//     (3 · (8 + d)); each later block adds its half-length dK, dV into the first half of the accumulators it
//     received and concatenates the halves (_partial_update: 2 · ((8 + d)/2 + 8)), and adds its dQ (8 + d);
//     every block concatenates dK, dV for the all-to-all that passes them on (2 · 8); at the end dQ, dK and
//     dV are cast back (3 · (4 + d)).
// The log-sum-exp's own passes are 1/hd of the output's: left out.
Pass ring_attention_bytes(const Dims& x) {
  const double o = x.r * x.q / x.t, d = x.d, cp = x.cp;
  const double copy_kv = 2 * 2 * d;  // K and V, d read and d written a value
  Pass p;
  p.forward = o * (cp * copy_kv + (d + 4) + (cp - 1) * ((d + 4) + 12 + 8 + 12) + (4 + d));
  p.backward =
      o * (3 * 4 + cp * copy_kv + 3 * (8 + d) + (cp - 1) * ((8 + d) + 2 * 8 + (8 + d)) + cp * 2 * 8 + 3 * (4 + d));
  return p;
}

// Bytes per token of one layer's memory-bound kernels, fused: one pass per op.
Pass fused_bytes(const Dims& x, double norm_tokens) {
  const double q_and_k = (x.qkv + x.q) / 2;  // q is a·d wide; k and v share the rest
  Pass p;
  p.forward = x.d * (norm_tokens * (2 * 2 + 2 * 3) * x.h + x.r * (x.gated ? 3 : 2) * x.f / x.t +
                     (x.gated ? x.r * 2 * q_and_k / x.t : 0));
  p.backward = x.d * (norm_tokens * (2 * 3 + 2 * 3) * x.h + x.r * (x.gated ? 5 : 3) * x.f / x.t +
                      (x.gated ? x.r * 2 * q_and_k / x.t : 0));
  return p;
}

// The same ops as eager PyTorch runs them (torchtitan's Llama at commit 9dec370, no compile), bytes
// per value read and written by each kernel, d the activation's bytes:
//   RMSNorm x·rsqrt(mean(x²) + eps) in fp32, cast back, times the weight: forward float (d + 4),
//     pow 8, mean 4, multiply 8, cast (4 + d), weight 2d = 4d + 28; backward through the same
//     autograd nodes (weight's grad and sum 6d, casts 2(d + 4), multiply and its sum 24, mean 4,
//     pow 20, the two paths' add 12) = 8d + 68. GPT's LayerNorm is one native kernel (as fused).
//   SwiGLU: SiLU 2d and the product 3d forward, their backward 3d + 3d + 3d (GELU: one kernel).
//   RoPE through fp32 complex views, on q and k each: cast, complex product, cast back 2d + 16,
//     its backward the same.
//   Grouped-query attention: k and v expanded to every head and copied, d(kv + q) each, the
//     backward's sums over the repeats the same.
//   Residual adds as fused (3d each way).
Pass eager_bytes(const Dims& x, double norm_tokens) {
  const double q = x.q / x.t, kv = x.kv / x.t, f = x.f / x.t;
  Pass p;
  if (!x.gated) {  // GPT: native LayerNorm and GELU kernels, one pass each as fused
    p = fused_bytes(x, norm_tokens);
    return p;
  }
  const double repeat = x.kv < x.q ? 2 * x.d * (kv + q) : 0;
  p.forward =
      norm_tokens * (2 * (4 * x.d + 28) + 2 * 3 * x.d) * x.h + x.r * (5 * x.d * f + (2 * x.d + 16) * (q + kv) + repeat);
  p.backward =
      norm_tokens * (2 * (8 * x.d + 68) + 2 * 3 * x.d) * x.h + x.r * (9 * x.d * f + (2 * x.d + 16) * (q + kv) + repeat);
  return p;
}

Pass memory_bound(const KernelModel& km, const Dims& x, bool sequence_parallel) {
  const double norm_tokens = sequence_parallel ? x.r / x.t : x.r;
  Pass bytes = x.eager ? eager_bytes(x, norm_tokens) : fused_bytes(x, norm_tokens);
  if (x.dropout > 0) {  // the two hidden dropouts' 1-byte masks, written forward, read backward
    bytes.forward += 2 * norm_tokens * x.h;
    bytes.backward += 2 * norm_tokens * x.h;
  }
  return {km.memory_s(bytes.forward), km.memory_s(bytes.backward), 0, 0};
}

// The head's memory-bound bytes: the final norm and cross-entropy over the (split) vocabulary;
// eager torchtitan casts the logits to fp32 first: forward cast (d + 4) and log-softmax 8,
// backward the loss's gradient 4, log-softmax's 12, the cast (4 + d).
double head_bytes(const Dims& x) {
  if (!x.eager || !x.gated) return x.d * x.r * (3 * x.vocab / x.t + 5 * x.h);
  return x.r * ((2 * x.d + 32) * x.vocab / x.t + (12 * x.d + 96) * x.h);
}

Dims dims_of(const ModelShape& m, const EstimateSettings& s) {
  Dims x{};
  x.b = s.micro_batch_size;
  x.s = s.seq;
  x.cp = s.layout.cp();
  x.r = x.b * x.s / x.cp;  // this rank's tokens of the micro-batch
  x.h = static_cast<double>(m.hidden);
  x.f = static_cast<double>(m.intermediate);
  x.gated = m.architecture == "llama";
  x.causal = m.architecture != "bert";  // decoders mask the future
  x.eager = s.eager_runtime;
  x.dropout = s.dropout;
  // The QKV width from the layer's parameters (3h, less with grouped-query attention), the
  // output projection (a·d, h) taken out; a bias or a norm counts as a column more. A MoE layer's
  // MLP is its experts, shared experts and router.
  const double mlp = m.experts > 0 ? moe_mlp_parameters(m) : (x.gated ? 3 : 2) * x.h * x.f;
  x.q = m.query_width();
  x.qkv = std::max(x.q, (static_cast<double>(m.layer_parameters) - x.q * x.h - mlp) / x.h);
  x.kv = std::max(0.0, (x.qkv - x.q) / 2);
  x.heads = static_cast<double>(m.heads);
  x.hd = x.q / x.heads;
  x.vocab = static_cast<double>(m.vocab);
  x.t = s.layout.tp();
  x.d = s.precision == Precision::fp32 || s.activations == ActivationMode::shardscope ? 4 : 2;
  return x;
}

// One layer's weight GEMMs, memory-bound kernels and the op policy's recomputed matmuls, on
// average over the stage's layers: with experts, its MoE layers (the model's last ones) run the
// attention half of `x` and the experts' MLP (estimate/moe_kernels.h), the others (DeepSeek-V3's
// first dense ones) the whole of `x`.
struct LayerPasses {
  Pass gemms, memory, again;
};

Pass blend(const Pass& dense, const Pass& moe, double moe_share) {
  const auto mix = [moe_share](double a, double b) { return a * (1 - moe_share) + b * moe_share; };
  return {mix(dense.forward, moe.forward), mix(dense.backward, moe.backward),
          mix(dense.kernels_forward, moe.kernels_forward), mix(dense.kernels_backward, moe.kernels_backward)};
}

LayerPasses stage_layer(const ModelShape& model, const EstimateSettings& s, const KernelModel& km, const Linear& lin,
                        const Dims& x, bool op_policy) {
  const LayerPasses dense{weight_gemms(lin, x), memory_bound(km, x, s.sequence_parallel),
                          op_policy ? every_second_matmul(lin, x) : Pass{}};
  if (model.experts == 0) return dense;
  Dims attention = x;
  attention.f = 0;
  LayerPasses moe{weight_gemms(lin, attention), memory_bound(km, attention, s.sequence_parallel),
                  op_policy ? every_second_matmul(lin, attention) : Pass{}};
  const MoeLayerKernels experts = moe_layer_kernels(model, s, km);
  moe.gemms.forward += experts.gemm_forward;
  moe.gemms.backward += experts.gemm_backward;
  moe.gemms.kernels_forward += experts.kernels_forward;
  moe.gemms.kernels_backward += experts.kernels_backward;
  moe.memory.forward += experts.memory_forward;
  moe.memory.backward += experts.memory_backward;
  const double layers = static_cast<double>(model.layers) / s.layout.pp();
  const double share = std::min(layers, static_cast<double>(model.moe_layers())) / layers;
  return {blend(dense.gemms, moe.gemms, share), blend(dense.memory, moe.memory, share),
          blend(dense.again, moe.again, share)};
}

// --async-tp: torchtitan's AsyncTP as PyTorch Inductor runs it (pytorch/pytorch: the fused ops in
// torch/distributed/_symmetric_memory/__init__.py at 0e9ed9c, the pass in
// torch/_inductor/fx_passes/micro_pipeline_tp.py at 5f65158; the functions named below).
// The pass fuses an all-gather with the matmuls that read the gathered tensor as their left operand
// (fuse_all_gather_matmul) and a reduce-scatter with the one matmul that makes its input
// (fuse_matmul_reduce_scatter; _find_producer_matmul takes mm or _scaled_mm, so FP8 linears fuse too).
// Both split the matmul along the tokens into the t ranks' chunks of r/t rows:
// - fused_all_gather_matmul (_pipelined_all_gather_and_consume): each rank copies its shard into its
//   symmetric buffer before anything else ("giving up the chance to overlap mv"), multiplies it, and
//   pulls each other rank's shard (a copy_, on the copy engine) beside the previous shard's matmul;
// - fused_matmul_reduce_scatter (_pipelined_produce_and_all2all): each chunk's matmul, then its copy to
//   the rank that owns it beside the next chunk's matmul, the rank's own chunk last; then one sum of
//   the t stacked partials (reduce_fn).
// So a collective hides behind (t − 1) of its own t chunk GEMMs, not behind the step's; the GEMMs run
// at the chunk's shape; the shard's copy or the partials' sum stays exposed. In a layer the pass finds,
// forward, the all-gathers before the attention's and the MLP's column linears and the reduce-scatters
// after the output and down projections; backward, the gradients' all-gathers before the two
// row-parallel linears' data-gradient matmuls, and the reduce-scatters of the column-parallel inputs'
// gradients only where one linear makes them (GPT's qkv and fc): Llama's wq, wk, wv (and w1, w3)
// gradients are summed first, an add that is no producer matmul. A MoE layer's experts fuse nothing.
// `gemms`: the (n, k) of the matmuls beside the collective, as weight_gemms prices them.
TensorParallelOp tp_op(const KernelModel& km, const Linear& lin, const Dims& x, bool all_gather, bool forward,
                       bool fused, std::initializer_list<std::pair<double, double>> gemms) {
  TensorParallelOp op;
  op.all_gather = all_gather;
  op.forward = forward;
  op.fused = fused;
  const double chunk = x.r / x.t;                                   // tokens of one rank's shard
  const double value_bytes = all_gather ? lin.operand_bytes : x.d;  // FP8 gathers 1-byte values
  op.bytes = (x.t - 1) * chunk * x.h * value_bytes;
  if (!fused) return op;
  for (const auto& [n, k] : gemms) {
    op.gemm_s += gemm(lin, x.r, n, k);
    op.chunked_gemm_s += x.t * gemm(lin, chunk, n, k);
  }
  op.exposed_pass_s = all_gather ? km.memory_s(2 * chunk * x.h * value_bytes)   // the shard into the buffer
                                 : km.memory_s((x.t + 1) * chunk * x.h * x.d);  // t partials read, one written
  return op;
}

std::vector<TensorParallelOp> async_tp_ops(const KernelModel& km, const Linear& lin, const Dims& x, bool experts) {
  const double qkv = x.qkv / x.t, q = x.q / x.t, columns = (x.gated ? 2 : 1) * x.f / x.t, f = x.f / x.t;
  const bool one_linear = !x.gated, mlp = !experts;
  return {tp_op(km, lin, x, true, true, true, {{qkv, x.h}}),
          tp_op(km, lin, x, false, true, true, {{x.h, q}}),
          tp_op(km, lin, x, true, true, mlp, {{columns, x.h}}),
          tp_op(km, lin, x, false, true, mlp, {{x.h, f}}),
          tp_op(km, lin, x, true, false, true, {{q, x.h}}),
          tp_op(km, lin, x, true, false, mlp, {{f, x.h}}),
          tp_op(km, lin, x, false, false, one_linear, {{x.h, qkv}}),
          tp_op(km, lin, x, false, false, mlp && one_linear, {{x.h, columns}})};
}

}  // namespace

double every_second_matmul_parameters(const ModelShape& model, const EstimateSettings& settings) {
  const Dims x = dims_of(model, settings);
  const double attention = x.gated ? x.h * (x.kv + x.q) : x.h * x.q;
  // A MoE layer's experts are not recomputed (every_second_matmul returns before them): only the
  // dense layers' MLP matmul counts, by their share of the layers (DeepSeek-V3's first ones).
  const double layers = static_cast<double>(model.layers);
  const double dense_share = model.experts > 0 ? (layers - static_cast<double>(model.moe_layers())) / layers : 1.0;
  return attention + dense_share * x.h * x.f;
}

StepKernels step_kernels(const ModelShape& model, const EstimateSettings& s, const KernelModel& km,
                         double attention_fraction, const KernelModel* float8_km) {
  const Dims x = dims_of(model, s);
  KernelModel flash_km = km;
  if (attention_fraction > 0) flash_km.gemm_fraction = attention_fraction;
  // The layers' linears: 16-bit, or (--float8) FP8 operands with a 16-bit output at the FP8 rate.
  const bool float8 = s.float8_linears && float8_km != nullptr;
  const Linear sixteen_bit{km, x.d, x.d};
  const Linear layer_linear = float8 ? Linear{*float8_km, 1, x.d} : sixteen_bit;
  const bool full = s.recompute == Recompute::full, selective = s.recompute == Recompute::selective;
  const bool op_policy = selective && s.selective_every_second_matmul;
  // Recomputed forward: full checkpointing every kernel, selective the attention core, the op policy
  // every second matmul and every memory-bound kernel (the attention kernel's output is kept).
  const LayerPasses layer = stage_layer(model, s, km, layer_linear, x, op_policy);
  const Pass &w = layer.gemms, &m = layer.memory, &again = layer.again;
  const Pass a = attention_core(km, flash_km, x, s.flash_attention, s.triton_attention);
  const bool core_again = full || (selective && !op_policy), memory_again = full || op_policy;
  // The head: its GEMM (16-bit: torchtitan keeps the output projection out of Float8Linear),
  // cross-entropy over the (split) vocabulary and the final norm.
  Pass head;
  add_weight_gemm(head, sixteen_bit, x, x.vocab / x.t, x.h);
  const double head_memory = km.memory_s(head_bytes(x));
  // The pipeline runs at its slowest stage's pace: the last, which holds 1/pp of the layers and the
  // whole head (Megatron-LM splits the layers evenly and puts the head after them).
  const double layers = static_cast<double>(model.layers) / s.layout.pp();
  const double micro = static_cast<double>(s.micro_steps());
  StepKernels k;
  k.gemm_s =
      micro * (layers * (w.forward * (full ? 2 : 1) + again.forward + w.backward) + (head.forward + head.backward));
  k.attention_s = micro * layers * (a.forward * (core_again ? 2 : 1) + a.backward);
  k.attention_block_forward_s = a.forward / x.cp;
  k.attention_block_backward_s = a.backward / x.cp;
  k.memory_s = micro * (layers * (m.forward * (memory_again ? 2 : 1) + m.backward) + head_memory);
  if (x.cp > 1 && s.flash_attention && !s.triton_attention) {  // PyTorch's ring around its SDPA kernel
    const Pass ring = ring_attention_bytes(x);
    k.ring_passes_s = micro * layers * km.memory_s(ring.forward * (core_again ? 2 : 1) + ring.backward);
    k.memory_s += k.ring_passes_s;
  }
  if (float8) {
    // --float8-all-gather: ZeRO-3 gathers every micro-step's forward and backward (FSDP reshards after
    // forward), ZeRO-1/2 once a step (torchtitan's FSDP beside pipeline parallelism keeps the weights).
    WeightCasts weights;
    weights.gathered = s.float8_all_gather;
    weights.shard = 1.0 / (s.layout.dp() * s.layout.cp());  // FSDP shards over dp × cp (torchtitan's dp_shard_cp)
    weights.gathers = s.zero_stage == 3 ? 2.0 : 1.0 / micro;
    weights.amax_per_micro = 1.0 / micro;
    const CastBytes c = float8_cast_bytes(x, weights, s.sequence_parallel);
    const double again_bytes = full ? c.forward : op_policy ? c.recast : 0;
    k.float8_cast_s = micro * layers * km.memory_s(c.forward + again_bytes + c.backward + c.gathers);
    k.memory_s += k.float8_cast_s;
  }
  if (s.async_tp && x.t > 1) {  // the fused collectives' GEMMs at their chunks' shape, their local passes
    Dims fused = x;
    if (model.experts > 0) fused.f = 0;
    k.tp_ops = async_tp_ops(km, layer_linear, fused, model.experts > 0);
    k.tp_forward_runs = full ? 2 : 1;
    for (const TensorParallelOp& op : k.tp_ops) {
      const double runs = micro * layers * (op.forward ? k.tp_forward_runs : 1);
      k.gemm_s += runs * (op.chunked_gemm_s - op.gemm_s);
      k.memory_s += runs * op.exposed_pass_s;
      k.gemm_kernels += op.fused ? runs * (x.t - 1) : 0;
    }
  }
  k.gemm_kernels += micro * (layers * (w.kernels_forward * (full ? 2 : 1) + again.kernels_forward + w.kernels_backward +
                                       a.kernels_forward * (core_again ? 2 : 1) + a.kernels_backward) +
                             3);
  return k;
}

}  // namespace shardscope
