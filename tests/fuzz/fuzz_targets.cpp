// SPDX-License-Identifier: GPL-3.0-or-later
#include "fuzz_targets.h"

#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>

#include "config/lesson_file.h"
#include "config/run_schema.h"
#include "core/error.h"
#include "data/tokenizer.h"
#include "data/tokenizer_readers.h"
#include "events/chrome_trace.h"
#include "events/recording.h"
#include "io/accelerate_config.h"
#include "io/deepspeed_config.h"
#include "io/hf_config.h"
#include "io/safetensors.h"
#include "train/checkpoint.h"
#include "train/metrics_json.h"

namespace shardscope::fuzz {

namespace {

// The readers that take a path get the bytes through one file per process,
// rewritten for every case and removed at exit.
class ScratchFile {
 public:
  ScratchFile() {
    const char* tmp = std::getenv("TMPDIR");
    path_ = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/shardscope-fuzz-" +
            std::to_string(::getpid()) + ".bin";
  }
  ~ScratchFile() { std::remove(path_.c_str()); }
  const std::string& write(std::string_view bytes) {
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    if (f == nullptr) throw std::runtime_error("fuzz: cannot write " + path_);  // the machine's fault: a failure
    const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    if (std::fclose(f) != 0 || !ok) throw std::runtime_error("fuzz: cannot write " + path_);
    return path_;
  }

 private:
  std::string path_;
};

const std::string& scratch_file(std::string_view bytes) {
  static ScratchFile file;
  return file.write(bytes);
}

// A run config the schema accepted must survive its own round trip (the
// recorder writes run_config_to_json, the window reads it back): anything the
// reader refuses there is the engine's bug, reported as a logic_error.
void check_round_trip(const RunConfig& config) {
  try {
    const RunConfig again = run_config_from_json(run_config_to_json(config));
    if (run_config_to_json(again) != run_config_to_json(config))
      throw std::logic_error("run config changed in its JSON round trip");
  } catch (const ConfigError& e) {
    throw std::logic_error(std::string("an accepted run config does not read back: ") + e.what());
  }
}

std::vector<std::string> no_words() {
  return {};
}

// Every key of the run-config schema, and every choice of its choice fields.
std::vector<std::string> run_config_words() {
  std::vector<std::string> words;
  for (const RunField& field : run_fields()) {
    words.push_back("\"" + std::string(field.key) + "\"");
    for (std::string_view choice : field.choices) words.push_back("\"" + std::string(choice) + "\"");
  }
  return words;
}

}  // namespace

void fuzz_hf_config(std::string_view bytes) {
  const HfModelConfig config = parse_hf_config(bytes, "config.json");
  // What `estimate --model config.json` asks of it next: the exact counts.
  [[maybe_unused]] const auto counts = config.training_parameters() + config.base_model_parameters() +
                                       config.largest_module_parameters() + config.lookup_only_parameters();
  [[maybe_unused]] const auto engine = config.engine_config();
}

void fuzz_deepspeed_config(std::string_view bytes) {
  [[maybe_unused]] const DeepSpeedConfig config = parse_deepspeed_config(bytes, "ds.json");
}

void fuzz_accelerate_config(std::string_view bytes) {
  [[maybe_unused]] const AccelerateConfig config = parse_accelerate_config(bytes, "accelerate.yaml");
}

// As `shardscope-cli export` reads a recording (every record, then the trace),
// and as the window opens one (the metadata as a run config).
void fuzz_recording(std::string_view bytes) {
  RecordingReader reader;
  reader.open(scratch_file(bytes));
  const std::vector<Event> events = reader.read_all();
  [[maybe_unused]] const auto trailing = reader.trailing_bytes();
  std::ostringstream trace;
  write_chrome_trace(events, reader.metadata_json(), trace);
  const RunConfig config = run_config_from_json(nlohmann::json::parse(reader.metadata_json()));
  validate_run_config(config);
}

// As the reference-model tests read weights: the file, then every tensor as
// the values its dtype converts to.
void fuzz_safetensors(std::string_view bytes) {
  const SafetensorsFile file = SafetensorsFile::read(scratch_file(bytes));
  for (const auto& [name, entry] : file.entries()) {
    if (entry.dtype == "I32" || entry.dtype == "I64") [[maybe_unused]]
      const auto values = file.ints(name);
    else if (entry.dtype == "F32" || entry.dtype == "F16" || entry.dtype == "BF16") [[maybe_unused]]
      const auto values = file.floats(name);
  }
}

// A lesson.json as the GUI's lesson list reads it (parse_lesson_file): the
// JSON, its title, every "config" key set through the run-config schema onto
// the panel's default run, the whole run validated; then the run's round trip.
void fuzz_lesson(std::string_view bytes) {
  check_round_trip(parse_lesson_file(bytes, "lesson.json", panel_default_config()).config);
}

// Run-config JSON as the window reads a recording's metadata: parsed (any
// error of nlohmann's parser is the file's format; the recording target runs
// the reader's own parse), read through the schema, validated, and then
// written and read back.
void fuzz_run_config(std::string_view bytes) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(bytes);
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(std::string("run config: ") + e.what());
  }
  const RunConfig config = run_config_from_json(j);
  validate_run_config(config);
  check_round_trip(config);
}

namespace {

// An accepted tokenizer gives ids it has, and decodes them.
void check_ids(const Tokenizer& tokenizer, const std::vector<std::int32_t>& ids) {
  for (std::int32_t id : ids)
    if (id < 0 || id >= tokenizer.vocab_size() || !tokenizer.token_text(id))
      throw std::logic_error("tokenizer gave id " + std::to_string(id) + ", which it does not have");
  [[maybe_unused]] const std::string text = tokenizer.decode(ids);
}

std::vector<std::string> tokenizer_words() {
  return {"\"BPE\"", "\"WordPiece\"", "\"model\"", "\"vocab\"", "\"merges\"", "\"added_tokens\"",
          "\"normalizer\"", "\"pre_tokenizer\"", "\"post_processor\"", "\"decoder\"", "\"ByteLevel\"",
          "\"BertNormalizer\"", "\"BertPreTokenizer\"", "\"TemplateProcessing\"", "\"BertProcessing\"",
          "\"Sequence\"", "\"SpecialToken\"", "\"special_tokens\"", "\"unk_token\"", "\"lstrip\"", "\"rstrip\"",
          "\"single_word\"", "\"normalized\"", "\"[MASK]\"", "\"##\"", "\"\u0120\"", "\"ignore_merges\""};
}

}  // namespace

// As `shardscope-cli tokenize --tokenizer tokenizer.json` reads it, then texts through it.
void fuzz_tokenizer_json(std::string_view bytes) {
  const std::unique_ptr<Tokenizer> tokenizer = read_tokenizer_json(scratch_file(bytes));
  for (std::string_view text : {"Hello, World! [MASK]<|endoftext|> 中文，ça  va\t\n", "", "  wow_ wowing YES!"})
    check_ids(*tokenizer, tokenizer->encode(text));
}

// The bytes as the text of `tokenize --text`, with the committed GPT-2-style BPE
// and all-MiniLM-L6-v2's WordPiece: only invalid UTF-8 may be refused, and the
// byte-level BPE must give the text back.
void fuzz_tokenize_text(std::string_view bytes) {
  static const std::unique_ptr<Tokenizer> bpe = load_tokenizer(SHARDSCOPE_FIXTURES "/tokenizers/bpe_json");
  static const std::unique_ptr<Tokenizer> bert = load_tokenizer(SHARDSCOPE_FIXTURES "/tokenizers/minilm_json");
  const std::vector<std::int32_t> ids = bpe->encode(bytes);  // ConfigError for invalid UTF-8
  check_ids(*bpe, ids);
  if (bpe->decode(ids, false) != bytes) throw std::logic_error("the byte-level BPE did not give the text back");
  check_ids(*bert, bert->encode(bytes));
}

// A checkpoint's manifest.json as `train --resume` reads it; an accepted
// manifest must survive its own round trip (the saver writes it with
// checkpoint_manifest_text, the loader reads it back).
void fuzz_checkpoint_manifest(std::string_view bytes) {
  const CheckpointManifest m = parse_checkpoint_manifest(bytes, "manifest.json");
  CheckpointManifest again;
  try {
    again = parse_checkpoint_manifest(checkpoint_manifest_text(m), "manifest.json (round trip)");
  } catch (const ConfigError& e) {
    throw std::logic_error(std::string("an accepted manifest does not read back: ") + e.what());
  }
  if (again.step != m.step || again.files.size() != m.files.size() || again.parameters != m.parameters)
    throw std::logic_error("an accepted manifest changed in its round trip");
}

namespace {
std::vector<std::string> manifest_words() {
  return {"\"format\"", "\"format_version\"", "\"step\"", "\"model\"", "\"parameters\"", "\"layout\"",
          "\"lr_schedule\"", "\"optimizer\"", "\"adamw_steps\"", "\"loss_scaler\"", "\"scale\"", "\"rng\"",
          "\"seed\"", "\"data_position\"", "\"next_step\"", "\"files\"", "\"slices\"", "\"fnv1a64\"",
          "\"bytes\"", "\"shardscope-checkpoint\"", "\"rank-0.safetensors\"", "\"embed.tokens\""};
}
}  // namespace

const std::vector<FuzzTarget>& fuzz_targets() {
  static const std::vector<FuzzTarget> targets = {
      {"hf_config", fuzz_hf_config, no_words, {}},
      {"deepspeed_config", fuzz_deepspeed_config, no_words, {}},
      {"accelerate_config", fuzz_accelerate_config, no_words, {}},
      // The metadata length (u32 at byte 16) of the JSON at byte 20 (events/recording.h).
      {"recording", fuzz_recording, run_config_words, {16, 4, kRecordingHeaderSize}},
      // The header length (u64 at byte 0) of the JSON at byte 8.
      {"safetensors", fuzz_safetensors, no_words, {0, 8, 8}},
      {"lesson", fuzz_lesson, run_config_words, {}},
      {"run_config", fuzz_run_config, run_config_words, {}},
      {"tokenizer_json", fuzz_tokenizer_json, tokenizer_words, {}},
      {"tokenize_text", fuzz_tokenize_text, tokenizer_words, {}},
      {"checkpoint_manifest", fuzz_checkpoint_manifest, manifest_words, {}},
  };
  return targets;
}

const FuzzTarget* find_fuzz_target(std::string_view name) {
  for (const FuzzTarget& target : fuzz_targets())
    if (target.name == name) return &target;
  return nullptr;
}

}  // namespace shardscope::fuzz
