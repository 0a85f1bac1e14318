// SPDX-License-Identifier: GPL-3.0-or-later
// The BLAS kernel check (ops/cpu/blas_kernel.h): OpenBLAS put on a lesser
// kernel, as a failed detection leaves it, is moved to the one the CPU runs,
// and products stay right; a kernel chosen through OPENBLAS_CORETYPE is kept;
// shardscope-cli prints which kernel runs.
#include <QProcess>
#include <QProcessEnvironment>
#include <QTest>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "ops/cpu/blas_kernel.h"
#include "ops/cpu/cpu_backend.h"

using namespace shardscope;

namespace {
// Puts OPENBLAS_CORETYPE back as it was, and OpenBLAS on the kernel it ran, when a test ends.
class BlasState {
 public:
  BlasState() : core_(openblas_core()) {
    if (const char* v = std::getenv("OPENBLAS_CORETYPE")) saved_ = v;
  }
  ~BlasState() {
    unsetenv("OPENBLAS_CORETYPE");
    force_openblas_core(core_);
    if (saved_) setenv("OPENBLAS_CORETYPE", saved_->c_str(), 1);
  }

 private:
  std::string core_;
  std::optional<std::string> saved_;
};

// max |C - C_ref| / (sum |a||b|) over a 130 x 70 x 90 product through the backend's BLAS.
double gemm_error() {
  constexpr int M = 130, N = 70, K = 90;
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> a(M * K), b(K * N), c(M * N, 0.0f);
  for (float& x : a) x = dist(gen);
  for (float& x : b) x = dist(gen);
  blas_sgemm(Transpose::no, Transpose::no, M, N, K, 1.0f, a.data(), K, b.data(), N, 0.0f, c.data(), N);
  double worst = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double sum = 0, magnitude = 0;
      for (int k = 0; k < K; ++k) {
        sum += static_cast<double>(a[i * K + k]) * b[k * N + j];
        magnitude += std::abs(static_cast<double>(a[i * K + k]) * b[k * N + j]);
      }
      worst = std::max(worst, std::abs(c[i * N + j] - sum) / magnitude);
    }
  return worst;
}

QString train_output(const QProcessEnvironment& env) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(SHARDSCOPE_CLI, {"train", "--steps", "1", "--batch", "4", "--seq", "16", "--threads", "1"});
  if (!p.waitForFinished(120000)) return "timed out";
  return QString::fromUtf8(p.readAllStandardOutput() + p.readAllStandardError());
}
}  // namespace

class TestBlasKernel : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() { ensure_blas_kernel(); }  // the process's own check, done before the tests move the kernel
  void cores_map_to_their_instructions();
  void forced_fallback_is_corrected();
  void environment_choice_is_kept();
  void every_line_fits_one_log_event();
  void cli_prints_the_kernel_it_runs();
};

void TestBlasKernel::cores_map_to_their_instructions() {
  QCOMPARE(openblas_core_isa("Prescott"), VectorIsa::sse);
  QCOMPARE(openblas_core_isa("Nehalem"), VectorIsa::sse);
  QCOMPARE(openblas_core_isa("Sandybridge"), VectorIsa::avx);
  QCOMPARE(openblas_core_isa("haswell"), VectorIsa::avx2_fma);  // OpenBLAS compares without case
  QCOMPARE(openblas_core_isa("Zen"), VectorIsa::avx2_fma);
  QCOMPARE(openblas_core_isa("SkylakeX"), VectorIsa::avx512);
  QCOMPARE(openblas_core_isa("Cooperlake"), VectorIsa::avx512);
  QCOMPARE(openblas_core_isa("Skylake"), VectorIsa::unknown);
  QCOMPARE(openblas_core_isa(""), VectorIsa::unknown);
  for (VectorIsa isa : {VectorIsa::sse, VectorIsa::avx, VectorIsa::avx2_fma, VectorIsa::avx512})
    QCOMPARE(openblas_core_isa(openblas_core_for(isa)), isa);
  QVERIFY(openblas_core_for(VectorIsa::unknown).empty());
}

void TestBlasKernel::forced_fallback_is_corrected() {
  const VectorIsa cpu = cpu_vector_isa();
  if (cpu == VectorIsa::unknown || cpu == VectorIsa::sse)
    QSKIP("this CPU runs no kernel above SSE3: there is no lesser kernel to correct");
  BlasState restore;
  unsetenv("OPENBLAS_CORETYPE");
  // What OpenBLAS does on a CPU newer than its tables.
  QVERIFY(force_openblas_core("Prescott"));
  QCOMPARE(QString::fromStdString(openblas_core()), QString("Prescott"));
  QVERIFY2(gemm_error() < 1e-6, "the Prescott kernel's product");

  const BlasKernelChoice choice = choose_blas_kernel();
  QCOMPARE(choice.outcome, BlasKernelChoice::Outcome::corrected);
  QCOMPARE(QString::fromStdString(choice.detected), QString("Prescott"));
  QCOMPARE(QString::fromStdString(choice.running), QString::fromUtf8(openblas_core_for(cpu)));
  QCOMPARE(QString::fromStdString(openblas_core()), QString::fromStdString(choice.running));
  QVERIFY2(gemm_error() < 1e-6, "the corrected kernel's product");
  const QString line = QString::fromStdString(choice.line());
  QVERIFY2(line.contains("kernel " + QString::fromStdString(choice.running)) && line.contains("chose Prescott"),
           qPrintable(line));

  // Checked again on the right kernel: nothing to change.
  const BlasKernelChoice again = choose_blas_kernel();
  QCOMPARE(again.outcome, BlasKernelChoice::Outcome::as_chosen);
  QCOMPARE(again.running, choice.running);
}

void TestBlasKernel::environment_choice_is_kept() {
  const VectorIsa cpu = cpu_vector_isa();
  if (cpu == VectorIsa::unknown || cpu == VectorIsa::sse)
    QSKIP("this CPU runs no kernel above SSE3: OPENBLAS_CORETYPE=Prescott is its best");
  BlasState restore;
  setenv("OPENBLAS_CORETYPE", "Prescott", 1);
  QVERIFY(force_openblas_core("Prescott"));
  const BlasKernelChoice choice = choose_blas_kernel();
  QCOMPARE(choice.outcome, BlasKernelChoice::Outcome::set_by_environment);
  QCOMPARE(QString::fromStdString(openblas_core()), QString("Prescott"));
  const QString line = QString::fromStdString(choice.line());
  QVERIFY2(line.contains("as OPENBLAS_CORETYPE asks") && line.contains(QString::fromUtf8(openblas_core_for(cpu))),
           qPrintable(line));
}

void TestBlasKernel::every_line_fits_one_log_event() {
  using Outcome = BlasKernelChoice::Outcome;
  for (Outcome outcome : {Outcome::as_chosen, Outcome::corrected, Outcome::set_by_environment, Outcome::cannot_switch,
                          Outcome::check_failed}) {
    BlasKernelChoice choice;
    choice.outcome = outcome;
    choice.blas = "OpenBLAS 0.3.210";
    choice.detected = "Opteron_SSE3";
    choice.running = "Sandybridge";
    choice.cpu = VectorIsa::avx2_fma;
    QVERIFY2(choice.line().size() < 120, choice.line().c_str());  // kEventTextSize
  }
}

void TestBlasKernel::cli_prints_the_kernel_it_runs() {
  const VectorIsa cpu = cpu_vector_isa();
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.remove("OPENBLAS_CORETYPE");
  const QString expected = QString::fromUtf8(openblas_core_for(cpu));
  const QString plain = train_output(env);
  QVERIFY2(plain.contains("BLAS: OpenBLAS"), qPrintable(plain));
  if (cpu == VectorIsa::unknown || cpu == VectorIsa::sse) QSKIP("this CPU runs no kernel above SSE3");

  env.insert("SHARDSCOPE_SIMULATE_BLAS_FALLBACK", "Prescott");
  const QString corrected = train_output(env);
  QVERIFY2(corrected.contains("kernel " + expected) && corrected.contains("OpenBLAS chose Prescott (SSE3)"),
           qPrintable(corrected));
  QVERIFY2(corrected.contains("done: 1 steps"), qPrintable(corrected));

  env.remove("SHARDSCOPE_SIMULATE_BLAS_FALLBACK");
  env.insert("OPENBLAS_CORETYPE", "Prescott");
  const QString kept = train_output(env);
  QVERIFY2(kept.contains("kernel Prescott (SSE3) as OPENBLAS_CORETYPE asks"), qPrintable(kept));
}

QTEST_GUILESS_MAIN(TestBlasKernel)
#include "test_blas_kernel.moc"
