// SPDX-License-Identifier: GPL-3.0-or-later
// Which matrix-multiply kernel the BLAS runs, checked against the CPU.
//
// OpenBLAS built with DYNAMIC_ARCH (Debian's) picks its kernel once, as the
// library loads, from the CPU's family and model numbers. A CPU newer than its
// tables (a cloud VM's "Intel(R) Xeon(R) Processor" among them) falls back to
// the SSE3 "Prescott" kernel: 3-4x slower on an AVX-512 machine, and silent.
// ensure_blas_kernel() compares the kernel chosen with what the CPU itself
// says it runs (cpuid, and the OS saving the wider registers), and where the
// BLAS chose a lesser one, makes OpenBLAS choose again as OPENBLAS_CORETYPE
// would have made it, checks one product against a plain loop, and keeps the
// better kernel only if it agrees.
#pragma once

#include <string>
#include <string_view>

namespace shardscope {

// The vector instructions a matrix kernel is written for, weakest first.
enum class VectorIsa { unknown, sse, avx, avx2_fma, avx512 };

// "SSE3", "AVX", "AVX2+FMA", "AVX-512".
std::string_view vector_isa_name(VectorIsa isa);

// The best VectorIsa this CPU and OS run (AVX-512 means F, BW, VL, DQ and CD,
// what OpenBLAS's SkylakeX kernels use). unknown on other architectures.
VectorIsa cpu_vector_isa();

// The instruction set an OpenBLAS core's kernels are written for
// ("Prescott" -> sse, "Haswell" and "Zen" -> avx2_fma, "SkylakeX" -> avx512);
// unknown for a name it does not know.
VectorIsa openblas_core_isa(std::string_view core);

// The OpenBLAS core to run on a CPU with `isa`: SkylakeX, Haswell, Sandybridge
// or Prescott; empty for unknown.
std::string_view openblas_core_for(VectorIsa isa);

struct BlasKernelChoice {
  enum class Outcome {
    as_chosen,           // the BLAS chose a kernel that uses what the CPU has
    corrected,           // it chose a lesser one; now runs `running`
    set_by_environment,  // OPENBLAS_CORETYPE chose it; kept, as the user asked
    cannot_switch,       // a lesser kernel, and this BLAS cannot choose again
    check_failed,        // the better kernel disagreed with a plain loop: switched back
  };
  Outcome outcome = Outcome::as_chosen;
  std::string blas;         // "OpenBLAS 0.3.21"
  std::string detected;     // the core the BLAS chose by itself
  std::string running;      // the core it runs now
  std::string environment;  // OPENBLAS_CORETYPE's value, where it chose the kernel
  VectorIsa cpu = VectorIsa::unknown;

  // One line for logs: "BLAS: OpenBLAS 0.3.21, kernel SkylakeX (AVX-512; this CPU has AVX-512)".
  std::string line() const;
};

// Checks, and where needed corrects, the BLAS's kernel, once per process; every
// BLAS call waits for it. Returns the same choice to every caller.
const BlasKernelChoice& ensure_blas_kernel();

// The same check made now, from the kernel running now (tests: after
// force_openblas_core has put the BLAS on a lesser kernel, as a failed
// detection would). Not while another thread runs a BLAS call.
BlasKernelChoice choose_blas_kernel();

// Makes OpenBLAS run `core` ("Prescott", "SkylakeX", ...), as OPENBLAS_CORETYPE
// would at load. False where this BLAS cannot, or does not have that core.
// Not while another thread runs a BLAS call.
bool force_openblas_core(std::string_view core);

// The core OpenBLAS runs now ("" where the BLAS is not OpenBLAS).
std::string openblas_core();

}  // namespace shardscope
