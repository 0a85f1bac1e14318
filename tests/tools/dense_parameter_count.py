#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Prints the parameter counts transformers makes of dense decoder config.json files.

For the Llama-shaped families the estimator plans but the engine does not train
(Qwen2, Qwen3, Phi-3, Gemma, Gemma2): each file's model is built on the meta device (no memory,
no weights, a 7B model in a second) and its tensors summed. The output, one
entry per file named by its base name, is the fixture that
test_hf_parameter_counts compares with HfModelConfig's closed forms:

    python tests/tools/dense_parameter_count.py tests/fixtures/configs/qwen2*_config.json \
        > tests/fixtures/configs/qwen2_parameters.json
"""
import json
import os
import sys

import torch
import transformers


def counts(path: str) -> dict:
    config = transformers.AutoConfig.from_pretrained(path)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    # parameters() yields a tied lm_head once, as the estimator counts it.
    return {"model": config.model_type,
            "causal_lm_parameters": sum(p.numel() for p in model.parameters()),
            "base_model_parameters": sum(p.numel() for p in model.model.parameters()),
            "layer_parameters": sum(p.numel() for p in model.model.layers[0].parameters()),
            "largest_module_parameters": max(sum(p.numel() for p in m.parameters(recurse=False))
                                             for m in model.modules())}


def main(paths: list[str]) -> None:
    result = {"transformers": transformers.__version__}
    for path in paths:
        result[os.path.basename(path)] = counts(path)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main(sys.argv[1:])
