// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA backend's memory ops and 16-bit storage against the CPU backend:
// copies, fills, f32 <-> f16/bf16 casts bit for bit against core/half.h over
// every pattern, 16-bit accumulation, the sum of squares and the overflow
// scan. Where no GPU is usable, every test is skipped with
// "skipped: no GPU (<reason>)" and the suite passes.
#include <cuda_runtime.h>

#include <QTest>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "core/caching_device_memory.h"
#include "core/half.h"
#include "gpu/cuda_test_support.h"
#include "ops/backend.h"
#include "ops/cuda/cuda_backend.h"
#include "ops/device.h"

using namespace shardscope;
using namespace shardscope::test;

class TestCudaStorage : public QObject {
  Q_OBJECT
  std::unique_ptr<Backend> cpu = make_cpu_backend({2});
  std::unique_ptr<CudaBackend> gpu;

 private Q_SLOTS:
  void initTestCase();
  void memory_and_16_bit_storage_ops();
  void casts_bit_exact_over_every_pattern();
  void first_non_finite();
  void caching_device_memory_reuses_zeroed_blocks();
};

void TestCudaStorage::initTestCase() {
  const DeviceProbe probe = probe_cuda();
  if (!probe.available()) QSKIP(qPrintable(QString::fromStdString("skipped: no GPU (" + probe.reason + ")")));
  gpu = std::make_unique<CudaBackend>(CudaBackendOptions{0, GemmMath::fp32});
}

// The Backend memory ops and the 16-bit reductions mixed precision runs,
// against the CPU backend: copies and conversions bit for bit, the 16-bit
// add bit for bit (one rounding per element on both), the scan's index
// exactly, the sum of squares to 1e-10.
void TestCudaStorage::memory_and_16_bit_storage_ops() {
  const std::int64_t n = 100003;
  const auto x = randoms(static_cast<std::size_t>(n), 95, 300.0f);
  DeviceArray<float> gx(std::vector<float>(x.size())), gy(std::vector<float>(x.size()));
  gpu->upload(gx.get(), x.data(), n * 4);
  gpu->copy(gy.get(), gx.get(), n * 4);
  std::vector<float> back(x.size());
  gpu->download(back.data(), gy.get(), n * 4);
  COMPARE_EXACT("upload/copy/download", back, x);
  {
    std::vector<float> cx = x;
    DeviceArray<float> dx(x);
    cpu->divide(DType::f32, cx.data(), n, 3.0f);
    gpu->divide(DType::f32, dx.get(), n, 3.0f);
    COMPARE_EXACT("f32 divide", dx.host(), cx);
  }
  gpu->zero(gy.get(), n * 4);
  COMPARE_EXACT("zero", gy.host(), std::vector<float>(x.size(), 0.0f));
  for (DType dtype : {DType::f16, DType::bf16}) {
    const QString name = dtype == DType::f16 ? "f16" : "bf16";
    std::vector<std::uint16_t> a(x.size()), b(x.size());
    cpu->narrow(dtype, x.data(), a.data(), n);
    const auto y = randoms(static_cast<std::size_t>(n), 96, 300.0f);
    cpu->narrow(dtype, y.data(), b.data(), n);
    DeviceArray<std::uint16_t> ga(std::vector<std::uint16_t>(x.size())), gb(b);
    gpu->narrow(dtype, gx.get(), ga.get(), n);
    QVERIFY2(ga.host() == a, qPrintable(name + ": narrow differs from the CPU"));
    std::vector<float> wide(x.size());
    cpu->widen(dtype, a.data(), wide.data(), n);
    gpu->widen(dtype, ga.get(), gy.get(), n);
    COMPARE_EXACT(name + " widen", gy.host(), wide);
    cpu->add_16(dtype, a.data(), b.data(), n);
    gpu->add_16(dtype, ga.get(), gb.get(), n);
    QVERIFY2(ga.host() == a, qPrintable(name + ": add_16 differs from the CPU"));
    const auto g = randoms(static_cast<std::size_t>(n), 97, 300.0f);
    DeviceArray<float> gg(g);
    cpu->accumulate_16(dtype, a.data(), g.data(), n);
    gpu->accumulate_16(dtype, ga.get(), gg.get(), n);
    QVERIFY2(ga.host() == a, qPrintable(name + ": accumulate_16 differs from the CPU"));
    for (const float divisor : {2.0f, 3.0f, 7.0f}) {  // a collective's average: bit for bit the host's
      cpu->divide(dtype, a.data(), n, divisor);
      gpu->divide(dtype, ga.get(), n, divisor);
      QVERIFY2(ga.host() == a, qPrintable(name + QString(": divide by %1 differs from the CPU").arg(divisor)));
    }
    const double cs = cpu->sum_of_squares_16(dtype, a.data(), n);
    const double gs = gpu->sum_of_squares_16(dtype, ga.get(), n);
    QVERIFY2(std::fabs(gs - cs) <= 1e-10 * cs, qPrintable(QString("%1 sum of squares gpu %2 cpu %3").arg(name).arg(gs).arg(cs)));
    QCOMPARE(gpu->first_non_finite_16(dtype, ga.get(), n), cpu->first_non_finite_16(dtype, a.data(), n));
    a[77777] = dtype == DType::f16 ? 0x7C00 : 0x7F80;  // +inf
    a[88888] = 0xFFFF;                                   // NaN
    DeviceArray<std::uint16_t> gbad(a);
    QCOMPARE(gpu->first_non_finite_16(dtype, gbad.get(), n), std::int64_t{77777});
    QCOMPARE(cpu->first_non_finite_16(dtype, a.data(), n), std::int64_t{77777});
  }
}

void TestCudaStorage::casts_bit_exact_over_every_pattern() {
  // Widening: every 16-bit pattern.
  std::vector<std::uint16_t> patterns(65536);
  for (std::size_t i = 0; i < patterns.size(); ++i) patterns[i] = static_cast<std::uint16_t>(i);
  DeviceArray gpatterns(patterns);
  std::vector<float> wide(patterns.size());
  DeviceArray gwide(wide);
  for (const DType dtype : {DType::f16, DType::bf16}) {
    if (dtype == DType::f16)
      cuda_f16_to_f32(*gpu, gpatterns.get(), gwide.get(), 65536);
    else
      cuda_bf16_to_f32(*gpu, gpatterns.get(), gwide.get(), 65536);
    const auto got = gwide.host();
    for (std::size_t i = 0; i < patterns.size(); ++i) {
      const float expect =
          dtype == DType::f16 ? half::f16_bits_to_float(patterns[i]) : half::bf16_bits_to_float(patterns[i]);
      if (half::float_to_bits(got[i]) != half::float_to_bits(expect))
        QFAIL(qPrintable(QString("%1 -> f32 of 0x%2: gpu 0x%3 host 0x%4")
                             .arg(dtype_name(dtype).data())
                             .arg(i, 4, 16, QChar('0'))
                             .arg(half::float_to_bits(got[i]), 8, 16, QChar('0'))
                             .arg(half::float_to_bits(expect), 8, 16, QChar('0'))));
    }
  }
  // Narrowing: for every 16-bit pattern of each format, its exact value, the
  // ties halfway to the next pattern and one f32 ulp either side of them, plus
  // random f32 bit patterns (NaN payloads, subnormals, overflow included).
  std::vector<float> inputs;
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const std::uint32_t bf = h << 16;
    for (const std::uint32_t bits : {bf, bf + 0x7FFFu, bf + 0x8000u, bf + 0x8001u})
      inputs.push_back(half::bits_to_float(bits));
    const std::uint32_t f = half::float_to_bits(half::f16_bits_to_float(static_cast<std::uint16_t>(h)));
    for (const std::uint32_t bits : {f, f + 0xFFFu, f + 0x1000u, f + 0x1001u})
      inputs.push_back(half::bits_to_float(bits));
  }
  Rng rng(99);
  for (int i = 0; i < (1 << 20); ++i) inputs.push_back(half::bits_to_float(static_cast<std::uint32_t>(rng.next_u64())));
  DeviceArray ginputs(inputs);
  std::vector<std::uint16_t> narrow(inputs.size());
  DeviceArray gnarrow(narrow);
  const auto n = static_cast<std::int64_t>(inputs.size());
  for (const DType dtype : {DType::f16, DType::bf16}) {
    if (dtype == DType::f16)
      cuda_f32_to_f16(*gpu, ginputs.get(), gnarrow.get(), n);
    else
      cuda_f32_to_bf16(*gpu, ginputs.get(), gnarrow.get(), n);
    const auto got = gnarrow.host();
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const std::uint16_t expect =
          dtype == DType::f16 ? half::float_to_f16_bits(inputs[i]) : half::float_to_bf16_bits(inputs[i]);
      if (got[i] != expect)
        QFAIL(qPrintable(QString("f32 0x%1 -> %2: gpu 0x%3 host 0x%4")
                             .arg(half::float_to_bits(inputs[i]), 8, 16, QChar('0'))
                             .arg(dtype_name(dtype).data())
                             .arg(got[i], 4, 16, QChar('0'))
                             .arg(expect, 4, 16, QChar('0'))));
    }
  }
}

void TestCudaStorage::first_non_finite() {
  const std::int64_t n = 1000003;
  std::vector<float> x = randoms(static_cast<std::size_t>(n), 100);
  {
    DeviceArray gx(x);
    QCOMPARE(cuda_first_non_finite(*gpu, gx.get(), n), std::int64_t{-1});
    QCOMPARE(cuda_first_non_finite(*gpu, gx.get(), 0), std::int64_t{-1});
  }
  x[777777] = INFINITY;
  x[900001] = NAN;
  x[123457] = -INFINITY;
  {
    DeviceArray gx(x);
    QCOMPARE(cuda_first_non_finite(*gpu, gx.get(), n), half::first_non_finite(x.data(), n));
    QCOMPARE(cuda_first_non_finite(*gpu, gx.get(), n), std::int64_t{123457});
    QCOMPARE(cuda_first_non_finite(*gpu, gx.get(), 123457), std::int64_t{-1});
  }
  for (const DType dtype : {DType::f16, DType::bf16}) {
    std::vector<float> y = randoms(static_cast<std::size_t>(n), 101);
    y[500000] = dtype == DType::f16 ? 70000.0f : NAN;  // f16: overflows to inf when narrowed
    y[600000] = NAN;
    std::vector<std::uint16_t> y16(y.size());
    half::narrow(dtype, y.data(), y16.data(), n);
    DeviceArray gy(y16);
    const std::int64_t got = dtype == DType::f16 ? cuda_first_non_finite_f16(*gpu, gy.get(), n)
                                                 : cuda_first_non_finite_bf16(*gpu, gy.get(), n);
    QCOMPARE(got, half::first_non_finite(dtype, y16.data(), n));
    QCOMPARE(got, std::int64_t{500000});
  }
}

// make_cuda_device_memory's caching allocator over the plugin: a freed block
// comes back for the same request, zeroed again, with no new cudaMalloc
// (reserved unchanged); cudaMemGetInfo's figures come through device_usage.
void TestCudaStorage::caching_device_memory_reuses_zeroed_blocks() {
  const auto memory = make_cuda_device_memory(0);
  auto& caching = dynamic_cast<CachingDeviceMemory&>(*memory);
  const std::int64_t bytes = 3 * 1024 * 1024 + 5;
  void* first = memory->allocate_zeroed(bytes);
  const std::vector<unsigned char> ones(static_cast<std::size_t>(bytes), 1);
  cuda_copy_to_device(0, first, ones.data(), ones.size());
  memory->release(first);
  const CachingStats before = caching.stats();
  void* again = memory->allocate_zeroed(bytes);
  QCOMPARE(again, first);
  std::vector<unsigned char> back(ones.size(), 7);
  cuda_copy_to_host(0, back.data(), again, back.size());
  QVERIFY(std::all_of(back.begin(), back.end(), [](unsigned char b) { return b == 0; }));
  const CachingStats after = caching.stats();
  QCOMPARE(after.raw_allocations, before.raw_allocations);
  QCOMPARE(after.reserved_bytes, before.reserved_bytes);
  QCOMPARE(after.cache_hits, before.cache_hits + 1);
  DeviceUsage usage;
  QVERIFY(memory->device_usage(usage));
  QCOMPARE(usage.device, 0);
  QVERIFY(usage.total_bytes > 0);
  QVERIFY(usage.used_bytes >= after.reserved_bytes);
  QCOMPARE(usage.reserved_bytes, after.reserved_bytes);
  memory->release(again);
}

QTEST_GUILESS_MAIN(TestCudaStorage)
#include "test_cuda_storage.moc"
