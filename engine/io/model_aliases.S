/* SPDX-License-Identifier: GPL-3.0-or-later
   Embeds the shipped model configs (resources/examples); the paths are set by
   engine/CMakeLists.txt. Each text ends at the next one's label. */
    .section .rodata
    .global shardscope_config_gpt3_175b
    .global shardscope_config_llama_2_7b
    .global shardscope_config_llama_2_13b
    .global shardscope_config_llama_2_70b
    .global shardscope_configs_end
shardscope_config_gpt3_175b:
    .incbin SHARDSCOPE_CONFIG_GPT3_175B
shardscope_config_llama_2_7b:
    .incbin SHARDSCOPE_CONFIG_LLAMA_2_7B
shardscope_config_llama_2_13b:
    .incbin SHARDSCOPE_CONFIG_LLAMA_2_13B
shardscope_config_llama_2_70b:
    .incbin SHARDSCOPE_CONFIG_LLAMA_2_70B
shardscope_configs_end:
    .byte 0
    .section .note.GNU-stack,"",@progbits
