// SPDX-License-Identifier: GPL-3.0-or-later
// load_tokenizer, and the tokenizer files older than tokenizer.json: BERT's
// vocab.txt and GPT-2's vocab.json + merges.txt (as transformers' BertTokenizer
// and GPT2Tokenizer read them), with tokenizer_config.json beside them.
#include <filesystem>

#include "core/error.h"
#include "core/input_file.h"
#include "core/json_text.h"
#include "data/bpe_tokenizer.h"
#include "data/tokenizer_readers.h"
#include "data/unicode_text.h"
#include "data/wordpiece_tokenizer.h"
#include "io/config_reader.h"

namespace shardscope {

namespace fs = std::filesystem;

namespace {

// The lines of a text file, without their "\n" (or "\r\n"); none after a final "\n".
std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(begin, end - begin);
    if (line.ends_with('\r')) line.remove_suffix(1);
    lines.push_back(line);
    begin = end + 1;
  }
  return lines;
}

// tokenizer_config.json beside `file`, when there is one.
std::optional<JsonConfig> config_beside(const std::string& file) {
  const fs::path config = fs::path(file).parent_path() / "tokenizer_config.json";
  std::error_code error;
  if (!fs::exists(config, error)) return std::nullopt;
  return JsonConfig(read_input_file(config.string(), "tokenizer"), config.string());
}

// A special token's name in tokenizer_config.json: "[UNK]" or {"content": "[UNK]", ...}.
std::string special_name(const std::optional<JsonConfig>& config, const std::string& key, const std::string& fallback) {
  if (!config) return fallback;
  const nlohmann::json* value = config->find({key});
  if (value == nullptr) return fallback;
  if (value->is_string()) return value->get<std::string>();
  if (value->is_object() && value->contains("content") && (*value)["content"].is_string())
    return (*value)["content"].get<std::string>();
  config->fail({key}, "expected the token, a string or {\"content\": ...}, got " + json_value_summary(*value));
}

// A vocabulary token that is a control token: found in the text as given, left out of decode.
void add_special(TokenizerCommon& common, const TokenIds& ids, const std::string& name) {
  const auto it = ids.find(name);
  if (it == ids.end()) return;
  for (const AddedToken& token : common.added)
    if (token.id == it->second) return;
  AddedToken token;
  token.content = name;
  token.id = it->second;
  token.special = true;
  common.added.push_back(token);
}

// vocab.txt's tokens by line; HF's WordPiece reader drops trailing whitespace.
std::vector<std::string> read_vocab_lines(const std::string& path, TokenIds& ids) {
  const std::string text = read_input_file(path, "tokenizer");
  std::vector<std::string> vocab;
  for (std::string_view line : split_lines(text)) {
    const std::string where = path + " line " + std::to_string(vocab.size() + 1);
    std::u32string token = unicode::decode_utf8(line, where);
    while (!token.empty() && unicode::has_class(token.back(), unicode::kBertWhitespace)) token.pop_back();
    std::string utf8 = unicode::encode_utf8(token);
    const auto [it, added] = ids.emplace(utf8, static_cast<std::int32_t>(vocab.size()));
    if (!added)
      throw ConfigError(where + ": " + quote_token(utf8) + " repeats line " + std::to_string(it->second + 1) +
                        " (each token once: its line number is its id)");
    vocab.push_back(std::move(utf8));
  }
  return vocab;
}

}  // namespace

std::unique_ptr<Tokenizer> read_vocab_txt(const std::string& path) {
  TokenizerCommon common;
  common.source = path;
  TokenIds ids;
  common.vocab = read_vocab_lines(path, ids);
  const std::optional<JsonConfig> config = config_beside(path);
  WordPieceOptions options;
  if (config) {
    options.lowercase = config->get_bool({"do_lower_case"}).value_or(true);
    options.handle_chinese_chars = config->get_bool({"tokenize_chinese_chars"}).value_or(true);
    options.strip_accents = config->get_bool({"strip_accents"}).value_or(options.lowercase);
  }
  common.unk_token = special_name(config, "unk_token", "[UNK]");
  const std::string cls = special_name(config, "cls_token", "[CLS]"), sep = special_name(config, "sep_token", "[SEP]");
  const std::pair<std::string, const char*> needed[] = {
      {common.unk_token, "WordPiece gives it to every word it cannot split"},
      {cls, "BERT puts it before the text"},
      {sep, "BERT puts it after the text"}};
  for (const auto& [name, why] : needed)
    if (ids.find(name) == ids.end()) throw ConfigError(path + ": has no line " + quote_token(name) + " (" + why + ")");
  for (const std::string& name : {common.unk_token, cls, sep, special_name(config, "pad_token", "[PAD]"),
                                  special_name(config, "mask_token", "[MASK]")})
    add_special(common, ids, name);
  common.prefix_ids = {ids.find(cls)->second};
  common.suffix_ids = {ids.find(sep)->second};
  return std::make_unique<WordPieceTokenizer>(std::move(common), options);
}

namespace {

// merges.txt: a "#version" line, then "left right" a line in rank order.
std::vector<BpeMerge> read_merges_txt(const std::string& path, const TokenIds& ids) {
  const std::string text = read_input_file(path, "tokenizer");
  std::vector<BpeMerge> merges;
  const std::vector<std::string_view> lines = split_lines(text);
  for (std::size_t n = 0; n < lines.size(); ++n) {
    const std::string_view line = lines[n];
    if (line.starts_with("#version")) continue;
    const std::string where = path + " line " + std::to_string(n + 1);
    const std::size_t space = line.find(' ');
    if (space == std::string_view::npos || line.find(' ', space + 1) != std::string_view::npos)
      throw ConfigError(where + ": expected \"left right\" (two tokens and one space), got " +
                        quote_token(std::string(line)));
    const std::string left(line.substr(0, space)), right(line.substr(space + 1));
    const std::string merged = left + right;
    for (const std::string* token : {&left, &right, &merged})
      if (ids.find(*token) == ids.end())
        throw ConfigError(where + ": " + quote_token(left) + " + " + quote_token(right) + ": " + quote_token(*token) +
                          " is not in the vocabulary (vocab.json)");
    merges.push_back({ids.find(left)->second, ids.find(right)->second, ids.find(merged)->second});
  }
  return merges;
}

}  // namespace

std::unique_ptr<Tokenizer> read_vocab_json_and_merges(const std::string& vocab_path, const std::string& merges_path) {
  TokenizerCommon common;
  common.source = vocab_path + " + " + merges_path;
  {
    const JsonConfig json(read_input_file(vocab_path, "tokenizer"), vocab_path);
    common.vocab = read_vocab_object(json, {});
  }
  TokenIds ids;
  for (std::size_t id = 0; id < common.vocab.size(); ++id) ids.emplace(common.vocab[id], static_cast<std::int32_t>(id));
  const std::vector<BpeMerge> merges = read_merges_txt(merges_path, ids);
  BpeOptions options;  // GPT2Tokenizer's: no prefix space, the regex
  if (const std::optional<JsonConfig> config = config_beside(vocab_path))
    options.add_prefix_space = config->get_bool({"add_prefix_space"}).value_or(false);
  add_special(common, ids, "<|endoftext|>");  // GPT-2's one special token (its bos, eos and unk)
  return std::make_unique<BpeTokenizer>(std::move(common), merges, options);
}

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path) {
  std::error_code error;
  const fs::path p(path);
  if (fs::is_directory(p, error)) {
    const auto has = [&](const char* name) { return fs::exists(p / name, error); };
    if (has("tokenizer.json")) return read_tokenizer_json((p / "tokenizer.json").string());
    if (has("vocab.txt")) return read_vocab_txt((p / "vocab.txt").string());
    if (has("vocab.json")) return read_vocab_json_and_merges((p / "vocab.json").string(), (p / "merges.txt").string());
    throw ConfigError("tokenizer: '" + path +
                      "' holds no tokenizer.json, vocab.txt or vocab.json + merges.txt (the files of a Hugging Face "
                      "tokenizer)");
  }
  const std::string name = p.filename().string();
  if (name == "vocab.json" || name == "merges.txt")
    return read_vocab_json_and_merges((p.parent_path() / "vocab.json").string(),
                                      (p.parent_path() / "merges.txt").string());
  if (p.extension() == ".json") return read_tokenizer_json(path);
  if (p.extension() == ".txt") return read_vocab_txt(path);
  throw ConfigError("tokenizer: cannot tell what '" + path +
                    "' is: give a tokenizer.json, vocab.txt or vocab.json, or the directory that holds it");
}

}  // namespace shardscope
