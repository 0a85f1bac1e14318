// SPDX-License-Identifier: GPL-3.0-or-later
// tokenizer.json, the Hugging Face tokenizers library's one-file format:
// {"added_tokens": [...], "normalizer": {...}, "pre_tokenizer": {...},
//  "post_processor": {...}, "decoder": {...}, "model": {"type": ..., "vocab": ...}}.
#include <algorithm>
#include <limits>

#include "core/error.h"
#include "core/input_file.h"
#include "core/json_text.h"
#include "data/bpe_tokenizer.h"
#include "data/tokenizer_readers.h"
#include "data/unicode_text.h"
#include "data/wordpiece_tokenizer.h"
#include "io/config_reader.h"

namespace shardscope {

namespace {

using Path = std::vector<std::string>;
constexpr std::int64_t kMaxId = std::numeric_limits<std::int32_t>::max() - 1;

// "<file> line L: added_tokens[3].content: <message>" (the line is the array's key's).
[[noreturn]] void fail_in_array(const JsonConfig& json, const Path& array, std::size_t index, const std::string& field,
                                const std::string& message) {
  throw ConfigError(json.where(array) + "[" + std::to_string(index) + "]" + (field.empty() ? "" : "." + field) + ": " +
                    message);
}

// The object at `path` (nullptr when absent or null); ConfigError when it is not an object.
const nlohmann::json* find_object(const JsonConfig& json, const Path& path) {
  const nlohmann::json* value = json.find(path);
  if (value != nullptr && !value->is_object())
    json.fail(path, "expected an object {...}, got " + json_value_summary(*value));
  return value;
}

// The "type" of the component at `path` ("" when the component is null or absent).
std::string component_type(const JsonConfig& json, const Path& path) {
  if (find_object(json, path) == nullptr) return "";
  Path type_path = path;
  type_path.push_back("type");
  const auto type = json.get_string(type_path);
  if (!type) json.fail(type_path, "is missing (which " + path.back() + " is this?)");
  return *type;
}

[[noreturn]] void unsupported(const JsonConfig& json, const Path& path, const std::string& type,
                              const std::string& supported) {
  json.fail(path, "'" + bounded_excerpt(type) + "' is not supported (ShardScope reads " + supported + ")");
}

AddedToken read_added_token(const JsonConfig& json, const nlohmann::json& entry, std::size_t index) {
  const Path array = {"added_tokens"};
  if (!entry.is_object()) fail_in_array(json, array, index, "", "expected an object, got " + json_value_summary(entry));
  AddedToken token;
  const auto id = entry.find("id");
  if (id == entry.end() || !id->is_number_integer() || id->get<std::int64_t>() < 0 || id->get<std::int64_t>() > kMaxId)
    fail_in_array(json, array, index, "id",
                  "expected an id from 0 to " + std::to_string(kMaxId) + ", got " +
                      (id == entry.end() ? std::string("nothing") : json_value_summary(*id)));
  token.id = static_cast<std::int32_t>(id->get<std::int64_t>());
  const auto content = entry.find("content");
  if (content == entry.end() || !content->is_string() || content->get<std::string>().empty())
    fail_in_array(json, array, index, "content",
                  "expected the token's text, got " +
                      (content == entry.end() ? std::string("nothing") : json_value_summary(*content)));
  token.content = content->get<std::string>();
  const std::pair<const char*, bool*> flags[] = {{"special", &token.special},
                                                 {"single_word", &token.single_word},
                                                 {"lstrip", &token.lstrip},
                                                 {"rstrip", &token.rstrip},
                                                 {"normalized", &token.normalized}};
  for (const auto& [name, out] : flags) {
    const auto flag = entry.find(name);
    if (flag == entry.end() || flag->is_null()) continue;
    if (!flag->is_boolean())
      fail_in_array(json, array, index, name, "expected true or false, got " + json_value_summary(*flag));
    *out = flag->get<bool>();
  }
  return token;
}

std::vector<AddedToken> read_added_tokens(const JsonConfig& json) {
  std::vector<AddedToken> tokens;
  const nlohmann::json* list = json.find({"added_tokens"});
  if (list == nullptr) return tokens;
  if (!list->is_array()) json.fail({"added_tokens"}, "expected an array [...], got " + json_value_summary(*list));
  for (std::size_t i = 0; i < list->size(); ++i) tokens.push_back(read_added_token(json, (*list)[i], i));
  return tokens;
}

}  // namespace

std::string quote_token(const std::string& token) {
  std::string text = "'";  // in steps: GCC 12 warns falsely (-Wrestrict) on "'" + std::string
  text += bounded_excerpt(token);
  text += "'";
  return text;
}

std::vector<std::string> read_vocab_object(const JsonConfig& json, const Path& path) {
  const nlohmann::json* vocab = path.empty() ? &json.root() : json.find(path);
  const auto fail_whole = [&](const std::string& message) {
    if (path.empty()) throw ConfigError(json.source() + ": " + message);  // vocab.json: the file is the vocabulary
    json.fail(path, message);
  };
  if (vocab == nullptr) fail_whole("is missing (the model's tokens and their ids)");
  if (!vocab->is_object()) fail_whole("expected an object {\"token\": id, ...}, got " + json_value_summary(*vocab));
  if (vocab->empty()) fail_whole("the vocabulary is empty");
  const std::size_t size = vocab->size();
  std::vector<std::string> tokens(size);
  std::vector<bool> seen(size, false);
  for (const auto& [token, id] : vocab->items()) {
    Path at = path;
    at.push_back(token);
    if (!id.is_number_integer()) json.fail(at, "expected an id (an integer), got " + json_value_summary(id));
    const std::int64_t value = id.get<std::int64_t>();
    if (value < 0 || static_cast<std::uint64_t>(value) >= size)
      json.fail(at, "id " + std::to_string(value) + " is outside 0.." + std::to_string(size - 1) + ": the ids of " +
                        std::to_string(size) + " tokens must be dense (0..n-1, each once)");
    const auto index = static_cast<std::size_t>(value);
    if (seen[index])
      json.fail(at, "id " + std::to_string(value) + " is also the id of " + quote_token(tokens[index]) +
                        ": the ids must be dense (0..n-1, each once)");
    seen[index] = true;
    tokens[index] = token;
  }
  return tokens;
}

namespace {

// A post-processor is read from its node; `where` names it in messages
// ("<file> line 40: post_processor", "... post_processor.processors[1]").
struct Node {
  const nlohmann::json& value;
  std::string where;
  [[noreturn]] void fail(const std::string& field, const std::string& message) const {
    throw ConfigError(where + (field.empty() ? "" : "." + field) + ": " + message);
  }
  const nlohmann::json* find(const std::string& key) const {
    const auto it = value.find(key);
    return it == value.end() || it->is_null() ? nullptr : &*it;
  }
};

// An id the post-processor adds: one the tokenizer has.
std::int32_t checked_id(const Node& node, const std::string& field, const nlohmann::json& id, std::int32_t vocab_size) {
  if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() >= vocab_size)
    node.fail(field, "expected a token id below the vocabulary size " + std::to_string(vocab_size) + ", got " +
                         json_value_summary(id));
  return static_cast<std::int32_t>(id.get<std::int64_t>());
}

// BertProcessing / RobertaProcessing: "cls": ["[CLS]", 101], "sep": ["[SEP]", 102].
std::int32_t pair_id(const Node& node, const std::string& field, std::int32_t vocab_size) {
  const nlohmann::json* pair = node.find(field);
  if (pair == nullptr || !pair->is_array() || pair->size() != 2 || !(*pair)[0].is_string())
    node.fail(field, "expected [\"token\", id], got " + (pair ? json_value_summary(*pair) : std::string("nothing")));
  return checked_id(node, field, (*pair)[1], vocab_size);
}

// TemplateProcessing's "single": [{"SpecialToken": {"id": "[CLS]"}}, {"Sequence": {"id": "A"}}, ...],
// with "special_tokens": {"[CLS]": {"ids": [101], ...}}.
void read_template(const Node& node, std::int32_t vocab_size, TokenizerCommon& common) {
  const nlohmann::json* items = node.find("single");
  if (items == nullptr || !items->is_array()) node.fail("single", "expected the template, an array [...]");
  const nlohmann::json* specials = node.find("special_tokens");
  bool seen_sequence = false;
  for (std::size_t i = 0; i < items->size(); ++i) {
    const nlohmann::json& item = (*items)[i];
    const std::string field = "single[" + std::to_string(i) + "]";
    if (item.is_object() && item.contains("Sequence")) {
      if (seen_sequence) node.fail(field, "a second sequence in the template of a single text");
      seen_sequence = true;
      continue;
    }
    const nlohmann::json* name = item.is_object() && item.contains("SpecialToken") && item["SpecialToken"].is_object()
                                     ? &item["SpecialToken"]["id"]
                                     : nullptr;
    if (name == nullptr || !name->is_string())
      node.fail(field, "expected {\"SpecialToken\": {\"id\": ...}} or {\"Sequence\": ...}");
    const std::string token = name->get<std::string>();
    const std::string ids_field = "special_tokens." + bounded_excerpt(token) + ".ids";
    const nlohmann::json* entry =
        specials != nullptr && specials->is_object() && specials->contains(token) ? &(*specials)[token] : nullptr;
    if (entry == nullptr || !entry->is_object() || !entry->contains("ids") || !(*entry)["ids"].is_array())
      node.fail(ids_field, "is missing: the template's special token " + quote_token(token) + " has no ids");
    auto& out = seen_sequence ? common.suffix_ids : common.prefix_ids;
    for (const auto& id : (*entry)["ids"]) out.push_back(checked_id(node, ids_field, id, vocab_size));
  }
  if (!seen_sequence) node.fail("single", "has no {\"Sequence\": ...}: where does the text go?");
}

void read_post_processor(const Node& node, std::int32_t vocab_size, TokenizerCommon& common) {
  if (!node.value.is_object()) node.fail("", "expected an object {...}, got " + json_value_summary(node.value));
  const nlohmann::json* type_value = node.find("type");
  if (type_value == nullptr || !type_value->is_string())
    node.fail("type", "is missing (which post-processor is this?)");
  const std::string type = type_value->get<std::string>();
  if (type == "ByteLevel") return;  // it only trims offsets
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    common.prefix_ids.push_back(pair_id(node, "cls", vocab_size));
    common.suffix_ids.push_back(pair_id(node, "sep", vocab_size));
  } else if (type == "TemplateProcessing") {
    read_template(node, vocab_size, common);
  } else if (type == "Sequence") {
    const nlohmann::json* list = node.find("processors");
    if (list == nullptr || !list->is_array()) node.fail("processors", "expected an array of post-processors");
    for (std::size_t i = 0; i < list->size(); ++i)
      read_post_processor({(*list)[i], node.where + ".processors[" + std::to_string(i) + "]"}, vocab_size, common);
  } else {
    node.fail("type", "'" + bounded_excerpt(type) +
                          "' is not supported (ShardScope reads BertProcessing, RobertaProcessing, "
                          "TemplateProcessing, ByteLevel and Sequence)");
  }
}

}  // namespace

namespace {

const Path kMerges = {"model", "merges"};

BpeMerge merge_ids(const JsonConfig& json, std::size_t index, const std::string& left, const std::string& right,
                   const TokenIds& ids) {
  const std::string rule = quote_token(left) + " + " + quote_token(right);
  const auto left_id = ids.find(left), right_id = ids.find(right), merged_id = ids.find(left + right);
  if (left_id == ids.end())
    fail_in_array(json, kMerges, index, "", rule + ": " + quote_token(left) + " is not in model.vocab");
  if (right_id == ids.end())
    fail_in_array(json, kMerges, index, "", rule + ": " + quote_token(right) + " is not in model.vocab");
  if (merged_id == ids.end())
    fail_in_array(json, kMerges, index, "",
                  rule + ": the merged token " + quote_token(left + right) + " is not in model.vocab");
  return {left_id->second, right_id->second, merged_id->second};
}

// model.merges, in rank order: "left right" strings (the older layout) or ["left", "right"] pairs.
std::vector<BpeMerge> read_merges(const JsonConfig& json, const std::vector<std::string>& vocab) {
  const nlohmann::json* list = json.find(kMerges);
  if (list == nullptr) json.fail(kMerges, "is missing (the BPE merge rules, in rank order)");
  if (!list->is_array()) json.fail(kMerges, "expected an array, got " + json_value_summary(*list));
  TokenIds ids;
  for (std::size_t id = 0; id < vocab.size(); ++id) ids.emplace(vocab[id], static_cast<std::int32_t>(id));
  std::vector<BpeMerge> merges;
  merges.reserve(list->size());
  for (std::size_t i = 0; i < list->size(); ++i) {
    const nlohmann::json& entry = (*list)[i];
    std::string left, right;
    if (entry.is_string()) {
      const std::string text = entry.get<std::string>();
      const std::size_t space = text.find(' ');
      if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos)
        fail_in_array(json, kMerges, i, "",
                      "expected \"left right\" (two tokens and one space), got " + quote_token(text));
      left = text.substr(0, space);
      right = text.substr(space + 1);
    } else if (entry.is_array() && entry.size() == 2 && entry[0].is_string() && entry[1].is_string()) {
      left = entry[0].get<std::string>();
      right = entry[1].get<std::string>();
    } else {
      fail_in_array(json, kMerges, i, "",
                    "expected \"left right\" or [\"left\", \"right\"], got " + json_value_summary(entry));
    }
    merges.push_back(merge_ids(json, i, left, right, ids));
  }
  return merges;
}

// BPE model options that GPT-2's byte-level BPE never uses are refused rather than ignored.
BpeOptions read_bpe_options(const JsonConfig& json) {
  if (const auto dropout = json.get_number({"model", "dropout"}); dropout && *dropout != 0.0)
    json.fail({"model", "dropout"}, "BPE dropout (random merges, for training) is not supported: set it to null");
  for (const char* field : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (const auto affix = json.get_string({"model", field}); affix && !affix->empty())
      json.fail({"model", field}, quote_token(*affix) + " is not supported (GPT-2's byte-level BPE has none)");
  if (json.get_bool({"model", "byte_fallback"}).value_or(false))
    json.fail({"model", "byte_fallback"}, "is not supported (SentencePiece-style BPE; byte-level BPE needs none)");
  BpeOptions options;
  options.fuse_unk = json.get_bool({"model", "fuse_unk"}).value_or(false);
  options.ignore_merges = json.get_bool({"model", "ignore_merges"}).value_or(false);
  if (const std::string type = component_type(json, {"normalizer"}); !type.empty())
    unsupported(json, {"normalizer", "type"}, type, "BPE tokenizers without a normalizer, as GPT-2's");
  if (const std::string type = component_type(json, {"pre_tokenizer"}); type != "ByteLevel")
    unsupported(json, {"pre_tokenizer", "type"}, type.empty() ? "none" : type,
                "BPE with GPT-2's ByteLevel pre-tokenizer");
  options.add_prefix_space = json.get_bool({"pre_tokenizer", "add_prefix_space"}).value_or(true);
  options.use_regex = json.get_bool({"pre_tokenizer", "use_regex"}).value_or(true);
  if (const std::string type = component_type(json, {"decoder"}); !type.empty() && type != "ByteLevel")
    unsupported(json, {"decoder", "type"}, type, "BPE with the ByteLevel decoder");
  return options;
}

std::unique_ptr<Tokenizer> make_bpe(const JsonConfig& json, TokenizerCommon common) {
  const BpeOptions options = read_bpe_options(json);
  if (const auto unk = json.get_string({"model", "unk_token"})) {
    if (std::find(common.vocab.begin(), common.vocab.end(), *unk) == common.vocab.end())
      json.fail({"model", "unk_token"}, quote_token(*unk) + " is not in model.vocab");
    common.unk_token = *unk;
  }
  const std::vector<BpeMerge> merges = read_merges(json, common.vocab);
  return std::make_unique<BpeTokenizer>(std::move(common), merges, options);
}

WordPieceOptions read_wordpiece_options(const JsonConfig& json) {
  WordPieceOptions options;
  options.continuing_subword_prefix = json.get_string({"model", "continuing_subword_prefix"}).value_or("##");
  options.max_input_chars_per_word = static_cast<std::size_t>(
      json.get_int({"model", "max_input_chars_per_word"}, 1, std::int64_t{1} << 30).value_or(100));
  const std::string normalizer = component_type(json, {"normalizer"});
  if (normalizer.empty()) {
    options.normalize = false;
  } else if (normalizer == "BertNormalizer") {
    options.clean_text = json.get_bool({"normalizer", "clean_text"}).value_or(true);
    options.handle_chinese_chars = json.get_bool({"normalizer", "handle_chinese_chars"}).value_or(true);
    options.lowercase = json.get_bool({"normalizer", "lowercase"}).value_or(true);
    options.strip_accents = json.get_bool({"normalizer", "strip_accents"}).value_or(options.lowercase);
  } else {
    unsupported(json, {"normalizer", "type"}, normalizer, "WordPiece with BertNormalizer or no normalizer");
  }
  if (const std::string type = component_type(json, {"pre_tokenizer"}); type != "BertPreTokenizer")
    unsupported(json, {"pre_tokenizer", "type"}, type.empty() ? "none" : type, "WordPiece with BertPreTokenizer");
  const std::string decoder = component_type(json, {"decoder"});
  if (!decoder.empty() && decoder != "WordPiece")
    unsupported(json, {"decoder", "type"}, decoder, "WordPiece with the WordPiece decoder");
  options.decode_cleanup = json.get_bool({"decoder", "cleanup"}).value_or(true);
  return options;
}

std::unique_ptr<Tokenizer> make_wordpiece(const JsonConfig& json, TokenizerCommon common) {
  const WordPieceOptions options = read_wordpiece_options(json);
  common.unk_token = json.get_string({"model", "unk_token"}).value_or("[UNK]");
  if (std::find(common.vocab.begin(), common.vocab.end(), common.unk_token) == common.vocab.end())
    json.fail({"model", "unk_token"}, quote_token(common.unk_token) +
                                          " is not in model.vocab (WordPiece gives it to every word it cannot split)");
  return std::make_unique<WordPieceTokenizer>(std::move(common), options);
}

}  // namespace

std::unique_ptr<Tokenizer> read_tokenizer_json(const std::string& path) {
  const JsonConfig json(read_input_file(path, "tokenizer"), path);
  if (find_object(json, {"model"}) == nullptr)
    json.fail({"model"}, "is missing (the tokenizer's model: its type and vocab)");
  const std::string type = component_type(json, {"model"});
  if (type != "BPE" && type != "WordPiece")
    unsupported(json, {"model", "type"}, type, "BPE (GPT-2) and WordPiece (BERT) tokenizers");
  TokenizerCommon common;
  common.source = path;
  common.vocab = read_vocab_object(json, {"model", "vocab"});
  common.added = read_added_tokens(json);
  auto vocab_size = static_cast<std::int32_t>(common.vocab.size());
  for (const AddedToken& token : common.added) vocab_size = std::max(vocab_size, token.id + 1);
  if (const nlohmann::json* post = json.find({"post_processor"}))
    read_post_processor({*post, json.where({"post_processor"})}, vocab_size, common);
  return type == "BPE" ? make_bpe(json, std::move(common)) : make_wordpiece(json, std::move(common));
}

}  // namespace shardscope
