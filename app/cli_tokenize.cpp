// SPDX-License-Identifier: GPL-3.0-or-later
// shardscope-cli tokenize: reads a tokenizer (tokenizer.json, vocab.txt,
// vocab.json + merges.txt, or their directory) and prints the ids and tokens of
// --text, and the text decoded back from the ids, so users and tests can
// compare them with the Hugging Face tokenizers library.
#include "cli_tokenize.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli_args.h"
#include "data/tokenizer.h"

namespace shardscope::cli {

int run_tokenize(const std::vector<std::string>& args) {
  std::string path, text;
  bool have_text = false, json = false, no_special = false;
  ArgParser parser("shardscope-cli tokenize",
                   "Tokenize a text with a GPT-2 (byte-level BPE) or BERT (WordPiece) tokenizer from Hugging Face\n"
                   "files, as the tokenizers library does; prints the ids, the tokens and the text decoded back.");
  parser.add_string("--tokenizer", "PATH",
                    "tokenizer.json, vocab.txt (BERT), vocab.json with merges.txt beside it (GPT-2), or a directory "
                    "holding them",
                    &path);
  parser.add_flag("--text", "TEXT", "The text to tokenize (UTF-8; may be empty)", "",
                  [&](const std::string& value) { text = value, have_text = true; });
  parser.add_switch("--no-special-tokens", "Leave out the tokens the post-processor adds ([CLS] ... [SEP])",
                    &no_special);
  parser.add_switch("--json", "Print one JSON object: tokenizer, vocab_size, ids, tokens, decoded", &json);
  if (!parser.parse(args)) return 0;
  if (path.empty()) throw UsageError("--tokenizer PATH is required (see shardscope-cli tokenize --help)");
  if (!have_text) throw UsageError("--text TEXT is required (see shardscope-cli tokenize --help)");

  const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(path);
  const std::vector<std::int32_t> ids = tokenizer->encode(text, !no_special);
  std::vector<std::string> tokens;
  for (std::int32_t id : ids) tokens.push_back(tokenizer->token_text(id).value_or(""));
  const std::string decoded = tokenizer->decode(ids);
  if (json) {
    const nlohmann::json out = {{"tokenizer", tokenizer->kind()},
                                {"source", tokenizer->source()},
                                {"vocab_size", tokenizer->vocab_size()},
                                {"ids", ids},
                                {"tokens", tokens},
                                {"decoded", decoded}};
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  std::printf("%s tokenizer, vocabulary %d (%s)\n", std::string(tokenizer->kind()).c_str(), tokenizer->vocab_size(),
              tokenizer->source().c_str());
  std::printf("%zu ids:", ids.size());
  for (std::int32_t id : ids) std::printf(" %d", id);
  std::printf("\ntokens:");
  for (const std::string& token : tokens)  // JSON-quoted: a token may hold spaces or control characters
    std::printf(" %s", nlohmann::json(token).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  std::printf("\ndecoded: %s\n", decoded.c_str());
  return 0;
}

}  // namespace shardscope::cli
