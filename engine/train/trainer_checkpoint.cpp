// SPDX-License-Identifier: GPL-3.0-or-later
// The trainer's checkpoints (train/checkpoint.h): every rank saves the state
// its optimizer updates, in the packed order of its AdamW ranges; a resumed
// run (RunConfig::resume_dir) gives every rank of its own layout its part of
// the reassembled parameters, so the layout may differ from the saved one.
#include <algorithm>
#include <exception>
#include <set>

#include "config/run_schema.h"
#include "core/error.h"
#include "core/half.h"
#include "core/json_text.h"
#include "io/hf_model.h"
#include "model/parameter_layout.h"
#include "train/checkpoint.h"
#include "train/trainer_rank.h"

namespace shardscope {

namespace {

nlohmann::json model_json(const ModelConfig& m) {
  nlohmann::json out = {{"name", m.name},
                        {"kind", std::string(model_kind_name(m.kind))},
                        {"vocab", m.vocab},
                        {"max_seq", m.max_seq},
                        {"channels", m.channels},
                        {"layers", m.layers},
                        {"heads", m.heads},
                        {"type_vocab", m.type_vocab},
                        {"pooler", m.pooler},
                        {"ln_eps", m.ln_eps},
                        {"gelu", static_cast<int>(m.gelu)}};
  // A mixture of experts: what routes its tokens (a dense model's manifest has none of these keys).
  if (m.experts > 0)
    out["mixture_of_experts"] = {{"experts", m.experts},
                                 {"top_k", m.top_k},
                                 {"capacity_factor", m.capacity_factor},
                                 {"moe_every", m.moe_every},
                                 {"aux_loss_coef", m.aux_loss_coef}};
  return out;
}

std::vector<std::pair<std::string, std::vector<std::int64_t>>> parameter_shapes(const ModelConfig& model) {
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> out;
  const ParameterLayout layout(model);
  for (const ParameterEntry& e : layout.entries()) {
    std::vector<std::int64_t> dims;
    for (int d = 0; d < e.shape.rank; ++d) dims.push_back(e.shape[d]);
    out.emplace_back(e.name, std::move(dims));
  }
  return out;
}

// Where a rank's entry starts in the whole tensor's elements: its expert
// block's first element (expert_rank of the ep blocks), else 0. A MoE model runs at tp 1
// (run_config.cpp refuses tp with experts): with tp, this offset would be a tp slice's.
std::int64_t whole_offset(const ParameterEntry& e, const StageLayers& stage) {
  return e.expert ? std::int64_t{stage.expert_rank} * e.numel : 0;
}

// A stage's flat array of one state (0 master, 1 m, 2 v) from the whole
// parameters: under tensor parallelism, tp rank tp_rank's slice of each;
// under expert parallelism, the rank's block of experts.
std::vector<float> stage_values(const ParameterLayout& layout, const StageLayers& stage, const TrainingCheckpoint& ckpt,
                                int kind) {
  std::vector<float> flat(static_cast<std::size_t>(layout.total()));
  for (const ParameterEntry& e : layout.entries()) {
    const ParameterState& s = ckpt.parameters.at(e.name);
    const std::vector<float>& from = kind == 0 ? s.master : kind == 1 ? s.exp_avg : s.exp_avg_sq;
    take_tensor_slice(e, stage.tp_rank, stage.tp_size, from.data() + whole_offset(e, stage), flat.data() + e.offset);
  }
  return flat;
}

}  // namespace

RankCheckpoint Trainer::rank_checkpoint(const Rank& rk) const {
  RankCheckpoint out;
  out.file = {"rank-" + std::to_string(rk.rank) + ".safetensors", rk.rank, rk.dp_rank, rk.stage, 0, 0, {}};
  if (rk.optimizer == nullptr) return out;  // a naive replica: the master saves for it
  const AdamW& opt = *rk.optimizer;
  const std::int64_t n = opt.state_size();
  const std::vector<float> master = rk.strategy->packed_master(rk);
  const int tp = config_.layout.tp();
  std::vector<float> m(static_cast<std::size_t>(n)), v(static_cast<std::size_t>(n));
  rk.backend->download(m.data(), opt.m(), n * 4);
  rk.backend->download(v.data(), opt.v(), n * 4);
  for (const AdamW::ShardRange& r : opt.ranges()) {
    for (const ParameterEntry& e : rk.model->layout().entries()) {
      const std::int64_t lo = std::max(e.offset, r.flat_begin), hi = std::min(e.offset + e.numel, r.flat_end);
      if (lo >= hi) continue;
      const std::int64_t at_whole = whole_offset(e, rk.model->stage()) - e.offset;
      out.file.slices.push_back({e.name, lo + at_whole, hi + at_whole, {e.split, e.split_parts, rk.tp_rank, tp}});
      const auto at = static_cast<std::ptrdiff_t>(r.packed_begin + (lo - r.flat_begin)), len = hi - lo;
      out.master.insert(out.master.end(), master.begin() + at, master.begin() + at + len);
      out.exp_avg.insert(out.exp_avg.end(), m.begin() + at, m.begin() + at + len);
      out.exp_avg_sq.insert(out.exp_avg_sq.end(), v.begin() + at, v.begin() + at + len);
    }
  }
  return out;
}

CheckpointManifest Trainer::checkpoint_manifest() const {
  CheckpointManifest m;
  m.step = steps_done_;
  const ModelConfig& model = ranks_[0]->model->config();
  m.model = model_json(model);
  m.parameters = parameter_shapes(model);
  for (const char* key : {"dp", "pp", "tp", "cp", "cp_split", "ranks", "zero", "dp_mode", "precision", "accum", "ep",
                          "micro_batches", "schedule", "batch", "seq", "loss_scaler"})
    m.layout[key] = run_field(key).get(config_);
  m.lr_schedule = {{"lr", schedule_.lr},       {"min_lr", schedule_.min_lr}, {"warmup", schedule_.warmup},
                   {"steps", schedule_.steps}, {"next_step", steps_done_},   {"next_lr", schedule_.at(steps_done_)}};
  for (const auto& rank : ranks_)
    if (rank->optimizer != nullptr) m.adamw_steps = rank->optimizer->steps_taken();
  m.loss_scaler = ranks_[0]->scaler->state();
  m.seed = config_.seed;
  m.data_next_step = steps_done_;
  m.hugging_face = hf_layout_missing_reason(model);
  m.data = {{"source", dataset_->path()},
            {"train_tokens", dataset_->tokens(Split::train)},
            {"tokens_fnv1a64", data_fingerprint()}};
  return m;
}

// FNV-1a of every token the run reads (training and validation), in 16 hex
// digits: made once, since the text does not change during a run.
const std::string& Trainer::data_fingerprint() const {
  if (data_fingerprint_.empty()) {
    const std::string_view tokens = dataset_->stored_tokens();
    data_fingerprint_ = hex64(fnv1a64(tokens.data(), tokens.size()));
  }
  return data_fingerprint_;
}

namespace {

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string out;
  for (const std::int64_t d : shape) out += (out.empty() ? "[" : ", ") + std::to_string(d);
  return out + "]";
}

// The first field where two model configs differ, as "field 'model.KEY' is
// X in the checkpoint, Y here" (objects compared key by key, in key order).
std::string model_difference(const nlohmann::json& saved, const nlohmann::json& ours, const std::string& field) {
  if (saved.is_object() && ours.is_object()) {
    std::set<std::string> keys;
    for (const auto& [key, value] : saved.items()) keys.insert(key);
    for (const auto& [key, value] : ours.items()) keys.insert(key);
    for (const std::string& key : keys) {
      const auto a = saved.find(key), b = ours.find(key);
      if (a == saved.end() || b == ours.end() || *a != *b)
        return model_difference(a == saved.end() ? nlohmann::json() : *a, b == ours.end() ? nlohmann::json() : *b,
                                field + "." + key);
    }
  }
  const auto text = [](const nlohmann::json& v) {
    return v.is_null() ? std::string("absent") : bounded_excerpt(v.dump(), 80);
  };
  return "field '" + bounded_excerpt(field) + "' is " + text(saved) + " in the checkpoint, " + text(ours) + " here";
}

// The checkpoint's model is the run's: its config (the shape decides, not the
// name: an --init-from model is named after its directory, which may be
// spelled another way on resume), then every parameter's name and shape, so
// that the reader allocates only what this model holds.
void check_checkpoint_model(const std::string& manifest_path, const CheckpointManifest& saved, const ModelConfig& model,
                            const std::string& flag) {
  nlohmann::json saved_shape = saved.model, shape = model_json(model);
  if (saved_shape.is_object()) saved_shape.erase("name");
  shape.erase("name");
  const std::string hint =
      "; resume with the model it was saved with (--model, or --init-from for a run that began from a Hugging "
      "Face directory)";
  if (saved_shape != shape)
    throw ConfigError("--resume " + manifest_path + ": the checkpoint's model is not " + flag +
                      "'s: " + model_difference(saved_shape, shape, "model") + hint);
  const auto expected = parameter_shapes(model);
  for (std::size_t i = 0; i < std::max(expected.size(), saved.parameters.size()); ++i) {
    const std::string field = "--resume " + manifest_path + ": field 'parameters[" + std::to_string(i) + "]': ";
    if (i >= saved.parameters.size())
      throw ConfigError(field + "missing: " + flag + " has " + std::to_string(expected.size()) + " parameters" + hint);
    const auto& [name, dims] = saved.parameters[i];
    if (i >= expected.size())
      throw ConfigError(field + "'" + bounded_excerpt(name) + "' is past " + flag + "'s " +
                        std::to_string(expected.size()) + " parameters" + hint);
    if (name != expected[i].first || dims != expected[i].second)
      throw ConfigError(field + "'" + bounded_excerpt(name) + "' of shape " + bounded_excerpt(shape_text(dims)) +
                        " is not " + flag + "'s '" + expected[i].first + "' of shape " +
                        shape_text(expected[i].second) + hint);
  }
}

// A MoE layer routes each micro-batch on its own, its experts' capacity ceil(c·N·k/E) set by the
// micro-batch's N tokens: a resume whose micro-batches hold other sequences than the saved run's
// (another --dp × --accum × --micro-batches) drops other tokens from there on.
std::string moe_resume_note(const nlohmann::json& saved, int experts, std::int64_t rows) {
  if (experts == 0) return {};
  const auto saved_int = [&saved](const char* key) -> std::int64_t {
    const auto it = saved.find(key);
    if (it == saved.end()) return 0;
    if (it->is_number_integer()) return it->get<std::int64_t>();
    if (it->is_string()) return std::strtoll(it->get<std::string>().c_str(), nullptr, 10);
    return 0;
  };
  const std::int64_t parts =
      saved_int("dp") * saved_int("accum") * std::max<std::int64_t>(1, saved_int("micro_batches"));
  if (parts <= 0 || saved_int("batch") <= 0) return {};  // a manifest without them: nothing to compare
  const std::int64_t saved_rows = saved_int("batch") / parts;
  if (saved_rows == rows) return {};
  return "resumed a mixture of experts with micro-batches of " + std::to_string(rows) + " sequences where the run " +
         "that saved it had " + std::to_string(saved_rows) + " (--dp x --accum x --micro-batches differs): each " +
         "micro-batch sets its experts' capacity, so the tokens dropped from here on differ from an uninterrupted run";
}

}  // namespace

// The checkpoint must be of this run's model and data stream; the layout may differ.
void Trainer::check_checkpoint(const std::string& dir, const CheckpointManifest& saved) const {
  const std::string manifest = dir + "/manifest.json";
  const std::string flag = config_.init_from.empty() ? "--model " + config_.model : "--init-from " + config_.init_from;
  check_checkpoint_model(manifest, saved, run_model_config(config_), flag);
  if (saved.seed != config_.seed)
    throw ConfigError("--resume " + manifest + ": saved with --seed " + std::to_string(saved.seed) +
                      ", this run has --seed " + std::to_string(config_.seed) +
                      " (the data order follows the seed); resume with --seed " + std::to_string(saved.seed));
  const nlohmann::json& data = saved.data;
  const auto tokens = data.is_object() ? data.find("train_tokens") : data.end();
  if (tokens != data.end() && tokens->is_number_integer() &&
      tokens->get<std::int64_t>() != dataset_->tokens(Split::train))
    throw ConfigError("--data: the checkpoint " + dir + " was trained on " +
                      std::to_string(tokens->get<std::int64_t>()) + " training tokens, this run's data has " +
                      std::to_string(dataset_->tokens(Split::train)) +
                      " (another text draws other batches); resume with the --data it was saved with");
  // Same length, other text (an edited corpus, another file): checkpoints saved before the fingerprint have none.
  const auto fingerprint = data.is_object() ? data.find("tokens_fnv1a64") : data.end();
  if (fingerprint != data.end() && fingerprint->is_string() && fingerprint->get<std::string>() != data_fingerprint())
    throw ConfigError("--data: the checkpoint " + dir + " was trained on other text than this run's " +
                      dataset_->path() + " (same " + std::to_string(dataset_->tokens(Split::train)) +
                      " training tokens, token fingerprint " + fingerprint->get<std::string>() + " against " +
                      data_fingerprint() + "); resume with the --data it was saved with");
  if (saved.step >= config_.steps)
    throw ConfigError("--steps " + std::to_string(config_.steps) + ": the checkpoint " + dir + " is already at step " +
                      std::to_string(saved.step) + "; give more --steps");
}

void Trainer::restore_rank(Rank& rk, const TrainingCheckpoint& ckpt) {
  const ParameterLayout& layout = rk.model->layout();
  const StageLayers& stage = rk.model->stage();
  const std::vector<float> master = stage_values(layout, stage, ckpt, 0);
  void* params = rk.unit_storage != nullptr && rk.unit_storage->parameters() != nullptr ? rk.unit_storage->parameters()
                                                                                        : rk.model->params();
  const std::vector<float> values = rk.strategy->stage_parameters(rk, master);  // all, or ZeRO-3's packed chunks
  const auto n = static_cast<std::int64_t>(values.size());
  if (rk.dtype == DType::f32) {
    rk.backend->upload(params, values.data(), n * 4);
  } else {  // the 16-bit parameters are the master weights rounded to nearest even, as after every step
    std::vector<std::uint16_t> narrow(values.size());
    half::narrow(rk.dtype, values.data(), narrow.data(), n);
    rk.backend->upload(params, narrow.data(), n * 2);
  }
  if (rk.optimizer != nullptr) {
    AdamW& opt = *rk.optimizer;
    const std::int64_t size = opt.state_size();
    const auto upload = [&](float* to, const std::vector<float>& flat) {
      rk.backend->upload(to, pack_ranges(opt.ranges(), flat, size).data(), size * 4);
    };
    if (rk.dtype != DType::f32) upload(opt.master(), master);
    upload(opt.m(), stage_values(layout, stage, ckpt, 1));
    upload(opt.v(), stage_values(layout, stage, ckpt, 2));
    opt.set_steps_taken(ckpt.manifest.adamw_steps);
  }
  const nlohmann::json& saved = ckpt.manifest.layout;  // an object (the parser checked), its values unchecked
  const auto saved_as = [&saved](const char* key) {
    const auto it = saved.find(key);
    return it != saved.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (rk.scaler->enabled() && saved_as("precision") == "fp16" &&
      saved_as("loss_scaler") == run_field("loss_scaler").get(config_))
    rk.scaler->restore(ckpt.manifest.loss_scaler);
}

void Trainer::restore_checkpoint(const std::string& path) {
  const std::string dir = find_checkpoint_dir(path);
  CheckpointManifest manifest = read_checkpoint_manifest(dir);
  check_checkpoint(dir, manifest);  // before the reader allocates a parameter at the manifest's shape
  const TrainingCheckpoint ckpt = read_checkpoint(dir, std::move(manifest));
  for (auto& rank : ranks_) restore_rank(*rank, ckpt);
  steps_done_ = ckpt.manifest.step;
  resumed_from_ = ckpt.dir;
  resume_note_ = moe_resume_note(ckpt.manifest.layout, ranks_.empty() ? 0 : ranks_[0]->model->config().experts,
                                 config_.micro_batch_size());
}

}  // namespace shardscope
