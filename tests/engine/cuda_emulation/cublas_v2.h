// SPDX-License-Identifier: GPL-3.0-or-later
// Stand-in for cuBLAS's header under the CPU emulation: only the status names.
#pragma once

enum cublasStatus_t { CUBLAS_STATUS_SUCCESS = 0 };
inline const char* cublasGetStatusName(cublasStatus_t) { return "CUBLAS_STATUS_SUCCESS"; }
inline const char* cublasGetStatusString(cublasStatus_t) { return "success"; }
