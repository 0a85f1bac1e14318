// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "clock/device_clock.h"
#include "core/error.h"
#include "core/rng.h"
#include "model/bert.h"
#include "model/gpt.h"
#include "model/mixture_of_experts.h"

namespace shardscope {

namespace {
// FNV-1a: a name hash that is the same with every compiler and library (std::hash is not).
std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : text) h = (h ^ ch) * 0x100000001b3ull;
  return h;
}
}  // namespace

Model::Model(const ModelConfig& config, Backend& backend, MemoryLedger& ledger)
    : Model(config, whole_model_stage(config), backend, ledger) {}

Model::Model(const ModelConfig& config, const StageLayers& stage, Backend& backend, MemoryLedger& ledger,
             ModelBuffers buffers)
    : config_((validate_model_config(config), config)),
      held_(stage),
      stage_(stage.chunk(0)),
      layout_(config, stage),
      backend_(backend),
      ledger_(ledger),
      params_(buffers.parameters ? Buffer(ledger, MemoryCategory::parameters, layout_.total() * 4) : Buffer()),
      grads_(buffers.gradients ? Buffer(ledger, MemoryCategory::gradients, layout_.total() * 4) : Buffer()),
      w_(WeightViews::bind(layout_, config_, params_.floats())),
      dw_(WeightViews::bind(layout_, config_, grads_.floats())),
      slots_(1) {
  if (config_.experts > 0) moe_ = std::make_unique<MixtureOfExperts>(config_, backend_, ledger_);
}

Model::~Model() = default;

const MoeStats* Model::moe_stats() const {
  return moe_ ? &moe_->stats() : nullptr;
}

void Model::reset_moe_stats() {
  if (moe_) moe_->reset_stats();
}

Tensor Model::grad(std::string_view name) const {
  if (grads_.empty())
    throw std::logic_error("Model::grad: the gradients live in a unit storage (ZeRO-2/3 or 16-bit), not in the model");
  const auto& e = layout_.find(name);
  return Tensor{grads_.floats() + e.offset, DType::f32, e.shape};
}

void Model::init_weights(std::uint64_t seed) {
  if (params_.empty()) throw std::logic_error("init_weights: the parameters are sharded; use init_unit");
  std::vector<float> host;  // initialised on the host, then copied into the backend's memory
  for (const auto& unit : layout_.units()) {
    host.assign(static_cast<std::size_t>(unit.numel()), 0.0f);
    init_unit(seed, unit.id, host.data());
    backend_.upload(params_.floats() + unit.begin, host.data(), unit.numel() * 4);
  }
}

void Model::init_unit(std::uint64_t seed, int unit, float* unit_base) const {
  const float residual_std = 0.02f / std::sqrt(2.0f * static_cast<float>(config_.layers));
  const ParameterUnit& u = *layout_.find_unit(unit);
  const std::optional<ParameterLayout> whole = initial_ ? std::optional<ParameterLayout>(config_) : std::nullopt;
  // Tensor parallelism: a rank draws the whole tensor and keeps its slice, so
  // tp ranks together start as the one whole model does; expert parallelism
  // keeps the block of the rank's experts.
  const bool sliced = stage_.tp_size > 1 || stage_.expert_ranks > 1;
  const auto keep = [&](const ParameterEntry& e, const float* from, float* to) {
    if (e.expert)
      std::copy(from + stage_.expert_rank * e.numel, from + (stage_.expert_rank + 1) * e.numel, to);
    else
      take_tensor_slice(e, stage_.tp_rank, stage_.tp_size, from, to);
  };
  std::vector<float> whole_tensor;
  for (const auto& e : layout_.entries()) {
    if (e.unit != unit) continue;
    float* w = unit_base + (e.offset - u.begin);
    if (whole) {  // pretrained: the same parameter of the whole model (a stage's tied copy too)
      const float* from = initial_->data() + whole->find(e.name).offset;
      keep(e, from, w);
      continue;
    }
    const std::int64_t n = e.full_shape.numel();
    if (sliced) whole_tensor.assign(static_cast<std::size_t>(n), 0.0f);
    float* out = sliced ? whole_tensor.data() : w;
    // One stream per parameter name: every pipeline stage (and a tied copy)
    // initialises a parameter exactly as the whole model does.
    Rng rng(mix_seed(seed, fnv1a(e.name)));
    const bool is_ln = e.name.find("ln") != std::string::npos;
    const bool is_bias = e.name.ends_with("bias");
    if (is_ln && e.name.ends_with("weight")) {
      for (std::int64_t i = 0; i < n; ++i) out[i] = 1.0f;
    } else if (is_bias || is_ln) {
      for (std::int64_t i = 0; i < n; ++i) out[i] = 0.0f;
    } else {
      const bool residual = e.name.ends_with("attn.proj.weight") || e.name.ends_with("mlp.proj.weight") ||
                            e.name.ends_with("mlp.experts.proj.weight");
      const float std = residual ? residual_std : 0.02f;
      for (std::int64_t i = 0; i < n; ++i) out[i] = rng.normal(0.0f, std);
    }
    if (sliced) keep(e, whole_tensor.data(), w);
  }
}

void Model::zero_grads() {
  if (!grads_.empty()) backend_.fill(grads_.floats(), 0.0f, layout_.total());
}

void Model::ensure_activations(int B, int T) {
  Slot& s = slot();
  if (s.acts.B != B || s.acts.T != T || s.checkpointing != checkpointing_ || s.buffer.empty()) {
    s.buffer = Buffer();  // release first: the ledger peak must not count both
    s.buffer = Buffer(ledger_, MemoryCategory::activations,
                      Activations::total_floats(config_, B, T, checkpointing_, held_, attention_kernel()) * 4);
    s.checkpointing = checkpointing_;
    s.acts.bind(config_, B, T, checkpointing_, held_, s.buffer.floats(),
                attention_kernel());  // a slot serves any chunk
  }
  ensure_scratch(B, T);
}

void Model::ensure_scratch(int B, int T) {
  if (scratch_B_ == B && scratch_T_ == T && !scratch_buffer_.empty()) return;
  scratch_buffer_ = Buffer();
  scratch_buffer_ =
      Buffer(ledger_, MemoryCategory::workspace,
             BackwardScratch::total_floats(config_, B, T, held_.head, attention_kernel(), held_.tp_size) * 4);
  scratch_.bind(config_, B, T, held_.head, scratch_buffer_.floats(), attention_kernel(), held_.tp_size);
  scratch_B_ = B;
  scratch_T_ = T;
}

void Model::set_activation_slots(int count) {
  if (count < 1) throw std::invalid_argument("activation slots must be at least 1");
  slot_table_.close_all();  // a new schedule: nothing held
  slot_table_.resize(count);
  slots_.resize(static_cast<std::size_t>(count));
  if (moe_) moe_->set_slots(count);  // each micro-batch in flight keeps its routing too
  slot_index_ = std::min(slot_index_, count - 1);
}

float* Model::stage_input(int B, int T) {
  ensure_activations(B, T / cp_size());
  return acts().stage_input;
}

const float* Model::stage_output() const { return layer_output(stage_.end_layer - 1); }

float* Model::output_gradient(int B, int T) {
  ensure_scratch(B, T / cp_size());
  return scratch_.d_res;
}

void Model::check_batch(const Batch& b) const {
  if (b.B <= 0 || b.T <= 0) throw ConfigError("batch: B and T must be positive");
  if (b.T > config_.max_seq)
    throw ConfigError("sequence length " + std::to_string(b.T) + " exceeds the maximum of model '" + config_.name +
                      "' (max_seq " + std::to_string(config_.max_seq) + ")");
  const std::int64_t n = static_cast<std::int64_t>(b.B) * b.T;
  for (std::int64_t i = 0; i < n; ++i) {
    if (b.input_ids[i] < 0 || b.input_ids[i] >= config_.vocab)
      throw ConfigError("token id " + std::to_string(b.input_ids[i]) + " at position " + std::to_string(i) +
                        " is outside the vocabulary of model '" + config_.name + "' (" +
                        std::to_string(config_.vocab) + ")");
    if (b.targets != nullptr && b.targets[i] >= config_.vocab)
      throw ConfigError("target id " + std::to_string(b.targets[i]) + " at position " + std::to_string(i) +
                        " is outside the vocabulary");
    if (b.token_type_ids != nullptr && (b.token_type_ids[i] < 0 || b.token_type_ids[i] >= config_.type_vocab))
      throw ConfigError("token type " + std::to_string(b.token_type_ids[i]) + " at position " + std::to_string(i) +
                        " is outside the type vocabulary");
  }
}

float Model::forward(const Batch& whole) {
  check_batch(whole);
  // Context parallelism: this cp rank's T / cp tokens of every sequence from here on.
  const Batch batch = cp_size() > 1 ? context_parallel_batch(whole) : whole;
  ensure_activations(batch.B, batch.T);
  sequence_length_ = batch.T;  // sequence parallelism's token blocks are T / tp
  Slot& s = slot();
  const int rows = batch.B * batch.T;
  s.scored_rows = 0;
  if (batch.targets != nullptr)
    for (int i = 0; i < rows; ++i) s.scored_rows += batch.targets[i] >= 0 ? 1 : 0;
  Batch run = batch;
  if (config_.kind == ModelKind::bert) {  // segments default to 0
    s.type_ids.assign(static_cast<std::size_t>(rows), 0);
    if (batch.token_type_ids != nullptr) s.type_ids.assign(batch.token_type_ids, batch.token_type_ids + rows);
    run.token_type_ids = s.type_ids.data();
  }
  if (!backend_.host_memory()) {
    // The ops read ids, targets, segments and the padding mask from device memory.
    const std::int32_t* host[4] = {run.input_ids, run.targets, run.token_type_ids, run.attention_mask};
    const std::int32_t** field[4] = {&run.input_ids, &run.targets, &run.token_type_ids, &run.attention_mask};
    const std::int64_t bytes = std::int64_t{4} * rows * 4;
    if (s.device_ints.bytes() != bytes) {
      s.device_ints = Buffer();
      s.device_ints = Buffer(ledger_, MemoryCategory::activations, bytes);
    }
    auto* device = static_cast<std::int32_t*>(s.device_ints.data());
    for (int k = 0; k < 4; ++k) {
      if (host[k] == nullptr) continue;
      backend_.upload(device + k * rows, host[k], std::int64_t{4} * rows);
      *field[k] = device + k * rows;
    }
  }
  s.deferred_linears.clear();  // a new micro-batch: W's owed for a stopped step's are void
  forward_impl(run);
  s.batch = run;
  s.have_forward = true;
  if (batch.targets == nullptr || !stage_.head) return 0.0f;  // the loss is the last stage's
  return cross_entropy_forward(run);
}

void Model::backward(double loss_rows) {
  const Slot& s = slot();
  if (!s.have_forward || s.batch.targets == nullptr)
    throw std::logic_error("Model::backward needs a forward pass with targets first");
  // The loss is a mean over scored positions, so each scored row's loss has weight 1/n.
  const double rows = loss_rows > 0.0 ? loss_rows : static_cast<double>(s.scored_rows);
  const float dloss = rows > 0.0 ? static_cast<float>(loss_scale_ / rows) : 0.0f;
  sequence_length_ = s.batch.T;
  moe_aux_weight_ = dloss * static_cast<float>(s.scored_rows);  // this micro-batch's share of the objective
  backward_impl(s.batch, dloss);
}

const float* Model::layer_output(int l) const {
  const auto local = static_cast<std::size_t>(l - stage_.first_layer);
  if (checkpointing_) return acts().layer_outputs[local];
  const auto& a = acts().layers[local];
  return config_.kind == ModelKind::gpt ? a.res_out : a.ln2_out;
}

const float* Model::layer_input(int l) const {
  if (l > stage_.first_layer) return layer_output(l - 1);
  if (!stage_.embedding) return acts().stage_input;
  return config_.kind == ModelKind::gpt ? acts().embed_sum : acts().embed_ln_out;
}

void Model::layers_forward(const Batch& batch) {
  // A layer's output: GPT's res_out holds this tp rank's tokens under sequence parallelism, BERT's ln2_out all.
  const int rows = batch.B * batch.T;
  const std::int64_t n =
      static_cast<std::int64_t>(config_.kind == ModelKind::gpt ? sequence_rows(rows) : rows) * config_.channels;
  for (int l = stage_.first_layer; l < stage_.end_layer; ++l) {
    if (on_layer_boundary_) on_layer_boundary_();
    gather_parameters(1 + l);
    const std::int64_t start = now_ns();
    layer_forward(l, layer_input(l), batch);
    if (checkpointing_) {  // keep only the output; the shared set is reused by the next layer
      const LayerActivations& a = acts().layers[0];
      const float* out = config_.kind == ModelKind::gpt ? a.res_out : a.ln2_out;
      backend_.copy(acts().layer_outputs[static_cast<std::size_t>(l - stage_.first_layer)], out, n * 4);
    }
    emit_span(ComputeKind::forward, l, start);
    release_parameters(1 + l);
  }
}

void Model::layers_backward(const Batch& batch) {
  for (int l = stage_.end_layer - 1; l >= stage_.first_layer; --l) {
    if (on_layer_boundary_) on_layer_boundary_();
    gather_parameters(1 + l);
    gradients_needed(1 + l);
    prepare_layer_backward(l, batch);
    const std::int64_t start = now_ns();
    layer_backward(l, layer_input(l), batch);
    emit_span(ComputeKind::backward, l, start);
    release_parameters(1 + l);
    if (!deferring_weights_)
      gradients_done(1 + l);  // 16-bit/ZeRO storage: round or reduce-scatter it now
    else if (float* held = hold_gradients(1 + l))
      slot().held_gradients.emplace_back(l, held);     // B: kept for this micro-batch's W
    gradients_ready(layout_.find_unit(1 + l)->begin);  // DDP: this layer's bucket may go
  }
}

void Model::prepare_layer_backward(int l, const Batch& batch) {
  if (!checkpointing_) return;
  const std::int64_t start = now_ns();
  recomputing_ = true;
  layer_forward(l, layer_input(l), batch);  // same inputs, same ops: bit-identical activations
  recomputing_ = false;
  emit_span(ComputeKind::recompute, l, start);
}

std::int64_t Model::now_ns() const {
  return clock_ != nullptr ? clock_->now() : 0;
}

void Model::emit_span(ComputeKind kind, int layer, std::int64_t start_ns) {
  if (sink_ == nullptr) return;
  backend_.synchronize();  // a GPU's span ends when its ops finish, not when they are queued
  Event e = event_base_;
  e.kind = EventKind::compute_span;
  e.compute = kind;
  e.layer = layer;
  e.start_ns = start_ns;
  e.end_ns = now_ns();
  sink_->emit(e);
}

Tensor Model::hidden_state(int index) const {
  if (!slot().have_forward || index < 0 || index > config_.layers || !stage_.whole_model(config_))
    throw std::out_of_range("hidden state " + std::to_string(index) + " is not available (0.." +
                            std::to_string(config_.layers) + ", after a forward pass of the whole model)");
  const auto& a = acts();
  float* data = nullptr;
  if (config_.kind == ModelKind::gpt) {
    data = index == config_.layers ? a.final_ln_out : const_cast<float*>(layer_input(index));
  } else {
    data = const_cast<float*>(index == 0 ? layer_input(0) : layer_output(index - 1));
  }
  return Tensor{data, DType::f32, Shape{a.B, a.T, config_.channels}};
}

std::unique_ptr<Model> make_model(const ModelConfig& config, Backend& backend, MemoryLedger& ledger) {
  return make_model(config, whole_model_stage(config), backend, ledger);
}

std::unique_ptr<Model> make_model(const ModelConfig& config, const StageLayers& stage, Backend& backend,
                                  MemoryLedger& ledger, ModelBuffers buffers) {
  if (config.kind == ModelKind::gpt) return std::make_unique<GptModel>(config, stage, backend, ledger, buffers);
  return std::make_unique<BertModel>(config, stage, backend, ledger, buffers);
}

}  // namespace shardscope
