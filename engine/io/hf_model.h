// SPDX-License-Identifier: GPL-3.0-or-later
// Hugging Face model directories (config.json + model.safetensors) in and out:
// the one place that maps Transformers' parameter names and layouts onto
// ShardScope's (model/parameter_layout.h) and back.
//
//   GPT-2 (GPT2LMHeadModel; GPT2Model without the "transformer." prefix)
//     transformer.wte / wpe                 -> embed.tokens / embed.positions
//     transformer.h.N.ln_1 / ln_2           -> layerN.ln1 / ln2            (pre-LN)
//     transformer.h.N.attn.c_attn           -> layerN.attn.qkv    Conv1D: weight (in, out), ours (out, in)
//     transformer.h.N.attn.c_proj           -> layerN.attn.proj   Conv1D
//     transformer.h.N.mlp.c_fc / c_proj     -> layerN.mlp.fc / proj  Conv1D
//     transformer.ln_f                      -> final_ln
//     lm_head.weight                        tied to wte (read only to check it is)
//     attn.bias, attn.masked_bias           causal-mask buffers of older files, ignored
//   BERT (BertForMaskedLM with "bert." and the cls.predictions head; BertModel
//   without either, as sentence-transformers ship all-MiniLM-L6-v2)
//     embeddings.word/position/token_type_embeddings, embeddings.LayerNorm -> embed.*
//     encoder.layer.N.attention.self.query/key/value   -> layerN.attn.qkv rows [0,C) [C,2C) [2C,3C)
//     encoder.layer.N.attention.output.dense           -> layerN.attn.proj
//     encoder.layer.N.attention.output.LayerNorm       -> layerN.ln1      (post-LN)
//     encoder.layer.N.intermediate.dense / output.dense -> layerN.mlp.fc / proj
//     encoder.layer.N.output.LayerNorm                 -> layerN.ln2
//     pooler.dense (optional)                          -> pooler.dense
//     cls.predictions.transform.dense / LayerNorm, cls.predictions.bias -> mlm.dense / mlm.ln / mlm.decoder_bias
//     cls.predictions.decoder.weight/bias, embeddings.position_ids  tied or buffers, ignored
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.h"

namespace shardscope {

// How the tensors of a directory are named.
enum class HfLayout {
  gpt2_lm_head,    // GPT2LMHeadModel: "transformer." prefix
  gpt2_model,      // GPT2Model: no prefix
  bert_masked_lm,  // BertForMaskedLM: "bert." prefix, cls.predictions head
  bert_model,      // BertModel: no prefix, no MLM head
};

// One Hugging Face tensor and where its values go in ShardScope's parameter
// `ours`: elements [offset, offset + numel of hf_shape), transposed (Conv1D:
// (in, out) there, (out, in) here) or as they are.
struct HfTensor {
  std::string hf_name;
  std::string ours;
  std::vector<std::int64_t> hf_shape;
  std::int64_t offset = 0;
  bool transposed = false;
};

// Every tensor a directory of this layout holds for `config` (pooler only
// where config.pooler), in ShardScope's parameter order.
std::vector<HfTensor> hf_tensors(const ModelConfig& config, HfLayout layout);
// Tensors a file may hold that carry nothing of their own (tied copies, buffers).
bool hf_ignored_tensor(const std::string& hf_name);

struct HfModel {
  std::string dir;
  ModelConfig config;  // from config.json (name: the directory)
  HfLayout layout = HfLayout::gpt2_lm_head;
  std::vector<float> parameters;   // the whole model, in ParameterLayout(config) order
  std::vector<std::string> notes;  // what the load did beyond copying (a fresh MLM head)
};

// The model of DIR/config.json (GPT-2 or BERT that ShardScope runs exactly).
// ConfigError naming the file and key otherwise.
ModelConfig read_hf_model_config(const std::string& dir);
// Whether DIR holds a tokenizer (tokenizer.json, vocab.txt or vocab.json) for
// data/tokenizer.h's load_tokenizer: --init-from then tokenizes --data with it.
bool has_hf_tokenizer(const std::string& dir);
// config.json and model.safetensors (F32, F16 or BF16; converted to fp32).
// Refuses, naming the file and the tensor: pytorch_model.bin only (with the
// command that converts it), sharded or missing safetensors, missing,
// unexpected or misshapen tensors, an lm_head that is not tied. A BertModel
// (no MLM head) gets a freshly initialized head, said in `notes`.
HfModel read_hf_model_dir(const std::string& dir);

// Whether Transformers has a class whose tensor names hold the model
// (GPT2LMHeadModel, BertForMaskedLM): not a mixture of experts, whose router
// and stacked experts GPT-2's and BERT's names have no place for.
bool has_hf_layout(const ModelConfig& config);
// The manifest's word on why a checkpoint of `config` holds no Hugging Face
// weights beside it; empty when it does (has_hf_layout).
std::string hf_layout_missing_reason(const ModelConfig& config);

// Writes DIR/config.json and DIR/model.safetensors (F32) as GPT2LMHeadModel or
// BertForMaskedLM, which transformers' from_pretrained loads with no missing or
// unexpected keys (a BERT pooler, which BertForMaskedLM lacks, is left out). `parameters`: the whole model in
// ParameterLayout(config) order, on the host. DIR is created if absent (its parent must exist); each file is written
// through OutputFile (a temporary renamed into place). `flag` names the option in error messages. Throws OutputError
// (and for a model without has_hf_layout).
void write_hf_model_dir(const std::string& dir, const ModelConfig& config, const float* parameters,
                        const std::string& flag = "");
// Copies the tokenizer files of model directory `from` (tokenizer.json,
// tokenizer_config.json, special_tokens_map.json, vocab.txt, vocab.json,
// merges.txt: those present) into `to`, so a saved model carries the
// tokenizer it was trained with. Nothing when `from` is empty. OutputError
// naming the file when a copy fails.
void copy_tokenizer_files(const std::string& from, const std::string& to);
// The config.json text write_hf_model_dir writes.
std::string hf_config_json(const ModelConfig& config);

}  // namespace shardscope
