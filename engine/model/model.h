// SPDX-License-Identifier: GPL-3.0-or-later
// A transformer language model: parameters and gradients in one flat buffer
// each (named views from ParameterLayout), activations sized for the batch.
// GptModel (causal LM, gpt.cpp) and BertModel (masked LM, bert.cpp) differ
// only in how forward and backward wire the same ops.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "core/buffer.h"
#include "core/memory_ledger.h"
#include "core/tensor.h"
#include "events/event.h"
#include "model/activation_slots.h"
#include "model/activations.h"
#include "model/backend_scratch.h"
#include "model/context_parallel.h"
#include "model/model_config.h"
#include "model/parameter_layout.h"
#include "model/tensor_parallel.h"
#include "ops/backend.h"

namespace shardscope {

class DeviceClock;
class MixtureOfExperts;
struct MoeStats;

// One batch of token ids, row-major (B, T). Pointers stay valid through backward.
struct Batch {
  int B = 0, T = 0;
  const std::int32_t* input_ids = nullptr;       // (B, T)
  const std::int32_t* targets = nullptr;         // (B, T), -1 = not scored; null: no loss
  const std::int32_t* token_type_ids = nullptr;  // (B, T) BERT segments; null = all 0
  const std::int32_t* attention_mask = nullptr;  // (B, T) BERT padding, 1 = real; null = all real
};

class Model;

// Where a rank keeps parameters and gradients when ZeRO shards them. The model
// calls these around every use of a unit (parameter_layout.h); the storage
// binds the unit's views to wherever the unit lives (Model::bind_unit_*).
// Calls come in order: *_needed before a use, *_done after it.
class UnitStorage {
 public:
  virtual ~UnitStorage() = default;
  virtual void gather_parameters(Model& model, int unit) = 0;
  virtual void release_parameters(Model& model, int unit) = 0;
  virtual void gradients_needed(Model& model, int unit) = 0;
  virtual void gradients_done(Model& model, int unit) = 0;
  // The split backward (weight_gradient_split.cpp): B of a micro-batch sets the
  // unit's gradient aside for its W (returned; the next B starts a fresh one),
  // and W hands that one over as gradients_done would: each micro-batch's
  // gradient is rounded (or reduce-scattered) on its own, as the whole backward does.
  virtual float* hold_gradients(Model& model, int unit) = 0;
  virtual void held_gradients_done(Model& model, int unit, float* held) = 0;
};

// Which flat buffers the model allocates itself. ZeRO-2 keeps no full gradient
// buffer and ZeRO-3 no full parameter buffer either: a UnitStorage provides them.
struct ModelBuffers {
  bool parameters = true;
  bool gradients = true;
};

class Model {
 public:
  // The whole model, or one pipeline stage of it (model_config.h's StageLayers: which layers, and
  // whether it embeds and/or runs the head).
  Model(const ModelConfig& config, Backend& backend, MemoryLedger& ledger);
  Model(const ModelConfig& config, const StageLayers& stage, Backend& backend, MemoryLedger& ledger,
        ModelBuffers buffers = {});
  virtual ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelConfig& config() const { return config_; }
  const ParameterLayout& layout() const { return layout_; }
  // What the stage holds: with several chunks (interleaved pipelines) their
  // union, embedding if any chunk embeds, head if any runs the head.
  const StageLayers& stage() const { return held_; }
  // Interleaved pipelines: forward, backward and the stage's input and output
  // act on chunk c of the stage (StageLayers::chunk) until the next call; the
  // runtime selects each action's chunk before running it. Chunk 0 at first.
  void select_chunk(int c) { stage_ = held_.chunk(c); }
  int chunks() const { return held_.chunks; }
  Backend& backend() { return backend_; }

  float* params() { return params_.floats(); }
  float* grads() { return grads_.floats(); }
  const float* params() const { return params_.floats(); }
  const float* grads() const { return grads_.floats(); }
  std::int64_t parameter_count() const { return layout_.total(); }
  Tensor grad(std::string_view name) const;  // view into grads

  // GPT-2 style init, deterministic from the seed: weights N(0, 0.02), residual
  // projections N(0, 0.02 / sqrt(2 L)) (GPT-2 paper, sec. 2.3), biases 0,
  // LayerNorm weights 1.
  void init_weights(std::uint64_t seed);
  // The same initial values for one unit, written to unit_base (the unit's
  // flat range): how sharded storage initialises its shard (ZeRO-3).
  void init_unit(std::uint64_t seed, int unit, float* unit_base) const;
  // Pretrained values (--init-from) for init_weights and init_unit to copy
  // instead of drawing: the whole model's parameters in ParameterLayout(config)
  // order, shared by every rank (each copies its stage's and its shard's part).
  void set_initial_parameters(std::shared_ptr<const std::vector<float>> whole) { initial_ = std::move(whole); }
  void zero_grads();

  // Runs the forward pass and keeps activations for backward. Returns the mean
  // loss over scored positions (0 when batch.targets is null). Throws
  // ConfigError if T exceeds max_seq or an id is outside the vocabulary.
  float forward(const Batch& batch);
  // Accumulates the loss gradient into grads(); needs the last forward's batch
  // (with targets) and activations. By default the loss is the mean over this
  // batch's scored positions; with loss_rows > 0 each scored position weighs
  // 1 / loss_rows instead (data parallelism: the mean over the global batch).
  // The loss gradient is multiplied by loss_scale() (fp16 loss scaling: the
  // gradients come out scaled by it, and the optimizer divides it out).
  void backward(double loss_rows = 0.0);
  void set_loss_scale(float scale) { loss_scale_ = scale; }
  float loss_scale() const { return loss_scale_; }
  int scored_rows() const { return slot().scored_rows; }

  // ---- zero-bubble pipelines: the backward in two phases -----------------------
  // Qi et al. 2024 split a backward into B, the gradient of the stage's input
  // (what the previous stage waits for), and W, the weight gradients (which
  // nobody waits for until the optimizer, so a schedule may run them late, in
  // its bubbles). backward_input runs B: every layer's backward for the input
  // gradient, keeping the output gradient of each of the layer's four linears
  // (qkv, attn.proj, mlp.fc, mlp.proj) in the slot: 9C floats per token and
  // layer, its own `activations` buffer on the ledger, "kept for W". Their
  // inputs are in the slot's activations already, so the slot stays open until W.
  // LayerNorm weights, the embeddings and the head get their gradients in B
  // (the layernorm kernel computes them with the input gradient; the head's
  // output gradient, B T V floats, would cost more to keep than to use).
  // backward_weights runs W: the four linears' weight and bias gradients per
  // layer, last layer first, from the kept tensors, then frees them. B then W
  // adds exactly what backward() adds, the same ops on the same values, so
  // gradients and losses are the same bits. B reports no gradients as ready;
  // W reports all of them (the head's, each layer's, then offset 0), so DDP's
  // buckets start from W. Under checkpointing B also keeps each linear's input
  // (16C floats per token and layer in all), as the recompute set is shared;
  // with a unit storage (16-bit gradients, ZeRO-2/3) B sets each layer's unit
  // gradient aside for its own W, which rounds it to 16 bits (or reduce-scatters
  // it) as the whole backward would (weight_gradient_split.cpp). Under tensor parallelism B runs
  // the layer's collectives and W none. Throws std::logic_error for a W without its B.
  void backward_input(double loss_rows = 0.0);
  void backward_weights();
  bool weights_pending() const { return !slot().deferred_linears.empty(); }

  // ---- pipeline stages ---------------------------------------------------------
  // A stage without the embeddings reads its input from stage_input(), which
  // the caller fills (it receives the previous stage's output there) before
  // forward. A stage without the head takes the gradient of its output in
  // output_gradient(), filled before backward. After forward, stage_output()
  // is this stage's output; after backward, input_gradient() is the gradient
  // of its input. All (B, T, C); under context parallelism T is the whole
  // sequence's and the buffers hold this cp rank's T / cp tokens of it.
  float* stage_input(int B, int T);
  const float* stage_output() const;
  float* output_gradient(int B, int T);
  const float* input_gradient() const { return scratch_.d_res; }

  // Micro-batches in flight (pipeline schedules): each slot holds the
  // activations of one (chunk, micro-batch) from its forward until its
  // backward (model/activation_slots.h). open_slot takes a free slot for the
  // key and selects it, use_slot selects the key's slot for forward and
  // backward, close_slot frees it; each throws naming the key when the
  // schedule asks for a slot it never opened or more than fit. GPipe needs m
  // slots, 1F1B p - s (plan/pipeline_schedule.h, peak_in_flight).
  void set_activation_slots(int count);
  int activation_slots() const { return slot_table_.size(); }
  void open_slot(ActivationKey key) { slot_index_ = slot_table_.open(key); }
  void use_slot(ActivationKey key) { slot_index_ = slot_table_.find(key); }
  void close_slot(ActivationKey key) { slot_table_.close(key); }
  bool holds_slot(ActivationKey key) const { return slot_table_.holds(key); }
  const ActivationSlots& activation_slot_table() const { return slot_table_; }
  // Frees every slot and selects slot 0: a schedule starts with all free, and
  // a forward outside any schedule (evaluation, between steps) runs in slot 0.
  void close_all_slots() {
    slot_table_.close_all();
    slot_index_ = 0;
  }

  // After forward: number of hidden states (L + 1) and a (B, T, C) view of one.
  // GPT: index l < L is the input of layer l, index L the final LayerNorm output.
  // BERT: index 0 is the embedding LayerNorm output, index l + 1 the output of layer l.
  int hidden_state_count() const { return config_.layers + 1; }
  Tensor hidden_state(int index) const;
  const Activations& activations() const { return slot().acts; }

  // Activation checkpointing per layer: forward keeps only each layer's input,
  // backward recomputes the layer's activations just before its backward.
  // Results are identical; activations shrink, compute grows by one forward.
  void set_checkpointing(bool on) { checkpointing_ = on; }
  bool checkpointing() const { return checkpointing_; }

  // Sharded parameters and gradients (ZeRO-2/3); null: the model's own buffers.
  void set_unit_storage(UnitStorage* storage) { storage_ = storage; }
  void bind_unit_parameters(int unit, float* unit_base) { w_.bind_unit(layout_, *layout_.find_unit(unit), unit_base); }
  void bind_unit_gradients(int unit, float* unit_base) { dw_.bind_unit(layout_, *layout_.find_unit(unit), unit_base); }

  // Called during backward each time the gradients of a further tail of the
  // flat layout are final: every gradient at offset >= frontier is done (DDP
  // starts a bucket's all-reduce from this). The last call has frontier 0.
  void set_gradient_ready_callback(std::function<void(std::int64_t frontier)> callback) {
    on_gradients_ready_ = std::move(callback);
  }
  // Called before every layer's forward and backward, and between a layer's
  // heaviest ops (attention, the MLP) and before the head: where a run stops
  // mid-step (Ctrl-C), the callback throwing. Null: no calls.
  void set_layer_boundary_callback(std::function<void()> callback) { on_layer_boundary_ = std::move(callback); }

  // Per-layer compute spans (forward, backward, recompute) go to `sink`, stamped
  // with `base`'s rank, stage, step and micro-batch. Null sink: no events.
  // `clock`: the rank's (clock/device_clock.h), whose stream times the spans.
  void set_event_sink(EventSink* sink, DeviceClock* clock) {
    sink_ = sink;
    clock_ = clock;
  }
  void set_event_context(const Event& base) { event_base_ = base; }

  // Tensor parallelism (model/tensor_parallel.h): the group this rank's slice
  // (stage().tp_rank of stage().tp_size) combines its partial results over.
  // Needed before forward when tp_size > 1.
  void set_tensor_parallel_group(TensorParallelGroup* group) { tp_group_ = group; }
  // Context parallelism (model/context_parallel.h): forward takes the whole
  // (B, T) batch and runs this cp rank's T / cp tokens of every sequence.
  void set_context_parallel_group(ContextParallelGroup* group) { cp_group_ = group; }
  // The cp ranks sharing each sequence (1 without context parallelism): a stage's
  // input and output gradient hold T / this many tokens of every sequence.
  int context_parallel_size() const { return cp_size(); }

  // Mixture of experts (model/mixture_of_experts.h): the MoE layers' routing,
  // and its figures summed over the forwards since reset_moe_stats (null: a dense model).
  const MixtureOfExperts* mixture_of_experts() const { return moe_.get(); }
  MixtureOfExperts* mixture_of_experts() { return moe_.get(); }  // expert parallelism sets its group here
  const MoeStats* moe_stats() const;
  void reset_moe_stats();

 protected:
  // The step and micro-batch now running (set_event_context): what a layer's collectives are tagged with.
  const Event& event_context() const { return event_base_; }
  // A place a run may stop mid-layer (set_layer_boundary_callback).
  void stop_point() const {
    if (on_layer_boundary_) on_layer_boundary_();
  }

  virtual void forward_impl(const Batch& batch) = 0;
  virtual void backward_impl(const Batch& batch, float dloss_per_row) = 0;
  virtual void layer_forward(int l, const float* x, const Batch& batch) = 0;

  // One micro-batch's forward state.
  struct Slot {
    Buffer buffer;  // activations
    Activations acts;
    bool checkpointing = false;  // the mode `buffer` was carved for
    Batch batch;
    int scored_rows = 0;
    bool have_forward = false;
    std::vector<std::int32_t> type_ids;  // BERT segments of the batch (0 when not given)
    std::vector<std::int32_t> cp_tokens;  // context parallelism: this rank's tokens (context_parallel_batch)
    Buffer device_ints;  // device backends: ids, targets, segments and padding mask, uploaded
    Buffer cp_device_mask;  // device backends, context parallelism: the whole batch's padding mask (B, T cp)
    // Between backward_input and backward_weights: the linears whose weight
    // gradients W still owes, in B's order, and their kept output gradients.
    struct DeferredLinear {
      int layer;
      float* d_weight;
      float* d_bias;
      const float* d_out;  // (rows, out_f) in kept_output_gradients
      const float* in;     // (rows, in_f) in the slot's activations
      const float* weight;
      int rows, in_f, out_f;
    };
    std::vector<DeferredLinear> deferred_linears;
    Buffer kept_output_gradients;  // (layers, B, T, 9C)
    std::int64_t kept_floats = 0;  // used of kept_output_gradients
    std::vector<std::pair<int, float*>> held_gradients;  // (layer, its unit gradient B set aside for W)
  };
  int slot_index() const { return slot_index_; }  // the activation slot selected now
  Slot& slot() { return slots_[static_cast<std::size_t>(slot_index_)]; }
  const Slot& slot() const { return slots_[static_cast<std::size_t>(slot_index_)]; }
  Activations& acts() { return slot().acts; }
  const Activations& acts() const { return slot().acts; }
  // Activations of layer l: its own set, or the shared one under checkpointing.
  LayerActivations& layer_acts(int l) {
    return acts().layers[checkpointing_ ? 0 : static_cast<std::size_t>(l - stage_.first_layer)];
  }
  const float* layer_output(int l) const;  // (B, T, C) output of layer l
  const float* layer_input(int l) const;   // (B, T, C) input of layer l
  // Forward of every layer in order, keeping what backward needs.
  void layers_forward(const Batch& batch);
  // Backward of every layer of the stage in reverse, d_res carrying the
  // residual gradient down; reports each layer's gradients as final.
  void layers_backward(const Batch& batch);
  // The forward's batch (its padding mask: a fused attention backward recomputes P).
  virtual void layer_backward(int l, const float* x, const Batch& batch) = 0;
  // Backend::linear_backward for one of layer l's linears; during
  // backward_input only d_in, keeping d_out for backward_weights.
  void layer_linear_backward(int l, float* d_in, float* d_weight, float* d_bias, const float* d_out, const float* in,
                             const float* weight, int rows, int in_f, int out_f, bool accumulate = false) {
    if (!deferring_weights_)
      backend_.linear_backward(d_in, d_weight, d_bias, d_out, in, weight, rows, in_f, out_f, accumulate);
    else
      defer_linear_weights(l, d_in, d_weight, d_bias, d_out, in, weight, rows, in_f, out_f, accumulate);
  }
  // Makes layer l's activations available for its backward (recompute under checkpointing).
  void prepare_layer_backward(int l, const Batch& batch);
  void gradients_ready(std::int64_t frontier) {
    if (on_gradients_ready_ && !deferring_weights_) on_gradients_ready_(frontier);
  }
  // Unit storage calls (no-ops without a storage, or for units this stage lacks).
  int head_unit() const { return config_.layers + 1; }
  void gather_parameters(int unit) {
    if (storage_ != nullptr && layout_.find_unit(unit) != nullptr) storage_->gather_parameters(*this, unit);
  }
  void release_parameters(int unit) {
    if (storage_ != nullptr && layout_.find_unit(unit) != nullptr) storage_->release_parameters(*this, unit);
  }
  void gradients_needed(int unit) {
    if (storage_ != nullptr && layout_.find_unit(unit) != nullptr) storage_->gradients_needed(*this, unit);
  }
  void gradients_done(int unit) {
    if (storage_ != nullptr && layout_.find_unit(unit) != nullptr) storage_->gradients_done(*this, unit);
  }
  float* hold_gradients(int unit) {
    return storage_ != nullptr && layout_.find_unit(unit) != nullptr ? storage_->hold_gradients(*this, unit) : nullptr;
  }
  // ---- tensor parallelism (tensor_parallel.cpp); with tp_size 1 each is the plain op ----
  int tp_size() const { return stage_.tp_size; }
  // g after a row-parallel linear: out (rows, out_f) = in (rows, in_f, this
  // rank's input columns) @ weight^T, summed over the group, then + bias once.
  void row_parallel_forward(float* out, const float* in, const float* weight, const float* bias, int rows, int in_f,
                            int out_f, int layer);
  // f before a column-parallel linear, backward: the linear's backward, then
  // the input gradient d_in (rows, in_f) summed over the group. `accumulate`:
  // d_in += it (a residual's gradient already there), the partial sum made in
  // `partial` (rows, in_f) first, which tensor parallelism then needs.
  void column_parallel_backward(float* d_in, float* d_weight, float* d_bias, const float* d_out, const float* in,
                                const float* weight, int rows, int in_f, int out_f, int layer, bool accumulate = false,
                                float* partial = nullptr);
  // ---- sequence parallelism (sequence_parallel.cpp): with it off, each is the plain op ----
  bool sequence_parallel() const { return stage_.sequence_parallel && stage_.tp_size > 1; }
  // Rows (tokens of the micro-batch) this rank holds in a LayerNorm region: rows / tp under SP.
  int sequence_rows(int rows) const { return sequence_parallel() ? rows / stage_.tp_size : rows; }
  // full (B, T, C) := every rank's shard (B, T/t, C), token block r from tp rank r.
  void sequence_all_gather(float* full, const float* shard, int rows, int C, int layer);
  // shard (B, T/t, C) := this rank's token block of the sum over the group of full (B, T, C).
  void sequence_reduce_scatter(float* shard, const float* full, int rows, int C, int layer);
  // A LayerNorm on this rank's rows of x into out; under SP out is then all-gathered to (B*T, C).
  void sequence_layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* weight,
                                  const float* bias, int rows, int C, int layer);
  // The LayerNorm's backward on this rank's rows; under SP its weight and bias gradients, sums over
  // this rank's tokens only, are summed over the group (Megatron's layernorm all-reduce).
  void sequence_layernorm_backward(float* d_in, float* d_weight, float* d_bias, const float* d_out, const float* in,
                                   const float* weight, const float* mean, const float* rstd, int rows, int C,
                                   bool accumulate);
  // The whole (B*T, C) gradient of a region's tokens: d (this rank's rows) all-gathered under SP, else d.
  const float* sequence_gathered(const float* d, int rows, int C, int layer);
  // The sequence length of the micro-batch running now (the token blocks' size is T / tp).
  int sequence_length_ = 0;
  // Scratch in the backend's memory (model/backend_scratch.h): SP's token blocks, BERT's head gradient under
  // SP, the vocabulary-parallel loss's per-row maxima and sums.
  BackendScratch sequence_full_, sequence_chunks_, sequence_shard_, sequence_gathered_, sequence_head_, tp_loss_;
  float* fit(BackendScratch& scratch, std::int64_t floats) { return scratch.fit(backend_, ledger_, floats); }
  // ---- context parallelism (context_parallel.cpp): with cp 1, the backend's attention ----
  int cp_size() const { return cp_group_ != nullptr ? cp_group_->size() : 1; }
  // The position in its sequence of local token t of a (B, T) micro-batch (T: this rank's tokens).
  int global_position(int t, int T) const {
    return cp_size() == 1 ? t : context_parallel_position(t, T, cp_group_->rank(), cp_size(), cp_group_->zigzag());
  }
  // This rank's tokens of every sequence of `batch` (ids, targets, segments, padding copied into the slot).
  Batch context_parallel_batch(const Batch& batch);
  // The (vocabulary-parallel) embedding of this rank's tokens at their global positions, and its
  // backward: host loops over this tp rank's token rows [first, first + owned).
  void context_parallel_embedding_forward(float* rows, const Batch& batch, std::int64_t first, std::int64_t owned);
  void context_parallel_embedding_backward(const float* d_out, const Batch& batch, std::int64_t first,
                                           std::int64_t owned);
  // Whether a query at `query_position` attends to the key at `key_position` of sequence b
  // (GPT: causal; BERT: not padding). T: this rank's tokens per sequence.
  float* context_parallel_positions(int T, bool gather_gradients);  // (T, C) in cp_positions_
  // Attention of this rank's queries against every rank's keys and values
  // (GPT causal, BERT by the padding mask), passed round the ring under cp;
  // probs keeps each row's log-sum-exp (B, H, T). With cp 1 the backend's causal op.
  void attention_forward(float* out, float* probs, const float* qkv, int B, int T, int C, int H, int layer);
  void attention_backward(float* d_qkv, float* scratch, const float* d_out, const float* qkv, const float* out,
                          const float* probs, int B, int T, int C, int H, int layer);
  // The ring's blocks in flight: KV to send and KV received (forward); in
  // backward also their dK, dV accumulators, sent and received. On the ledger.
  Buffer cp_blocks_;
  BackendScratch cp_positions_;  // the position rows of this rank's tokens (T, C), gathered for the embedding
  RingAttentionBlock ring_block(int B, int T, int C, int H, int owner) const;
  float* cp_block_floats(std::int64_t floats);  // cp_blocks_ at least this large
  // The (vocabulary-parallel) token + position embedding into out (B*T, C), and its backward.
  void token_embedding_forward(float* out, const Batch& batch);
  void token_embedding_backward(const float* d_out, const Batch& batch);
  // The mean loss over scored rows of the head's logits (this rank's
  // vocabulary slice under tensor parallelism), and d_logits of it.
  float cross_entropy_forward(const Batch& batch);
  void cross_entropy_backward(const Batch& batch, float dloss_per_row);

  // Emits a compute span for layer `layer` that started at `start_ns`.
  void emit_span(ComputeKind kind, int layer, std::int64_t start_ns);
  std::int64_t now_ns() const;

  // The MoE layers' MLPs (null for a dense model); recomputing_: a checkpointed
  // layer's second forward, whose routing is not counted again.
  std::unique_ptr<MixtureOfExperts> moe_;
  bool recomputing_ = false;
  float moe_aux_weight_ = 0.0f;  // this micro-batch's weight in the objective (MixtureOfExperts::backward)

  ModelConfig config_;
  StageLayers held_;   // every chunk of the stage
  StageLayers stage_;  // the chunk running now (select_chunk): what forward and backward use
  ParameterLayout layout_;
  Backend& backend_;
  MemoryLedger& ledger_;
  Buffer params_;   // parameters
  Buffer grads_;    // gradients
  Buffer scratch_buffer_;  // workspace for backward, shared by the slots
  WeightViews w_;   // views into params_
  WeightViews dw_;  // the same views into grads_
  BackwardScratch scratch_;

 private:
  void ensure_activations(int B, int T);
  // How the backend runs this model's attention: what probs and d_probs hold.
  AttentionKernel attention_kernel() const { return backend_.attention_kernel(config_.channels / config_.heads); }
  void ensure_scratch(int B, int T);
  void check_batch(const Batch& batch) const;
  void defer_linear_weights(int l, float* d_in, float* d_weight, float* d_bias, const float* d_out, const float* in,
                            const float* weight, int rows, int in_f, int out_f, bool accumulate);
  void check_weight_split(const char* phase) const;

  std::vector<Slot> slots_;  // [slot] the activations; slot_table_ says which key holds which
  ActivationSlots slot_table_;
  int slot_index_ = 0;
  int scratch_B_ = 0, scratch_T_ = 0;
  bool checkpointing_ = false;
  bool deferring_weights_ = false;  // inside backward_input
  float loss_scale_ = 1.0f;
  UnitStorage* storage_ = nullptr;
  std::function<void(std::int64_t)> on_gradients_ready_;
  std::function<void()> on_layer_boundary_;
  EventSink* sink_ = nullptr;
  DeviceClock* clock_ = nullptr;
  Event event_base_;
  std::shared_ptr<const std::vector<float>> initial_;  // set_initial_parameters
  TensorParallelGroup* tp_group_ = nullptr;
  ContextParallelGroup* cp_group_ = nullptr;
};

std::unique_ptr<Model> make_model(const ModelConfig& config, Backend& backend, MemoryLedger& ledger);
std::unique_ptr<Model> make_model(const ModelConfig& config, const StageLayers& stage, Backend& backend,
                                  MemoryLedger& ledger, ModelBuffers buffers = {});

}  // namespace shardscope
