// SPDX-License-Identifier: GPL-3.0-or-later
// Tokenizers of pretrained models, read from Hugging Face files: GPT-2's
// byte-level BPE (bpe_tokenizer.h) and BERT's WordPiece (wordpiece_tokenizer.h),
// each from `tokenizer.json` or from the older files (`vocab.json` +
// `merges.txt`; `vocab.txt` + `tokenizer_config.json`). They give the ids the
// Hugging Face `tokenizers` library gives (tests/fixtures/tokenizers, made by
// tests/tools/make_tokenizer_fixtures.py): added tokens ([MASK], <|endoftext|>)
// are found in the text first, the rest is normalized, pre-tokenized and split
// into subwords, and the post-processor's tokens ([CLS] ... [SEP]) are added.
// encode never pads or truncates (a tokenizer.json's "padding" and "truncation"
// are not applied): the caller chooses the sequence length.
// ByteTokenizer (byte_tokenizer.h) stays the tokenizer of models trained from scratch.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope {

// A token matched in the text before anything else (tokenizer.json "added_tokens").
struct AddedToken {
  std::string content;
  std::int32_t id = 0;
  bool special = false;      // a control token: decode(ids, true) leaves it out
  bool single_word = false;  // only where no letter, digit or '_' touches it
  bool lstrip = false;       // takes the whitespace on its left with it
  bool rstrip = false;       // ... and on its right
  bool normalized = false;   // matched in the normalized text (lowercased, ...), else in the text as given
};

// Ids of the well-known special tokens, -1 where the tokenizer has none.
struct SpecialTokenIds {
  std::int32_t unk = -1, pad = -1, cls = -1, sep = -1, mask = -1, bos = -1, eos = -1;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // The ids of `text` (UTF-8; ConfigError naming the byte if it is not), with
  // the post-processor's special tokens unless add_special_tokens is false.
  virtual std::vector<std::int32_t> encode(std::string_view text, bool add_special_tokens = true) const = 0;
  // The text of `ids`; special tokens left out when skip_special_tokens; ids
  // the tokenizer does not have are skipped (as the tokenizers library does).
  virtual std::string decode(const std::vector<std::int32_t>& ids, bool skip_special_tokens = true) const = 0;

  virtual std::string_view kind() const = 0;  // "bpe" or "wordpiece"
  // Every id is below this: the model's vocabulary and the added tokens.
  virtual std::int32_t vocab_size() const = 0;
  // The token's text as the vocabulary writes it (GPT-2's "Ġthe", BERT's "##ing"); nullopt for an unknown id.
  virtual std::optional<std::string> token_text(std::int32_t id) const = 0;
  virtual std::optional<std::int32_t> token_id(std::string_view token) const = 0;
  virtual const std::vector<AddedToken>& added_tokens() const = 0;
  virtual const SpecialTokenIds& special_ids() const = 0;
  // The file(s) it was read from, for messages.
  virtual const std::string& source() const = 0;
};

// Reads the tokenizer at `path`: a tokenizer.json (any *.json that is not
// vocab.json), a vocab.txt (WordPiece, with tokenizer_config.json beside it if
// present), a vocab.json (with merges.txt beside it), or a directory holding
// one of them (tokenizer.json first). ConfigError / FormatError naming the
// file and the field, line or entry when it cannot be read or is inconsistent,
// and naming what was looked for when the directory holds none.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path);

}  // namespace shardscope
