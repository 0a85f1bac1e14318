#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Prints the parameter counts of a DeepSeek-V3 config.json as transformers builds it.

The model is made on the meta device (no memory, no weights). transformers
builds num_hidden_layers decoder layers and leaves the multi-token-prediction
layers (num_nextn_predict_layers) out; the router's e_score_correction_bias is
a buffer, not a parameter. The output is the fixture tests/fixtures/configs/
deepseek_v3_parameters.json, which test_config_import compares with
HfModelConfig's closed forms:

    python tests/tools/deepseek_v3_parameter_count.py resources/examples/deepseek_v3_config.json \
        > tests/fixtures/configs/deepseek_v3_parameters.json
"""
import json
import sys

import torch
import transformers


def main(path: str) -> None:
    config = transformers.AutoConfig.from_pretrained(path)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    total = sum(p.numel() for p in model.parameters())
    base = sum(p.numel() for p in model.model.parameters())
    dense = model.model.layers[0]
    moe = model.model.layers[config.first_k_dense_replace]
    # The routed experts of a MoE layer (transformers 5 stacks them: gate_up_proj, down_proj).
    experts = sum(p.numel() for name, p in moe.named_parameters() if ".experts." in name)
    print(json.dumps({"model": config.model_type, "transformers": transformers.__version__,
                      "causal_lm_parameters": total, "base_model_parameters": base,
                      "decoder_layers": len(model.model.layers),
                      "dense_layer_parameters": sum(p.numel() for p in dense.parameters()),
                      "layer_parameters": sum(p.numel() for p in moe.parameters()),
                      "layer_expert_parameters": experts}, indent=2))


if __name__ == "__main__":
    main(sys.argv[1])
