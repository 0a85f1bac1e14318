// SPDX-License-Identifier: GPL-3.0-or-later
// The op profile (ops/op_profile.h): a profiled run trains exactly as a plain
// one, every op of the step is counted with its nominal work, and the table
// lists the ops most expensive first.
#include <QTest>

#include "ops/op_profile.h"
#include "train/trainer.h"

using namespace shardscope;

class TestOpProfile : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void profiled_run_trains_identically();
  void counts_calls_and_nominal_work();
  void table_orders_by_time_and_adds_the_rest();
  void ranks_profile_separately();
};

namespace {
RunConfig tiny(int steps) {
  RunConfig c;
  c.model = "gpt-tiny";
  c.steps = steps;
  c.batch = 4;
  c.seq = 32;
  c.threads = 1;
  return c;
}
}  // namespace

void TestOpProfile::profiled_run_trains_identically() {
  RunConfig plain = tiny(3), profiled = tiny(3);
  profiled.profile_ops = true;
  Trainer a(plain), b(profiled);
  for (int s = 0; s < 3; ++s) QCOMPARE(b.step().loss, a.step().loss);  // bit for bit
  QCOMPARE(b.model_state_bytes(0), a.model_state_bytes(0));
  QVERIFY(a.op_profile(0).empty());  // not profiling: nothing recorded
  QVERIFY(!b.op_profile(0).empty());
}

void TestOpProfile::counts_calls_and_nominal_work() {
  RunConfig c = tiny(2);
  c.profile_ops = true;
  Trainer t(c);
  t.step();
  t.reset_op_profiles();
  QVERIFY(t.op_profile(0).empty());
  t.step();
  const auto ops = t.op_profile(0);
  const ModelConfig m = find_model_preset("gpt-tiny");
  const double rows = 4.0 * 32, C = m.channels, L = m.layers, V = m.vocab, T = 32;
  // Per layer: qkv, attention projection, MLP fc and proj; then the tied head.
  const OpStats& fwd = ops.at("linear_forward");
  QCOMPARE(fwd.calls, static_cast<std::int64_t>(4 * L + 1));
  const double layer_flops = 2 * rows * C * (3 * C + C + 4 * C + 4 * C);
  QCOMPARE(fwd.flops, L * layer_flops + 2 * rows * C * V);
  QCOMPARE(ops.at("linear_backward").calls, static_cast<std::int64_t>(4 * L + 1));
  QCOMPARE(ops.at("attention_forward").calls, static_cast<std::int64_t>(L));
  QCOMPARE(ops.at("attention_forward").flops, L * 4.0 * 4 * T * T * C);  // Q K^T and P V, B = 4
  QCOMPARE(ops.at("cross_entropy_forward").calls, std::int64_t{1});
  QCOMPARE(ops.at("cross_entropy_forward").bytes, 4.0 * (rows * V + rows));
  for (const auto& [op, s] : ops) {
    QVERIFY2(s.calls > 0 && s.seconds >= 0.0, op.c_str());
    QVERIFY2(s.bytes > 0.0, op.c_str());  // every op moves data
  }
}

void TestOpProfile::table_orders_by_time_and_adds_the_rest() {
  std::map<std::string, OpStats> ops;
  ops["small"] = OpStats{2, 0.001, 0.0, 1e6};
  ops["big"] = OpStats{4, 0.003, 6e9, 0.0};
  const std::string table = format_op_profile(ops, 2, 0.0025);
  const auto big = table.find("big"), small = table.find("small");
  QVERIFY(big != std::string::npos && small != std::string::npos);
  QVERIFY(big < small);
  // big: 2 calls and 1.5 ms per step, 75% of the timed ops, 6e9 / 0.003 s = 2.00 TFLOP/s.
  QVERIFY2(table.find("1.500") != std::string::npos, table.c_str());
  QVERIFY2(table.find("75.0%") != std::string::npos, table.c_str());
  QVERIFY2(table.find("2.00") != std::string::npos, table.c_str());
  // small: 1e6 bytes in 1 ms = 1.0 GB/s. The ops take 2 ms of the 2.5 ms step.
  QVERIFY2(table.find(" 1.0\n") != std::string::npos, table.c_str());
  QVERIFY2(table.find("rest of the step") != std::string::npos, table.c_str());
  QVERIFY2(table.find("0.500") != std::string::npos, table.c_str());
}

void TestOpProfile::ranks_profile_separately() {
  RunConfig c = tiny(1);
  c.layout[Axis::dp] = 2;
  c.layout[Axis::pp] = 1;
  c.profile_ops = true;
  Trainer t(c);
  t.step();
  // Each rank runs the same ops on half the batch.
  const auto r0 = t.op_profile(0), r1 = t.op_profile(1);
  QCOMPARE(r0.at("linear_forward").calls, r1.at("linear_forward").calls);
  QCOMPARE(r0.at("linear_forward").flops, r1.at("linear_forward").flops);
}

QTEST_GUILESS_MAIN(TestOpProfile)
#include "test_op_profile.moc"
