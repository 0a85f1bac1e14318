// SPDX-License-Identifier: GPL-3.0-or-later
// The in-process communicator's 16-bit collectives (mixed precision): f16 and
// bf16 all-reduce, reduce-scatter, all-gather, scatter and broadcast against
// exact answers, 2 bytes per element in the events, each ring hop rounding its
// partial sum, averages that divide before they sum, and a float call that
// does not match a 16-bit one. Rank bodies only record; checks run afterwards.
#include <QTest>
#undef emit  // Qt's keyword macro would eat EventSink::emit

#include <cstdint>
#include <vector>

#include "core/half.h"
#include "engine/rank_harness.h"
#include "parallel/in_process_communicator.h"

using namespace shardscope;
using namespace shardscope::test;

class TestCommunicator16 : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void sixteen_bit_collectives_data();
  void sixteen_bit_collectives();
  void sixteen_bit_sums_round_each_partial_sum();
};

// ---- 16-bit collectives (mixed precision) ----

namespace {
std::vector<std::uint16_t> narrowed(DType dtype, const std::vector<float>& values) {
  std::vector<std::uint16_t> out(values.size());
  half::narrow(dtype, values.data(), out.data(), static_cast<std::int64_t>(values.size()));
  return out;
}
std::vector<float> widened(DType dtype, const std::vector<std::uint16_t>& bits) {
  std::vector<float> out(bits.size());
  half::widen(dtype, bits.data(), out.data(), static_cast<std::int64_t>(bits.size()));
  return out;
}
}  // namespace

void TestCommunicator16::sixteen_bit_collectives_data() {
  QTest::addColumn<int>("bf16");
  QTest::newRow("f16") << 0;
  QTest::newRow("bf16") << 1;
}

// Values whose sums and averages are exact in 16 bits, so every collective has
// one right answer; events report 2 bytes per element.
void TestCommunicator16::sixteen_bit_collectives() {
  QFETCH(int, bf16);
  const DType dtype = bf16 ? DType::bf16 : DType::f16;
  const int n = 4;
  const std::int64_t count = 8;
  CollectingSink sink;
  auto world = InProcessWorld::create(n, &sink);
  // Rank r, element i: r + 1 + 8 i (small integers: exact in f16 and bf16, and so are their sums).
  const auto values = [&](int r) {
    std::vector<float> v(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(r + 1 + 8 * i);
    return v;
  };
  std::vector<std::vector<float>> sum(n), average(n), gathered(n), scattered(n), broadcast(n);
  RUN_RANKS(*world, [&](int r) {
    auto comm = world->communicator(r, iota_ranks(n));
    auto x = narrowed(dtype, values(r));
    comm->all_reduce(x.data(), count, dtype, ReduceOp::sum, {});
    sum[static_cast<std::size_t>(r)] = widened(dtype, x);
    // reduce-scatter with average: rank r receives elements [2r, 2r + 2) averaged.
    const auto send = narrowed(dtype, values(r));
    std::vector<std::uint16_t> recv(2);
    comm->reduce_scatter(send.data(), recv.data(), 2, dtype, ReduceOp::average, {});
    average[static_cast<std::size_t>(r)] = widened(dtype, recv);
    std::vector<std::uint16_t> all(static_cast<std::size_t>(n * 2));
    comm->all_gather(send.data(), all.data(), 2, dtype, {});
    gathered[static_cast<std::size_t>(r)] = widened(dtype, all);
    std::vector<std::uint16_t> piece(2);
    comm->scatter(send.data(), piece.data(), 2, dtype, /*root=*/1, {});
    scattered[static_cast<std::size_t>(r)] = widened(dtype, piece);
    auto b = narrowed(dtype, values(r));
    comm->broadcast(b.data(), count, dtype, /*root=*/3, {});
    broadcast[static_cast<std::size_t>(r)] = widened(dtype, b);
  });
  for (int r = 0; r < n; ++r) {
    const auto R = static_cast<std::size_t>(r);
    for (std::int64_t i = 0; i < count; ++i)  // sum over ranks of r + 1 + 8i = 10 + 32i
      QCOMPARE(sum[R][static_cast<std::size_t>(i)], static_cast<float>(10 + 32 * i));
    for (int j = 0; j < 2; ++j)  // average over ranks of r + 1 + 8i = 2.5 + 8i, i = 2r + j
      QCOMPARE(average[R][static_cast<std::size_t>(j)], 2.5f + static_cast<float>(8 * (2 * r + j)));
    for (int q = 0; q < n; ++q)
      for (int j = 0; j < 2; ++j)
        QCOMPARE(gathered[R][static_cast<std::size_t>(2 * q + j)], static_cast<float>(q + 1 + 8 * j));
    for (int j = 0; j < 2; ++j)  // chunk r of rank 1's values
      QCOMPARE(scattered[R][static_cast<std::size_t>(j)], static_cast<float>(2 + 8 * (2 * r + j)));
    QCOMPARE(broadcast[R], values(3));
  }
  // The all-reduce's ring moves 2(N-1)/N x the buffer's 2 x count bytes per rank.
  for (int r = 0; r < n; ++r) {
    std::int64_t bytes = 0;
    for (const Event& e : sink.of_rank(r))
      if (e.op == CommOp::all_reduce) bytes += e.bytes;
    QCOMPARE(bytes, std::int64_t{2 * (n - 1) * count * 2 / n});
  }
}

// A 16-bit ring sum stores each partial sum in 16 bits, as NCCL does: adding
// 1 to 2048 in f16 rounds back to 2048 (the spacing there is 2), so with one
// rank holding 2048 and three holding 1 the result depends on the ring order
// and can never be the exact 2051; every rank ends with the same bits.
void TestCommunicator16::sixteen_bit_sums_round_each_partial_sum() {
  const int n = 4;
  auto world = InProcessWorld::create(n);
  std::vector<float> got(n);
  RUN_RANKS(*world, [&](int r) {
    auto x = narrowed(DType::f16, {r == 0 ? 2048.0f : 1.0f});
    world->communicator(r, iota_ranks(n))->all_reduce(x.data(), 1, DType::f16, ReduceOp::sum, {});
    got[static_cast<std::size_t>(r)] = widened(DType::f16, x)[0];
  });
  for (float g : got) {
    QCOMPARE(g, got[0]);
    QVERIFY2(g == 2048.0f || g == 2050.0f || g == 2052.0f, qPrintable(QString::number(g)));
  }
  // An average divides before it sums: two ranks' 40000 average to 40000,
  // where a 16-bit sum (80000 > 65504) would overflow to inf.
  auto pair = InProcessWorld::create(2);
  std::vector<float> averaged(2), scattered(2);
  RUN_RANKS(*pair, [&](int r) {
    auto comm = pair->communicator(r, {0, 1});
    auto x = narrowed(DType::f16, {40000.0f, 40000.0f});
    comm->all_reduce(x.data(), 2, DType::f16, ReduceOp::average, {});
    averaged[static_cast<std::size_t>(r)] = widened(DType::f16, x)[static_cast<std::size_t>(r)];
    const auto send = narrowed(DType::f16, {40000.0f, 40000.0f});
    std::vector<std::uint16_t> recv(1);
    comm->reduce_scatter(send.data(), recv.data(), 1, DType::f16, ReduceOp::average, {});
    scattered[static_cast<std::size_t>(r)] = widened(DType::f16, recv)[0];
  });
  QCOMPARE(averaged, (std::vector<float>{40000.0f, 40000.0f}));
  QCOMPARE(scattered, (std::vector<float>{40000.0f, 40000.0f}));
  // A float and a 16-bit call of the same count do not match.
  auto mixed = InProcessWorld::create(2);
  const auto errors = run_ranks(*mixed, [&](int r) {
    std::vector<float> x(4);
    auto comm = mixed->communicator(r, {0, 1});
    if (r == 0) comm->all_reduce(x.data(), 4, ReduceOp::sum, {});
    else comm->all_reduce(x.data(), 4, DType::f16, ReduceOp::sum, {});
  });
  for (const auto& e : errors) {
    QVERIFY(e);
    const std::string m = message_of(e);
    QVERIFY2(m.find("f32") != std::string::npos && m.find("f16") != std::string::npos, m.c_str());
  }
}

QTEST_GUILESS_MAIN(TestCommunicator16)
#include "test_communicator_16bit.moc"
