// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/hf_model.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "core/input_file.h"
#include "core/json_text.h"
#include "core/output_file.h"
#include "core/rng.h"
#include "io/hf_config.h"
#include "io/safetensors.h"
#include "model/parameter_layout.h"

namespace shardscope {

namespace {

namespace fs = std::filesystem;
using Dims = std::vector<std::int64_t>;

std::int64_t numel(const Dims& d) {
  std::int64_t n = 1;
  for (std::int64_t x : d) n *= x;
  return n;
}

// Appends the tensors of one parameter `ours` of shape (rows, cols) that HF
// stores whole: as it is, or (Conv1D) transposed to (cols, rows).
void add_whole(std::vector<HfTensor>& out, std::string hf, std::string ours, Dims ours_shape, bool conv1d = false) {
  Dims hf_shape = ours_shape;
  if (conv1d) hf_shape = Dims{ours_shape[1], ours_shape[0]};
  out.push_back({std::move(hf), std::move(ours), hf_shape, 0, conv1d});
}

// A Linear (weight + bias) stored whole.
void add_linear(std::vector<HfTensor>& out, const std::string& hf, const std::string& ours, std::int64_t rows,
                std::int64_t cols, bool conv1d = false) {
  add_whole(out, hf + ".weight", ours + ".weight", Dims{rows, cols}, conv1d);
  add_whole(out, hf + ".bias", ours + ".bias", Dims{rows});
}

void add_norm(std::vector<HfTensor>& out, const std::string& hf, const std::string& ours, std::int64_t C) {
  add_whole(out, hf + ".weight", ours + ".weight", Dims{C});
  add_whole(out, hf + ".bias", ours + ".bias", Dims{C});
}

void gpt2_layer(std::vector<HfTensor>& out, const std::string& hf, const std::string& ours, std::int64_t C) {
  add_norm(out, hf + "ln_1", ours + "ln1", C);
  add_linear(out, hf + "attn.c_attn", ours + "attn.qkv", 3 * C, C, true);
  add_linear(out, hf + "attn.c_proj", ours + "attn.proj", C, C, true);
  add_norm(out, hf + "ln_2", ours + "ln2", C);
  add_linear(out, hf + "mlp.c_fc", ours + "mlp.fc", 4 * C, C, true);
  add_linear(out, hf + "mlp.c_proj", ours + "mlp.proj", C, 4 * C, true);
}

// BERT keeps query, key and value apart; ours is one (3C, C) matrix, q k v in rows.
void bert_layer(std::vector<HfTensor>& out, const std::string& hf, const std::string& ours, std::int64_t C) {
  const char* parts[] = {"query", "key", "value"};
  for (std::int64_t i = 0; i < 3; ++i) {
    out.push_back({hf + "attention.self." + parts[i] + ".weight", ours + "attn.qkv.weight", Dims{C, C}, i * C * C});
    out.push_back({hf + "attention.self." + parts[i] + ".bias", ours + "attn.qkv.bias", Dims{C}, i * C});
  }
  add_linear(out, hf + "attention.output.dense", ours + "attn.proj", C, C);
  add_norm(out, hf + "attention.output.LayerNorm", ours + "ln1", C);
  add_linear(out, hf + "intermediate.dense", ours + "mlp.fc", 4 * C, C);
  add_linear(out, hf + "output.dense", ours + "mlp.proj", C, 4 * C);
  add_norm(out, hf + "output.LayerNorm", ours + "ln2", C);
}

std::vector<HfTensor> gpt2_tensors(const ModelConfig& c, const std::string& prefix) {
  const std::int64_t C = c.channels;
  std::vector<HfTensor> out;
  add_whole(out, prefix + "wte.weight", "embed.tokens", Dims{c.vocab, C});
  add_whole(out, prefix + "wpe.weight", "embed.positions", Dims{c.max_seq, C});
  for (int l = 0; l < c.layers; ++l)
    gpt2_layer(out, prefix + "h." + std::to_string(l) + ".", "layer" + std::to_string(l) + ".", C);
  add_norm(out, prefix + "ln_f", "final_ln", C);
  return out;
}

std::vector<HfTensor> bert_tensors(const ModelConfig& c, const std::string& prefix, bool head) {
  const std::int64_t C = c.channels;
  std::vector<HfTensor> out;
  const std::string e = prefix + "embeddings.";
  add_whole(out, e + "word_embeddings.weight", "embed.tokens", Dims{c.vocab, C});
  add_whole(out, e + "position_embeddings.weight", "embed.positions", Dims{c.max_seq, C});
  add_whole(out, e + "token_type_embeddings.weight", "embed.token_types", Dims{c.type_vocab, C});
  add_norm(out, e + "LayerNorm", "embed.ln", C);
  for (int l = 0; l < c.layers; ++l)
    bert_layer(out, prefix + "encoder.layer." + std::to_string(l) + ".", "layer" + std::to_string(l) + ".", C);
  if (head) {
    add_linear(out, "cls.predictions.transform.dense", "mlm.dense", C, C);
    add_norm(out, "cls.predictions.transform.LayerNorm", "mlm.ln", C);
    add_whole(out, "cls.predictions.bias", "mlm.decoder_bias", Dims{c.vocab});
  }
  if (c.pooler) add_linear(out, prefix + "pooler.dense", "pooler.dense", C, C);
  return out;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace

std::vector<HfTensor> hf_tensors(const ModelConfig& config, HfLayout layout) {
  switch (layout) {
    case HfLayout::gpt2_lm_head:
      return gpt2_tensors(config, "transformer.");
    case HfLayout::gpt2_model:
      return gpt2_tensors(config, "");
    case HfLayout::bert_masked_lm:
      return bert_tensors(config, "bert.", true);
    case HfLayout::bert_model:
      return bert_tensors(config, "", false);
  }
  return {};
}

bool hf_ignored_tensor(const std::string& n) {
  return n.ends_with(".attn.bias") || n.ends_with(".attn.masked_bias") || n.ends_with("embeddings.position_ids") ||
         n == "lm_head.weight" || n == "cls.predictions.decoder.weight" || n == "cls.predictions.decoder.bias";
}

namespace {

// Whether the safetensors header at `path` names a tensor ending in `suffix`; false
// where the header cannot be read (read_hf_model_dir then names what is wrong).
// A FIFO or device is refused first: opening a FIFO would wait for a writer forever.
bool header_has_tensor(const std::string& path, const std::string& suffix) {
  require_regular_input({"", path});
  std::ifstream in(path, std::ios::binary);
  unsigned char len[8] = {};
  if (!in.read(reinterpret_cast<char*>(len), 8)) return false;
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  std::error_code ec;
  if (n > (100u << 20) || n > fs::file_size(path, ec)) return false;
  std::string header(n, '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(n))) return false;
  JsonTextError error;  // bounded nesting, as every JSON the user gives (core/json_text.h)
  const std::optional<nlohmann::json> j = parse_json_text(header, error);
  if (!j || !j->is_object()) return false;
  for (auto it = j->begin(); it != j->end(); ++it)
    if (it.key().ends_with(suffix)) return true;
  return false;
}

}  // namespace

namespace {
// Why engine_config() refused a GPT-2 or BERT config, by key (" (n_inner 64, not 4 x n_embd = 128)"),
// so the message points at the line to change; for the Llama family, what it lacks and where it is planned.
std::string what_the_engine_lacks(const HfModelConfig& hf) {
  const bool gpt2 = hf.architecture == HfArchitecture::gpt2;
  if (hf.architecture == HfArchitecture::llama)
    return " (Llama's family: RMSNorm, a SwiGLU MLP, rotary positions; `estimate --model` plans it)";
  if (hf.intermediate != 4 * hf.hidden) {
    // Appended in steps: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string&&.
    std::string why = gpt2 ? " (n_inner " : " (intermediate_size ";
    why += std::to_string(hf.intermediate);
    why += gpt2 ? ", not 4 x n_embd = " : ", not 4 x hidden_size = ";
    why += std::to_string(4 * hf.hidden);
    return why + ")";
  }
  if (!hf.tie_word_embeddings) return " (tie_word_embeddings false)";
  if (gpt2 ? hf.activation != "gelu_new" && hf.activation != "gelu_pytorch_tanh" : hf.activation != "gelu")
    return std::string(gpt2 ? " (activation_function '" : " (hidden_act '") + hf.activation + "')";
  return " (a shape past the engine's limits)";
}
}  // namespace

bool has_hf_tokenizer(const std::string& dir) {
  std::error_code ec;
  for (const char* file : {"tokenizer.json", "vocab.txt", "vocab.json"})
    if (fs::exists(fs::path(dir) / file, ec)) return true;
  return false;
}

ModelConfig read_hf_model_config(const std::string& dir) {
  const std::string path = (fs::path(dir) / "config.json").string();
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw ConfigError(dir +
                      ": not a directory (expected a Hugging Face model directory: config.json, model.safetensors)");
  if (!fs::exists(path, ec)) throw ConfigError(path + ": missing (a Hugging Face model directory has a config.json)");
  const HfModelConfig hf = load_hf_config(path);
  if (!hf.math_not_run.empty())
    throw ConfigError(hf.math_not_run +
                      ": ShardScope cannot run this model exactly (it runs GPT-2 and BERT as "
                      "transformers' defaults compute them); the estimate command still counts its memory");
  std::optional<ModelConfig> config = hf.engine_config();
  if (!config)
    throw ConfigError(path + ": model_type '" + hf.model_type + "'" + what_the_engine_lacks(hf) +
                      " cannot be loaded: ShardScope runs GPT-2 (gelu_new, tied head) and BERT (gelu) with a 4h MLP");
  config->name = dir;
  // BertModel has a pooler, BertForMaskedLM none: the weights say which.
  if (config->kind == ModelKind::bert)
    config->pooler = header_has_tensor((fs::path(dir) / "model.safetensors").string(), "pooler.dense.weight");
  validate_model_config(*config);
  return *config;
}

namespace {

// model.safetensors, or why there is none to read.
std::string safetensors_path(const std::string& dir, ModelKind kind) {
  const fs::path file = fs::path(dir) / "model.safetensors";
  std::error_code ec;
  if (fs::exists(file, ec)) return file.string();
  if (fs::exists(fs::path(dir) / "model.safetensors.index.json", ec))
    throw ConfigError((fs::path(dir) / "model.safetensors.index.json").string() +
                      ": sharded checkpoints are not read; save the model as one file (save_pretrained with "
                      "max_shard_size larger than the model)");
  const std::string loader = kind == ModelKind::gpt ? "AutoModelForCausalLM" : "AutoModelForMaskedLM";
  if (fs::exists(fs::path(dir) / "pytorch_model.bin", ec))
    throw ConfigError((fs::path(dir) / "pytorch_model.bin").string() +
                      ": PyTorch pickles are not read (they can run code); convert the directory to safetensors "
                      "with: python -c \"from transformers import " +
                      loader + "; m = " + loader + ".from_pretrained('" + dir + "'); m.save_pretrained('" + dir +
                      "', safe_serialization=True)\"");
  throw ConfigError(file.string() + ": missing (a Hugging Face model directory needs model.safetensors)");
}

HfLayout detect_layout(const SafetensorsFile& file, ModelKind kind) {
  if (kind == ModelKind::gpt) return file.contains("wte.weight") ? HfLayout::gpt2_model : HfLayout::gpt2_lm_head;
  return file.contains("embeddings.word_embeddings.weight") ? HfLayout::bert_model : HfLayout::bert_masked_lm;
}

// Every tensor of the file must be one the layout names or one it ignores.
void check_keys(const SafetensorsFile& file, const std::vector<HfTensor>& tensors) {
  std::set<std::string> expected;
  for (const auto& t : tensors) expected.insert(t.hf_name);
  for (const auto& [name, entry] : file.entries())
    if (!expected.count(name) && !hf_ignored_tensor(name))
      throw FormatError(file.path() + ": unexpected tensor '" + name + "' (not part of a " +
                        (tensors.front().hf_name.find("wte") != std::string::npos ? "GPT-2" : "BERT") +
                        " model with this config.json)");
  for (const auto& t : tensors)
    if (!file.contains(t.hf_name))
      throw FormatError(file.path() + ": missing tensor '" + t.hf_name + "' (needed for " + t.ours + ")");
}

void copy_tensor(const SafetensorsFile& file, const HfTensor& t, float* dst) {
  const SafetensorsEntry& e = file.entry(t.hf_name);
  if (e.shape != t.hf_shape)
    throw FormatError(file.path() + ": tensor '" + t.hf_name + "' has shape " + shape_text(e.shape) +
                      ", config.json says " + shape_text(t.hf_shape));
  if (e.dtype != "F32" && e.dtype != "F16" && e.dtype != "BF16")
    throw FormatError(file.path() + ": tensor '" + t.hf_name + "' is " + e.dtype +
                      "; weights must be F32, F16 or BF16");
  const std::vector<float> v = file.floats(t.hf_name);
  if (!t.transposed) {
    std::copy(v.begin(), v.end(), dst + t.offset);
    return;
  }
  const std::int64_t in = t.hf_shape[0], out = t.hf_shape[1];  // Conv1D (in, out) -> ours (out, in)
  for (std::int64_t i = 0; i < in; ++i)
    for (std::int64_t o = 0; o < out; ++o) dst[t.offset + o * in + i] = v[static_cast<std::size_t>(i * out + o)];
}

// GPT-2 ties lm_head to wte; a file whose lm_head differs is a model ShardScope cannot run.
void check_tied_head(const SafetensorsFile& file, HfLayout layout) {
  if (layout != HfLayout::gpt2_lm_head || !file.contains("lm_head.weight")) return;
  if (file.entry("lm_head.weight").shape != file.entry("transformer.wte.weight").shape ||
      file.floats("lm_head.weight") != file.floats("transformer.wte.weight"))
    throw FormatError(file.path() +
                      ": tensor 'lm_head.weight' differs from 'transformer.wte.weight'; ShardScope ties "
                      "the output head to the token embedding");
}

// The MLM head a BertModel lacks: dense N(0, 0.02) (fixed seed), LayerNorm 1 and 0, decoder bias 0.
void init_mlm_head(const ModelConfig& config, float* params) {
  const ParameterLayout layout(config);
  Rng rng(0x6d6c6d);  // "mlm"
  const auto& dense = layout.find("mlm.dense.weight");
  for (std::int64_t i = 0; i < dense.numel; ++i) params[dense.offset + i] = rng.normal(0.0f, 0.02f);
  const auto& ln = layout.find("mlm.ln.weight");
  std::fill(params + ln.offset, params + ln.offset + ln.numel, 1.0f);
}

}  // namespace

HfModel read_hf_model_dir(const std::string& dir) {
  HfModel model;
  model.dir = dir;
  model.config = read_hf_model_config(dir);
  const SafetensorsFile file = SafetensorsFile::read(safetensors_path(dir, model.config.kind));
  model.layout = detect_layout(file, model.config.kind);
  const std::vector<HfTensor> tensors = hf_tensors(model.config, model.layout);
  check_keys(file, tensors);
  check_tied_head(file, model.layout);
  model.parameters.assign(static_cast<std::size_t>(ParameterLayout(model.config).total()), 0.0f);
  const ParameterLayout layout(model.config);
  for (const HfTensor& t : tensors) copy_tensor(file, t, model.parameters.data() + layout.find(t.ours).offset);
  if (model.layout == HfLayout::bert_model) {
    init_mlm_head(model.config, model.parameters.data());
    model.notes.push_back(file.path() +
                          " is a BertModel without a masked-LM head: the head (cls.predictions) is "
                          "freshly initialized");
  }
  return model;
}

std::string hf_config_json(const ModelConfig& c) {
  char eps[32];  // the float's shortest decimal, so 1e-5f is written 1e-05, not 9.99999974738e-06
  std::snprintf(eps, sizeof eps, "%.8g", static_cast<double>(c.ln_eps));
  nlohmann::json j;
  if (c.kind == ModelKind::gpt) {
    j = {{"architectures", {"GPT2LMHeadModel"}},
         {"model_type", "gpt2"},
         {"vocab_size", c.vocab},
         {"n_positions", c.max_seq},
         {"n_embd", c.channels},
         {"n_layer", c.layers},
         {"n_head", c.heads},
         {"activation_function", "gelu_new"},
         {"layer_norm_epsilon", std::stod(eps)},
         {"tie_word_embeddings", true}};
  } else {
    j = {{"architectures", {"BertForMaskedLM"}},
         {"model_type", "bert"},
         {"vocab_size", c.vocab},
         {"max_position_embeddings", c.max_seq},
         {"hidden_size", c.channels},
         {"num_hidden_layers", c.layers},
         {"num_attention_heads", c.heads},
         {"intermediate_size", 4 * c.channels},
         {"hidden_act", "gelu"},
         {"type_vocab_size", c.type_vocab},
         {"layer_norm_eps", std::stod(eps)},
         {"tie_word_embeddings", true}};
  }
  return j.dump(2) + "\n";
}

namespace {

// The values of one HF tensor gathered from ShardScope's parameter (inverse of copy_tensor).
std::vector<float> gather_tensor(const HfTensor& t, const float* src) {
  std::vector<float> v(static_cast<std::size_t>(numel(t.hf_shape)));
  if (!t.transposed) {
    std::copy(src + t.offset, src + t.offset + numel(t.hf_shape), v.begin());
    return v;
  }
  const std::int64_t in = t.hf_shape[0], out = t.hf_shape[1];
  for (std::int64_t i = 0; i < in; ++i)
    for (std::int64_t o = 0; o < out; ++o) v[static_cast<std::size_t>(i * out + o)] = src[t.offset + o * in + i];
  return v;
}

void make_directory(const std::string& dir, const std::string& flag) {
  if (::mkdir(dir.c_str(), 0777) == 0 || errno == EEXIST) {
    std::error_code ec;
    if (fs::is_directory(dir, ec)) return;
    throw OutputError((flag.empty() ? "" : flag + " ") + dir + ": exists and is not a directory");
  }
  throw OutputError((flag.empty() ? "" : flag + " ") + dir + ": cannot create the directory (" + std::strerror(errno) +
                    ")");
}

}  // namespace

bool has_hf_layout(const ModelConfig& config) {
  return config.experts == 0;
}

std::string hf_layout_missing_reason(const ModelConfig& config) {
  if (has_hf_layout(config)) return {};
  return "no config.json or model.safetensors: " + config.name +
         " is a mixture of experts, which GPT2LMHeadModel's and BertForMaskedLM's tensor names cannot hold (its "
         "routers and experts are in the rank files, the experts of each MoE layer stacked)";
}

void write_hf_model_dir(const std::string& dir, const ModelConfig& config, const float* parameters,
                        const std::string& flag) {
  if (!has_hf_layout(config))
    throw OutputError((flag.empty() ? "" : flag + " ") + dir + ": " + hf_layout_missing_reason(config));
  make_directory(dir, flag);
  const ParameterLayout layout(config);
  const HfLayout hf = config.kind == ModelKind::gpt ? HfLayout::gpt2_lm_head : HfLayout::bert_masked_lm;
  ModelConfig written = config;
  written.pooler = false;  // BertForMaskedLM has no pooler: transformers would call it unexpected
  const std::vector<HfTensor> tensors = hf_tensors(written, hf);
  std::vector<std::vector<float>> values;
  values.reserve(tensors.size());
  std::vector<SafetensorsTensorOut> out;
  for (const HfTensor& t : tensors) {
    values.push_back(gather_tensor(t, parameters + layout.find(t.ours).offset));
    out.push_back({t.hf_name, "F32", t.hf_shape, values.back().data()});
  }
  write_safetensors({flag, (fs::path(dir) / "model.safetensors").string()}, out, {{"format", "pt"}});
  OutputFile json({flag, (fs::path(dir) / "config.json").string()});
  json.write(hf_config_json(config));
  json.commit();
}

void copy_tokenizer_files(const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (const char* name : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt",
                           "vocab.json", "merges.txt"}) {
    const std::filesystem::path source = std::filesystem::path(from) / name;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(source, ec)) continue;
    std::filesystem::copy_file(source, std::filesystem::path(to) / name,
                               std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) throw OutputError("cannot copy '" + source.string() + "' into '" + to + "': " + ec.message());
    const std::string copied = (std::filesystem::path(to) / name).string();
    const int fd = ::open(copied.c_str(), O_RDONLY);  // on disk before the directory that holds it is renamed
    const bool synced = fd >= 0 && ::fsync(fd) == 0;
    if (fd >= 0) ::close(fd);
    if (!synced) throw OutputError("cannot write '" + copied + "' to disk: " + std::strerror(errno));
  }
}

}  // namespace shardscope
