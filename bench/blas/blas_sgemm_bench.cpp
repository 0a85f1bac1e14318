// SPDX-License-Identifier: GPL-3.0-or-later
// ShardScope - single-precision GEMM benchmark for choosing a CPU BLAS.
// Copyright (C) The ShardScope authors.
//
// This program is free software: you can redistribute it and/or modify it under
// the terms of the GNU General Public License as published by the Free Software
// Foundation, either version 3 of the License, or (at your option) any later
// version. This program is distributed in the hope that it will be useful, but
// WITHOUT ANY WARRANTY; see the GNU General Public License for more details.
// You should have received a copy of it along with this program; if not, see
// <https://www.gnu.org/licenses/>.
//
// Times the three GEMMs of an nn.Linear (row-major, Y[M,N] = X[M,K] W[N,K]^T):
//   fwd  Y  = X  @ W^T   sgemm(N,T, M,N,K)
//   dX   dX = dY @ W     sgemm(N,N, M,K,N)
//   dW   dW+= dY^T @ X   sgemm(T,N, N,K,M)   (beta = 1)
// in three threading modes:
//   lib1   one call, library limited to 1 thread
//   lib2   one call, library allowed 2 threads
//   split2 library limited to 1 thread, called concurrently from 2 of our own
//          threads, each computing half of the output rows (how the engine
//          would parallelise ranks/rows itself)
// Each library is a separate binary (OpenBLAS and BLIS both export cblas_*):
//   g++ -O2 -std=c++20 -DUSE_OPENBLAS blas_sgemm_bench.cpp -o bench_openblas $(pkg-config --cflags --libs openblas) -pthread
//   g++ -O2 -std=c++20 -DUSE_BLIS blas_sgemm_bench.cpp -o bench_blis -I/usr/include/x86_64-linux-gnu/blis-openmp -lblis -fopenmp
//   g++ -O2 -std=c++20 -DUSE_DNNL blas_sgemm_bench.cpp -o bench_dnnl -ldnnl -fopenmp
// (or: cmake -S bench/blas -B build-blas && cmake --build build-blas)
// Run: ./bench_openblas [reps]; OPENBLAS_CORETYPE / BLIS_ARCH_TYPE are honoured
// because they are read when the library loads.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#if defined(USE_OPENBLAS)
#include <cblas.h>
static const char* kLib = "openblas";
static void set_threads(int n) { openblas_set_num_threads(n); }
static std::string lib_info() { return std::string(openblas_get_config()) + " core=" + openblas_get_corename(); }
#elif defined(USE_BLIS)
#include <blis.h>
#include <omp.h>
static const char* kLib = "blis";
static void set_threads(int n) { bli_thread_set_num_threads(n); omp_set_num_threads(n); }
static std::string lib_info() { return std::string("BLIS ") + bli_info_get_version_str() + " arch=" + bli_arch_string(bli_arch_query_id()); }
#elif defined(USE_DNNL)
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
static const char* kLib = "onednn";
// oneDNN (OpenMP runtime) uses omp_get_max_threads() of the *calling* thread.
static void set_threads(int n) { omp_set_num_threads(n); }
static std::string lib_info() {
    const dnnl_version_t* v = dnnl_version();
    char isa[16];  // 0xe7 = avx512_core_bf16, 0x67 = avx512_core_vnni, 0x7 = avx2 (dnnl_types.h)
    std::snprintf(isa, sizeof isa, "0x%x", static_cast<unsigned>(dnnl_get_effective_cpu_isa()));
    return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) +
           " isa=" + isa;
}
#else
#error "define USE_OPENBLAS, USE_BLIS or USE_DNNL"
#endif

// Row-major C[m,n] = alpha op(A) op(B) + beta C.
static void sgemm(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float beta,
                  float* c, int ldc) {
#if defined(USE_DNNL)
    if (dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.f, a, lda, b, ldb, beta, c, ldc) != dnnl_success) std::abort();
#else
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, 1.f, a, lda, b,
                ldb, beta, c, ldc);
#endif
}

// One GEMM problem with its own buffers.
struct Gemm {
    bool ta, tb;
    int m, n, k;
    float beta;
    std::vector<float> a, b, c;
    int lda() const { return ta ? m : k; }
    int ldb() const { return tb ? k : n; }
    Gemm(bool ta_, bool tb_, int m_, int n_, int k_, float beta_, unsigned seed)
        : ta(ta_), tb(tb_), m(m_), n(n_), k(k_), beta(beta_), a(size_t(m) * k), b(size_t(k) * n), c(size_t(m) * n) {
        std::mt19937 rng(seed);
        std::uniform_real_distribution<float> u(-1.f, 1.f);
        for (auto* v : {&a, &b, &c}) for (float& x : *v) x = u(rng);
    }
    // Rows [r0, r1) of C; op(A) row r starts at a + r*lda (NoTrans) or a + r (Trans).
    void run_rows(int r0, int r1) {
        const float* ar = ta ? a.data() + r0 : a.data() + size_t(r0) * lda();
        sgemm(ta, tb, r1 - r0, n, k, ar, lda(), b.data(), ldb(), beta, c.data() + size_t(r0) * n, n);
    }
    double flops() const { return 2.0 * m * n * k; }
};

// Minimal fork/join for 2 threads: the caller does half 0, a spinning worker half 1.
class Pair {
  public:
    explicit Pair(std::function<void()> worker_init) {
        worker_ = std::thread([this, worker_init] {
            worker_init();
            long seen = 0;
            for (;;) {
                long e;
                while ((e = epoch_.load(std::memory_order_acquire)) == seen) std::this_thread::yield();
                seen = e;
                if (stop_) return;
                job_(1);
                done_.store(e, std::memory_order_release);
            }
        });
    }
    ~Pair() { stop_ = true; epoch_.fetch_add(1, std::memory_order_release); worker_.join(); }
    void run(const std::function<void(int)>& job) {
        job_ = job;
        long e = epoch_.fetch_add(1, std::memory_order_acq_rel) + 1;
        job(0);
        while (done_.load(std::memory_order_acquire) != e) std::this_thread::yield();
    }

  private:
    std::function<void(int)> job_;
    std::atomic<long> epoch_{0}, done_{0};
    std::atomic<bool> stop_{false};
    std::thread worker_;
};

enum class Mode { lib1, lib2, split2 };
static const char* mode_name(Mode m) { return m == Mode::lib1 ? "lib1" : m == Mode::lib2 ? "lib2" : "split2"; }

static void run_once(Gemm& g, Mode mode, Pair* pair) {
    if (mode != Mode::split2) return g.run_rows(0, g.m);
    int half = g.m / 2;
    pair->run([&](int t) { t == 0 ? g.run_rows(0, half) : g.run_rows(half, g.m); });
}

// Median seconds per call over `reps` samples; each sample loops enough calls to take >= ~2 ms.
static double time_gemm(Gemm& g, Mode mode, Pair* pair, int reps) {
    using clk = std::chrono::steady_clock;
    for (int i = 0; i < 2; ++i) run_once(g, mode, pair);
    auto t0 = clk::now();
    run_once(g, mode, pair);
    double est = std::chrono::duration<double>(clk::now() - t0).count();
    int inner = std::max(1, static_cast<int>(2e-3 / std::max(est, 1e-7)));
    std::vector<double> s;
    for (int r = 0; r < reps; ++r) {
        t0 = clk::now();
        for (int i = 0; i < inner; ++i) run_once(g, mode, pair);
        s.push_back(std::chrono::duration<double>(clk::now() - t0).count() / inner);
    }
    std::nth_element(s.begin(), s.begin() + s.size() / 2, s.end());
    return s[s.size() / 2];
}

// Max |C - ref| / (|ref|max) against a double-precision naive GEMM.
static double check(Gemm& g, Mode mode, Pair* pair, int calls) {
    std::vector<float> c0 = g.c;
    std::vector<double> ref(g.c.size());
    for (int i = 0; i < g.m; ++i)
        for (int j = 0; j < g.n; ++j) {
            double acc = 0;
            for (int p = 0; p < g.k; ++p)
                acc += double(g.ta ? g.a[size_t(p) * g.m + i] : g.a[size_t(i) * g.k + p]) *
                       double(g.tb ? g.b[size_t(j) * g.k + p] : g.b[size_t(p) * g.n + j]);
            ref[size_t(i) * g.n + j] = acc + g.beta * c0[size_t(i) * g.n + j];
        }
    double worst = 0, scale = 1e-30;
    for (double r : ref) scale = std::max(scale, std::fabs(r));
    for (int it = 0; it < calls; ++it) {  // repeat to shake out races in concurrent calls
        g.c = c0;
        run_once(g, mode, pair);
        for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::fabs(g.c[i] - ref[i]) / scale);
    }
    g.c = c0;
    return worst;
}

struct Linear { const char* name; int in, out, per_step; };
struct Model { const char* name; int tokens; std::vector<Linear> linears; };

int main(int argc, char** argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    int reps = argc > 1 ? std::atoi(argv[1]) : 15;
    const char* ct = std::getenv("OPENBLAS_CORETYPE");
    std::printf("lib=%s  %s  OPENBLAS_CORETYPE=%s  hw_threads=%u\n", kLib, lib_info().c_str(), ct ? ct : "(unset)",
                std::thread::hardware_concurrency());

    std::vector<Model> models = {
        {"gpt2-124m", 4 * 64, {{"qkv", 768, 2304, 12}, {"attn.proj", 768, 768, 12}, {"mlp.fc", 768, 3072, 12},
                               {"mlp.proj", 3072, 768, 12}, {"lm_head", 768, 50257, 1}}},
        {"gpt-tiny", 8 * 64, {{"qkv", 128, 384, 4}, {"attn.proj", 128, 128, 4}, {"mlp.fc", 128, 512, 4},
                              {"mlp.proj", 512, 128, 4}, {"lm_head", 128, 256, 1}}},
    };

    for (Mode mode : {Mode::lib1, Mode::lib2, Mode::split2}) {
        set_threads(mode == Mode::lib2 ? 2 : 1);
        Pair* pair = mode == Mode::split2 ? new Pair([] { set_threads(1); }) : nullptr;

        // Correctness: odd small shapes for all three transpose cases, plus a
        // real shape repeated to exercise concurrent calls in split2.
        double err = 0;
        for (auto [ta, tb, beta] : {std::tuple{false, true, 0.f}, {false, false, 0.f}, {true, false, 1.f}}) {
            Gemm small(ta, tb, 37, 29, 53, beta, 1);
            err = std::max(err, check(small, mode, pair, 3));
            Gemm big(ta, tb, 256, 192, 768, beta, 2);
            err = std::max(err, check(big, mode, pair, 20));
        }
        std::printf("\n[%s %s] correctness max rel err vs naive: %.2e %s\n", kLib, mode_name(mode), err,
                    err < 1e-5 ? "OK" : "FAIL");

        for (const Model& md : models) {
            double step_s = 0, step_flops = 0;
            std::printf("%-9s %-10s %5s %5s %6s | %8s %8s %8s  GFLOP/s | ms fwd+bwd\n", md.name, "linear", "M", "K",
                        "N", "fwd", "dX", "dW");
            for (const Linear& l : md.linears) {
                int M = md.tokens, K = l.in, N = l.out;
                Gemm g[3] = {{false, true, M, N, K, 0.f, 3}, {false, false, M, K, N, 0.f, 4}, {true, false, N, K, M, 1.f, 5}};
                double t[3], lin_s = 0;
                for (int i = 0; i < 3; ++i) lin_s += t[i] = time_gemm(g[i], mode, pair, reps);
                double f = g[0].flops();
                std::printf("%-9s %-10s %5d %5d %6d | %8.1f %8.1f %8.1f          | %8.3f\n", md.name, l.name, M, K, N,
                            f / t[0] * 1e-9, f / t[1] * 1e-9, f / t[2] * 1e-9, lin_s * 1e3);
                step_s += lin_s * l.per_step;
                step_flops += 3 * f * l.per_step;
            }
            std::printf("SUMMARY lib=%s mode=%s model=%s coretype=%s  step_gemm_ms=%.2f  avg_GFLOP/s=%.1f\n", kLib,
                        mode_name(mode), md.name, ct ? ct : "default", step_s * 1e3, step_flops / step_s * 1e-9);
        }
        delete pair;
    }
}
