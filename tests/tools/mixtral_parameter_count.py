#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Prints the parameter counts of a Mixtral config.json as transformers builds it.

The model is made on the meta device (no memory, no weights), so Mixtral 8x7B
counts in a second. Its output is the fixture tests/fixtures/configs/
mixtral_8x7b_parameters.json, which test_config_import compares with
HfModelConfig's closed forms:

    python tests/tools/mixtral_parameter_count.py resources/examples/mixtral_8x7b_config.json \
        > tests/fixtures/configs/mixtral_8x7b_parameters.json
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
    layer = sum(p.numel() for p in model.model.layers[0].parameters())
    # The experts of a layer (transformers 5 stacks them: gate_up_proj, down_proj).
    experts = sum(p.numel() for name, p in model.model.layers[0].named_parameters() if ".experts." in name)
    print(json.dumps({"model": config.model_type, "transformers": transformers.__version__,
                      "causal_lm_parameters": total, "base_model_parameters": base,
                      "layer_parameters": layer, "layer_expert_parameters": experts}, indent=2))


if __name__ == "__main__":
    main(sys.argv[1])
