// SPDX-License-Identifier: GPL-3.0-or-later
// The checkpoint manifest (train/checkpoint.h): written as JSON, and read back
// with every field checked, so a damaged or hand-edited manifest is refused
// with the field at fault rather than resuming from wrong state.
#include "train/checkpoint.h"

#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>

#include "core/checked_math.h"
#include "core/error.h"
#include "core/json_text.h"

namespace shardscope {

using nlohmann::json;

std::string checkpoint_step_name(std::int64_t step) {
  char name[40];
  std::snprintf(name, sizeof name, "step-%06" PRId64, step);
  return name;
}

// FNV-1a, 64 bits (Fowler, Noll, Vo): enough to tell a damaged file from a good one.
std::uint64_t fnv1a64(const void* data, std::size_t bytes, std::uint64_t hash) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) hash = (hash ^ p[i]) * 0x100000001b3ull;
  return hash;
}

std::string hex64(std::uint64_t value) {
  char text[20];
  std::snprintf(text, sizeof text, "%016" PRIx64, value);
  return text;
}

namespace {

json scaler_json(const LossScalerState& s) {
  return {{"scale", s.scale},
          {"steps", s.steps},
          {"overflows", s.overflows},
          {"skipped", s.skipped},
          {"since_overflow", s.since_overflow},
          {"growth_tracker", s.growth_tracker},
          {"last_overflow_iter", s.last_overflow_iter},
          {"hysteresis_left", s.hysteresis_left}};
}

json file_json(const CheckpointFile& f) {
  json slices = json::array();
  for (const ParameterSlice& s : f.slices) {
    json slice = {s.name, s.begin, s.end};
    if (!s.tp.whole())  // a tensor-parallel slice: which part of the whole its elements are
      slice.push_back({{"split", s.tp.split == TensorSplit::rows ? "rows" : "columns"},
                       {"parts", s.tp.parts},
                       {"tp_rank", s.tp.tp_rank},
                       {"tp_size", s.tp.tp_size}});
    slices.push_back(std::move(slice));
  }
  return {{"name", f.name},
          {"rank", f.rank},
          {"dp_rank", f.dp_rank},
          {"stage", f.stage},
          {"bytes", f.bytes},
          {"fnv1a64", hex64(f.checksum)},
          {"slices", std::move(slices)}};
}

// Reading: each accessor names the field (a JSON path) and the manifest file.
struct Reader {
  const std::string& path;
  [[noreturn]] void fail(const std::string& field, const std::string& why) const {
    throw ConfigError(path + ": field '" + field + "': " + why +
                      " (the checkpoint is damaged or not ShardScope's; resume from another step directory)");
  }
  const json& at(const json& object, const std::string& key, const std::string& where) const {
    if (!object.is_object()) fail(where, "expected an object, got " + json_value_summary(object));
    const auto it = object.find(key);
    if (it == object.end()) fail(where.empty() ? key : where + "." + key, "missing");
    return *it;
  }
  std::int64_t integer(const json& v, const std::string& field, std::int64_t min,
                       std::int64_t max = std::numeric_limits<std::int64_t>::max()) const {
    if (!v.is_number_integer()) fail(field, "expected an integer, got " + json_value_summary(v));
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(max))
      fail(field, "out of range, got " + json_value_summary(v));
    const std::int64_t x = v.get<std::int64_t>();
    if (x < min || x > max)
      fail(field, "expected " + std::to_string(min) +
                      (max == std::numeric_limits<std::int64_t>::max() ? " or more" : " to " + std::to_string(max)) +
                      ", got " + std::to_string(x));
    return x;
  }
  std::string text(const json& v, const std::string& field) const {
    if (!v.is_string()) fail(field, "expected a string, got " + json_value_summary(v));
    return v.get<std::string>();
  }
  std::int64_t int_at(const json& o, const std::string& key, const std::string& where, std::int64_t min,
                      std::int64_t max = std::numeric_limits<std::int64_t>::max()) const {
    return integer(at(o, key, where), where.empty() ? key : where + "." + key, min, max);
  }
};

LossScalerState read_scaler(const Reader& r, const json& s) {
  LossScalerState out;
  const json& scale = r.at(s, "scale", "loss_scaler");
  if (!scale.is_number() || !(scale.get<double>() >= 0.0) || scale.get<double>() > 3.4e38)
    r.fail("loss_scaler.scale", "expected a finite number >= 0, got " + json_value_summary(scale));
  out.scale = scale.get<float>();
  out.steps = r.int_at(s, "steps", "loss_scaler", 0);
  out.overflows = r.int_at(s, "overflows", "loss_scaler", 0);
  out.skipped = r.int_at(s, "skipped", "loss_scaler", 0);
  out.since_overflow = r.int_at(s, "since_overflow", "loss_scaler", 0);
  out.growth_tracker = r.int_at(s, "growth_tracker", "loss_scaler", 0);
  out.last_overflow_iter = r.int_at(s, "last_overflow_iter", "loss_scaler", -1);
  out.hysteresis_left = static_cast<int>(r.int_at(s, "hysteresis_left", "loss_scaler", 0, 1 << 30));
  return out;
}

// A tensor-parallel slice's place: {"split": "rows"|"columns", "parts", "tp_rank", "tp_size"}.
TensorSliceOf read_tensor_split(const Reader& r, const json& o, const std::string& where) {
  TensorSliceOf of;
  const std::string split = r.text(r.at(o, "split", where), where + ".split");
  if (split != "rows" && split != "columns")
    r.fail(where + ".split", "expected \"rows\" or \"columns\", got \"" + bounded_excerpt(split) + "\"");
  of.split = split == "rows" ? TensorSplit::rows : TensorSplit::columns;
  of.parts = static_cast<int>(r.int_at(o, "parts", where, 1, 1 << 16));
  of.tp_size = static_cast<int>(r.int_at(o, "tp_size", where, 2, 1 << 16));
  of.tp_rank = static_cast<int>(r.int_at(o, "tp_rank", where, 0, of.tp_size - 1));
  return of;
}

std::vector<ParameterSlice> read_slices(const Reader& r, const json& list, const std::string& where) {
  if (!list.is_array()) r.fail(where, "expected an array, got " + json_value_summary(list));
  std::vector<ParameterSlice> slices;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string field = where + "[" + std::to_string(i) + "]";
    const json& s = list[i];
    if (!s.is_array() || (s.size() != 3 && s.size() != 4))
      r.fail(field, "expected [name, begin, end] or [name, begin, end, tensor split], got " + json_value_summary(s));
    ParameterSlice slice{r.text(s[0], field + "[0]"), r.integer(s[1], field + "[1]", 0),
                         r.integer(s[2], field + "[2]", 0)};
    if (s.size() == 4) slice.tp = read_tensor_split(r, s[3], field + "[3]");
    if (slice.end <= slice.begin) r.fail(field, "empty or reversed element range");
    if (!seen.insert(slice.name).second) r.fail(field, "parameter '" + slice.name + "' listed twice");
    slices.push_back(std::move(slice));
  }
  return slices;
}

std::vector<CheckpointFile> read_files(const Reader& r, const json& list) {
  if (!list.is_array() || list.empty()) r.fail("files", "expected a non-empty array, got " + json_value_summary(list));
  std::vector<CheckpointFile> files;
  std::set<std::string> names;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string where = "files[" + std::to_string(i) + "]";
    const json& f = list[i];
    CheckpointFile file;
    file.name = r.text(r.at(f, "name", where), where + ".name");
    if (file.name.empty() || file.name.find('/') != std::string::npos || file.name.front() == '.')
      r.fail(where + ".name", "expected a plain file name, got '" + bounded_excerpt(file.name) + "'");
    if (!names.insert(file.name).second) r.fail(where + ".name", "'" + file.name + "' listed twice");
    file.rank = static_cast<int>(r.int_at(f, "rank", where, 0, 1 << 20));
    file.dp_rank = static_cast<int>(r.int_at(f, "dp_rank", where, 0, 1 << 20));
    file.stage = static_cast<int>(r.int_at(f, "stage", where, 0, 1 << 20));
    file.bytes = r.int_at(f, "bytes", where, 0);
    const std::string sum = r.text(r.at(f, "fnv1a64", where), where + ".fnv1a64");
    if (sum.size() != 16 || sum.find_first_not_of("0123456789abcdef") != std::string::npos)
      r.fail(where + ".fnv1a64", "expected 16 lowercase hex digits, got '" + bounded_excerpt(sum) + "'");
    file.checksum = std::stoull(sum, nullptr, 16);
    file.slices = read_slices(r, r.at(f, "slices", where), where + ".slices");
    files.push_back(std::move(file));
  }
  return files;
}

std::vector<std::pair<std::string, std::vector<std::int64_t>>> read_parameters(const Reader& r, const json& list) {
  if (!list.is_array() || list.empty())
    r.fail("parameters", "expected a non-empty array, got " + json_value_summary(list));
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string field = "parameters[" + std::to_string(i) + "]";
    const json& p = list[i];
    if (!p.is_array() || p.size() != 2 || !p[1].is_array() || p[1].empty() || p[1].size() > 8)
      r.fail(field, "expected [name, [dims]], got " + json_value_summary(p));
    std::vector<std::int64_t> shape;
    std::optional<std::int64_t> numel = 1;  // nullopt once the product passes 64 bits
    for (std::size_t d = 0; d < p[1].size(); ++d) {
      shape.push_back(r.integer(p[1][d], field + "[1][" + std::to_string(d) + "]", 1, std::int64_t{1} << 40));
      if (numel) numel = product_if_fits(*numel, shape.back());
    }
    // Checked before anything is sized by it: a wrapped product (2^32 x (2^32 + 1) is 2^32 mod 2^64) would
    // pass for a small parameter.
    if (!numel || *numel > kMaxCheckpointParameterElements)
      r.fail(field + "[1]", "the dimensions multiply to " +
                                (numel ? std::to_string(*numel) : std::string("more than 2^63 - 1")) +
                                " elements; a parameter of this program has at most " +
                                std::to_string(kMaxCheckpointParameterElements));
    out.emplace_back(r.text(p[0], field + "[0]"), std::move(shape));
  }
  return out;
}

}  // namespace

std::string checkpoint_manifest_text(const CheckpointManifest& m) {
  json parameters = json::array(), files = json::array();
  for (const auto& [name, shape] : m.parameters) parameters.push_back({name, shape});
  for (const CheckpointFile& f : m.files) files.push_back(file_json(f));
  json doc = {{"format", kCheckpointFormat},
              {"format_version", m.format_version},
              {"step", m.step},
              {"model", m.model},
              {"parameters", std::move(parameters)},
              {"layout", m.layout},
              {"lr_schedule", m.lr_schedule},
              {"optimizer", {{"adamw_steps", m.adamw_steps}}},
              {"loss_scaler", scaler_json(m.loss_scaler)},
              {"rng",
               {{"seed", m.seed},
                {"data_sampling", "stateless: sample i of step s is drawn from mix_seed(seed, s, i)"},
                {"mlm_masking", "stateless: from the same per-sample stream as data_sampling"},
                {"dropout", "none: the models have no dropout"},
                {"moe_routing",
                 "none: a mixture of experts routes by top-k (ties to the lower expert), and its drop "
                 "counters start again every step"}}},
              {"data", m.data},
              {"data_position", {{"next_step", m.data_next_step}}},
              {"files", std::move(files)}};
  if (!m.hugging_face.empty()) doc["hugging_face"] = m.hugging_face;
  return doc.dump(1) + "\n";
}

CheckpointManifest parse_checkpoint_manifest(std::string_view text, const std::string& path) {
  JsonTextError error;
  const std::optional<json> parsed = parse_json_text(text, error);
  if (!parsed) throw ConfigError(path + ": not valid JSON: " + error.where_and_why());
  const json& doc = *parsed;
  const Reader r{path};
  if (!doc.is_object()) r.fail("(top level)", "expected an object, got " + json_value_summary(doc));
  if (r.text(r.at(doc, "format", ""), "format") != kCheckpointFormat)
    r.fail("format", "expected \"" + std::string(kCheckpointFormat) + "\"");
  CheckpointManifest m;
  m.format_version = static_cast<int>(r.int_at(doc, "format_version", "", 0, 1 << 20));
  if (m.format_version != kCheckpointFormatVersion)
    r.fail("format_version", "version " + std::to_string(m.format_version) +
                                 " is not the version this program reads (" + std::to_string(kCheckpointFormatVersion) +
                                 ")");
  m.step = r.int_at(doc, "step", "", 0);
  m.model = r.at(doc, "model", "");
  if (!m.model.is_object()) r.fail("model", "expected an object, got " + json_value_summary(m.model));
  m.parameters = read_parameters(r, r.at(doc, "parameters", ""));
  m.layout = r.at(doc, "layout", "");
  if (!m.layout.is_object()) r.fail("layout", "expected an object, got " + json_value_summary(m.layout));
  m.lr_schedule = r.at(doc, "lr_schedule", "");
  m.adamw_steps = r.int_at(r.at(doc, "optimizer", ""), "adamw_steps", "optimizer", 0, m.step);
  m.loss_scaler = read_scaler(r, r.at(doc, "loss_scaler", ""));
  const json& seed = r.at(r.at(doc, "rng", ""), "seed", "rng");
  if (!seed.is_number_unsigned() && !(seed.is_number_integer() && seed.get<std::int64_t>() >= 0))
    r.fail("rng.seed", "expected an integer >= 0, got " + json_value_summary(seed));
  m.seed = seed.get<std::uint64_t>();
  m.data = r.at(doc, "data", "");
  m.data_next_step = r.int_at(r.at(doc, "data_position", ""), "next_step", "data_position", 0);
  if (m.data_next_step != m.step) r.fail("data_position.next_step", "differs from 'step'");
  if (const auto hf = doc.find("hugging_face"); hf != doc.end()) m.hugging_face = r.text(*hf, "hugging_face");
  m.files = read_files(r, r.at(doc, "files", ""));
  return m;
}

std::string checkpoint_file_text(const CheckpointFile& file) {
  return file_json(file).dump();
}

CheckpointFile parse_checkpoint_file(std::string_view text, const std::string& path) {
  const Reader r{path};
  const json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) r.fail("files", "not JSON");
  return read_files(r, json::array({doc})).front();
}

std::optional<std::int64_t> checkpoint_step_of(const std::string& name) {
  if (!name.starts_with("step-") || name.size() < 6) return std::nullopt;
  std::int64_t step = 0;
  const char* end = name.data() + name.size();
  const auto [at, error] = std::from_chars(name.data() + 5, end, step);  // past int64: not a step of ours
  if (error != std::errc() || at != end || step < 0) return std::nullopt;
  return step;
}

// Before the first step: a save this run will make must not find its step
// directory taken, nor --save-dir (or the folder above it) a file, or the run
// would train to the end and then lose what it trained.
void check_save_dir(const std::string& root, std::int64_t first_step, std::int64_t last_step, std::int64_t every) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path existing = fs::absolute(root, ec);
  while (!existing.empty() && !fs::exists(existing, ec) && existing.has_parent_path() &&
         existing.parent_path() != existing)
    existing = existing.parent_path();
  if (fs::exists(existing, ec) && !fs::is_directory(existing, ec))
    throw ConfigError("--save-dir " + root + ": '" + existing.string() +
                      "' is a file, not a directory: the checkpoints could not be saved; choose another --save-dir");
  if (!fs::is_directory(root, ec)) return;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::optional<std::int64_t> step = checkpoint_step_of(entry.path().filename().string());
    if (step && *step > first_step && *step <= last_step && (*step == last_step || (every > 0 && *step % every == 0)))
      throw ConfigError("--save-dir " + entry.path().string() + ": already exists, and this run would save step " +
                        std::to_string(*step) +
                        " there (a checkpoint is never overwritten); choose another --save-dir, or --resume from it");
  }
}

std::string find_checkpoint_dir(const std::string& path, const std::string& flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(path, ec))
    throw ConfigError(flag + " " + path +
                      ": not a directory (give a checkpoint step directory or the --save-dir root)");
  if (fs::exists(fs::path(path) / "manifest.json", ec)) return path;
  std::int64_t newest = -1;
  std::string found;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    const std::optional<std::int64_t> step = checkpoint_step_of(entry.path().filename().string());
    if (step && *step > newest && fs::exists(entry.path() / "manifest.json", ec))
      newest = *step, found = entry.path().string();
  }
  if (ec) throw ConfigError(flag + " " + path + ": cannot list the directory: " + ec.message());
  if (found.empty())
    throw ConfigError(flag + " " + path +
                      ": no checkpoint here (neither manifest.json nor a step-N directory holding one)");
  return found;
}

}  // namespace shardscope
