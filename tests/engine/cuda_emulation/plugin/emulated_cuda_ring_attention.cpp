// SPDX-License-Identifier: GPL-3.0-or-later
// ops/cuda/cuda_ring_attention.cu built as C++ for the emulated CUDA plugin (../cuda_emulation.h).
#include "cuda_emulation.h"
#include "ops/cuda/cuda_ring_attention.cu"  // NOLINT(bugprone-suspicious-include): the CUDA source itself
