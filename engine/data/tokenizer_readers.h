// SPDX-License-Identifier: GPL-3.0-or-later
// The readers behind load_tokenizer (tokenizer.h): one per file layout. Every
// refusal is a ConfigError (FormatError for JSON that does not parse) naming
// the file and the field, entry or line at fault.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "data/tokenizer.h"

namespace shardscope {

class JsonConfig;

// tokenizer.json: model.type "BPE" (with a ByteLevel pre-tokenizer) or "WordPiece"
// (BertNormalizer, BertPreTokenizer), its added_tokens and post_processor (tokenizer_json.cpp).
std::unique_ptr<Tokenizer> read_tokenizer_json(const std::string& path);
// vocab.txt (one token a line, the line number its id) and tokenizer_config.json
// beside it if present (do_lower_case, strip_accents, tokenize_chinese_chars, the
// special tokens' names): BERT's WordPiece with [CLS] ... [SEP] (tokenizer_files.cpp).
std::unique_ptr<Tokenizer> read_vocab_txt(const std::string& path);
// GPT-2's vocab.json ({"token": id}) and merges.txt ("left right" a line, in rank order);
// add_prefix_space from tokenizer_config.json beside them if present (tokenizer_files.cpp).
std::unique_ptr<Tokenizer> read_vocab_json_and_merges(const std::string& vocab_path, const std::string& merges_path);

// The tokens of the object at `path` ({"token": id, ...}) by id. The ids must be
// dense: 0..n-1, each once (ConfigError naming the token and its line otherwise).
std::vector<std::string> read_vocab_object(const JsonConfig& json, const std::vector<std::string>& path);

// 'token', cut to a readable length, for messages.
std::string quote_token(const std::string& token);

}  // namespace shardscope
