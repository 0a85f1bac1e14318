// SPDX-License-Identifier: GPL-3.0-or-later
// The BLAS kernel check (blas_kernel.h). OpenBLAS reads OPENBLAS_CORETYPE in
// gotoblas_dynamic_init(), which its load runs once; calling
// gotoblas_dynamic_quit() then gotoblas_dynamic_init() again with the variable
// set chooses again, and the core's init() sets its block sizes. Its thread
// server and buffers do not depend on the core. Both functions are exported by
// DYNAMIC_ARCH builds only, so they are weak here: a BLAS without them keeps
// its kernel and the line says so.
#include "ops/cpu/blas_kernel.h"

#include <cblas.h>
#include <strings.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <vector>

extern "C" {
void gotoblas_dynamic_init(void) __attribute__((weak));
void gotoblas_dynamic_quit(void) __attribute__((weak));
}

namespace shardscope {

namespace {
constexpr const char* kCoreTypeVariable = "OPENBLAS_CORETYPE";
// Tests and bench/: put OpenBLAS on this core first, as a failed detection
// would, so that the correction is seen on a CPU that OpenBLAS recognises.
constexpr const char* kSimulateFallbackVariable = "SHARDSCOPE_SIMULATE_BLAS_FALLBACK";

struct CoreIsa {
  const char* core;
  VectorIsa isa;
};
// OpenBLAS 0.3's x86-64 core names (driver/others/dynamic.c) by the
// instructions their sgemm kernels use.
constexpr std::array<CoreIsa, 22> kCores{{
    {"Katmai", VectorIsa::sse},        {"Coppermine", VectorIsa::sse}, {"Northwood", VectorIsa::sse},
    {"Prescott", VectorIsa::sse},      {"Banias", VectorIsa::sse},     {"Atom", VectorIsa::sse},
    {"Core2", VectorIsa::sse},         {"Penryn", VectorIsa::sse},     {"Dunnington", VectorIsa::sse},
    {"Nehalem", VectorIsa::sse},       {"Opteron", VectorIsa::sse},    {"Opteron_SSE3", VectorIsa::sse},
    {"Barcelona", VectorIsa::sse},     {"Nano", VectorIsa::sse},       {"Sandybridge", VectorIsa::avx},
    {"Bulldozer", VectorIsa::avx},     {"Piledriver", VectorIsa::avx}, {"Steamroller", VectorIsa::avx},
    {"Haswell", VectorIsa::avx2_fma},  {"Zen", VectorIsa::avx2_fma},   {"SkylakeX", VectorIsa::avx512},
    {"Cooperlake", VectorIsa::avx512},
}};

bool can_choose_again() {
  return gotoblas_dynamic_init != nullptr && gotoblas_dynamic_quit != nullptr;
}

// OpenBLAS chooses its core again with OPENBLAS_CORETYPE set to `core`, then
// the variable is put back as it was, so that the processes this one starts
// make their own choice.
void choose_again_with(const std::string& core) {
  const char* before = std::getenv(kCoreTypeVariable);
  const std::optional<std::string> saved = before != nullptr ? std::optional<std::string>(before) : std::nullopt;
  setenv(kCoreTypeVariable, core.c_str(), 1);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  if (saved)
    setenv(kCoreTypeVariable, saved->c_str(), 1);
  else
    unsetenv(kCoreTypeVariable);
}

// One product through the BLAS against a plain double loop: 61 x 47 times
// 47 x 53, alpha 0.75, beta 0.5, values in [-1, 1).
bool blas_agrees_with_a_plain_loop() {
  constexpr int M = 61, N = 53, K = 47;
  std::vector<float> a(M * K), b(K * N), c(M * N);
  std::uint32_t state = 12345;
  const auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / static_cast<float>(1 << 23) - 1.0f;
  };
  for (float& x : a) x = next();
  for (float& x : b) x = next();
  for (float& x : c) x = next();
  const std::vector<float> c0 = c;
  openblas_set_num_threads(1);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 0.75f, a.data(), K, b.data(), N, 0.5f, c.data(), N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double sum = 0, magnitude = 0;
      for (int k = 0; k < K; ++k) {
        sum += static_cast<double>(a[i * K + k]) * b[k * N + j];
        magnitude += std::abs(static_cast<double>(a[i * K + k]) * b[k * N + j]);
      }
      const double expected = 0.75 * sum + 0.5 * c0[i * N + j];
      if (!(std::abs(c[i * N + j] - expected) <= 1e-5 * magnitude + 1e-6)) return false;
    }
  return true;
}

std::string blas_version() {
  const std::string config = openblas_get_config();  // "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ..."
  const std::size_t first = config.find(' ');
  const std::size_t second = first == std::string::npos ? first : config.find(' ', first + 1);
  return config.substr(0, second);
}

std::string isa_of(const std::string& core) {
  const VectorIsa isa = openblas_core_isa(core);
  return isa == VectorIsa::unknown ? "" : " (" + std::string(vector_isa_name(isa)) + ")";
}
}  // namespace

std::string_view vector_isa_name(VectorIsa isa) {
  switch (isa) {
    case VectorIsa::sse:
      return "SSE3";
    case VectorIsa::avx:
      return "AVX";
    case VectorIsa::avx2_fma:
      return "AVX2+FMA";
    case VectorIsa::avx512:
      return "AVX-512";
    case VectorIsa::unknown:
      break;
  }
  return "unknown";
}

VectorIsa cpu_vector_isa() {
#if defined(__x86_64__)
  // libgcc's cpuid reading also checks XGETBV: a feature the OS does not save
  // the registers of is reported absent.
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512cd"))
    return VectorIsa::avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return VectorIsa::avx2_fma;
  if (__builtin_cpu_supports("avx")) return VectorIsa::avx;
  return VectorIsa::sse;
#else
  return VectorIsa::unknown;
#endif
}

VectorIsa openblas_core_isa(std::string_view core) {
  for (const CoreIsa& entry : kCores)
    if (core.size() == std::string_view(entry.core).size() && strncasecmp(core.data(), entry.core, core.size()) == 0)
      return entry.isa;
  return VectorIsa::unknown;
}

std::string_view openblas_core_for(VectorIsa isa) {
  switch (isa) {
    case VectorIsa::avx512:
      return "SkylakeX";
    case VectorIsa::avx2_fma:
      return "Haswell";
    case VectorIsa::avx:
      return "Sandybridge";
    case VectorIsa::sse:
      return "Prescott";
    case VectorIsa::unknown:
      break;
  }
  return "";
}

std::string openblas_core() {
  return openblas_get_corename();
}

bool force_openblas_core(std::string_view core) {
  if (!can_choose_again() || openblas_core_isa(core) == VectorIsa::unknown) return false;
  const std::string wanted(core);
  choose_again_with(wanted);
  return strcasecmp(openblas_core().c_str(), wanted.c_str()) == 0;
}

BlasKernelChoice choose_blas_kernel() {
  BlasKernelChoice choice;
  choice.blas = blas_version();
  choice.detected = choice.running = openblas_core();
  choice.cpu = cpu_vector_isa();
  const VectorIsa chosen = openblas_core_isa(choice.detected);
  if (choice.cpu == VectorIsa::unknown || chosen == VectorIsa::unknown || chosen >= choice.cpu) return choice;
  if (const char* set = std::getenv(kCoreTypeVariable); set != nullptr) {
    choice.environment = set;
    choice.outcome = BlasKernelChoice::Outcome::set_by_environment;
    return choice;
  }
  if (!can_choose_again()) {
    choice.outcome = BlasKernelChoice::Outcome::cannot_switch;
    return choice;
  }
  const std::string target(openblas_core_for(choice.cpu));
  if (force_openblas_core(target) && blas_agrees_with_a_plain_loop()) {
    choice.outcome = BlasKernelChoice::Outcome::corrected;
    choice.running = openblas_core();
    return choice;
  }
  force_openblas_core(choice.detected);  // the BLAS's own choice, as before
  choice.outcome = BlasKernelChoice::Outcome::check_failed;
  choice.running = openblas_core();
  return choice;
}

const BlasKernelChoice& ensure_blas_kernel() {
  static const BlasKernelChoice choice = [] {
    if (const char* fallback = std::getenv(kSimulateFallbackVariable); fallback != nullptr && *fallback != '\0')
      force_openblas_core(fallback);
    return choose_blas_kernel();
  }();
  return choice;
}

std::string BlasKernelChoice::line() const {
  // Under 120 bytes: the GUI's log shows it as one event (kEventTextSize).
  const std::string text = "BLAS: " + blas + ", kernel " + running + isa_of(running);
  const std::string on_cpu = " this " + std::string(vector_isa_name(cpu)) + " CPU";
  const std::string better(openblas_core_for(cpu));
  switch (outcome) {
    case Outcome::as_chosen:
      return text + (cpu == VectorIsa::unknown ? "" : ", matching" + on_cpu);
    case Outcome::corrected:
      return text + "; OpenBLAS chose " + detected + isa_of(detected) + " for" + on_cpu;
    case Outcome::set_by_environment:
      return text + " as OPENBLAS_CORETYPE asks;" + on_cpu + " runs " + better + " faster";
    case Outcome::cannot_switch:
      return text + "; on" + on_cpu + " set OPENBLAS_CORETYPE=" + better + ": faster";
    case Outcome::check_failed:
      return text + "; " + better + " disagreed with a plain loop on" + on_cpu;
  }
  return text;
}

}  // namespace shardscope
