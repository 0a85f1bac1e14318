/* SPDX-License-Identifier: GPL-3.0-or-later
   Embeds the default corpus; SHARDSCOPE_CORPUS_PATH is set by engine/CMakeLists.txt. */
    .section .rodata
    .global shardscope_default_corpus_begin
    .global shardscope_default_corpus_end
    .balign 16
shardscope_default_corpus_begin:
    .incbin SHARDSCOPE_CORPUS_PATH
shardscope_default_corpus_end:
    .byte 0
    .section .note.GNU-stack,"",@progbits
