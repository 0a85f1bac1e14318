// SPDX-License-Identifier: GPL-3.0-or-later
// A CUDA plugin from another engine version (test_device): only its ABI
// version differs, and the engine must refuse it by that, never call into it.
extern "C" __attribute__((visibility("default"))) int shardscope_cuda_abi_version(void) { return 0; }
