// SPDX-License-Identifier: GPL-3.0-or-later
// Hot element-wise loops are compiled for several x86-64 levels at once
// (AVX-512, AVX2+FMA, baseline) and the best one is picked when the program
// loads, so one binary is fast on new CPUs and still runs on old ones.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SS_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define SS_CPU_CLONES
#endif
