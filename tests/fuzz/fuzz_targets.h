// SPDX-License-Identifier: GPL-3.0-or-later
// The fuzz targets: one per parser of user input. A target takes the bytes of
// one file and does with it what the program does when a user opens it; it may
// throw ConfigError or FormatError (engine/core/error.h), which the program
// turns into "exit 2 with a message", and nothing else: another exception, a
// crash, a sanitizer report or a hang is a failure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "mutator.h"

namespace shardscope::fuzz {

struct FuzzTarget {
  std::string_view name;  // tests/fuzz/corpus/<name>/, the ctest test fuzz_<name>
  void (*run)(std::string_view bytes);
  std::vector<std::string> (*dictionary)();  // keys and values of the format, for the mutator
  LengthPrefixedJson length_field;           // a binary header's length of the JSON after it
};

void fuzz_hf_config(std::string_view bytes);          // Hugging Face config.json (estimate --model)
void fuzz_deepspeed_config(std::string_view bytes);   // DeepSpeed JSON (--deepspeed)
void fuzz_accelerate_config(std::string_view bytes);  // accelerate YAML (--accelerate)
void fuzz_recording(std::string_view bytes);          // .ssrun (export, the window's Open)
void fuzz_safetensors(std::string_view bytes);        // .safetensors (reference weights)
void fuzz_lesson(std::string_view bytes);             // a lesson's lesson.json
void fuzz_run_config(std::string_view bytes);         // run-config JSON (a recording's metadata)
void fuzz_tokenizer_json(std::string_view bytes);     // a Hugging Face tokenizer.json (tokenize --tokenizer)
void fuzz_tokenize_text(std::string_view bytes);      // the text to tokenize (tokenize --text), GPT-2 and BERT

void fuzz_checkpoint_manifest(std::string_view bytes);  // a checkpoint's manifest.json (train --resume)

const std::vector<FuzzTarget>& fuzz_targets();
const FuzzTarget* find_fuzz_target(std::string_view name);

}  // namespace shardscope::fuzz
