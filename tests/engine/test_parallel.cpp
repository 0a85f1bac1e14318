// SPDX-License-Identifier: GPL-3.0-or-later
// The parallel runtime against the single-rank run: every layout of the same
// global batch gives the same losses (within float tolerance; checkpointing
// exactly), memory follows the ZeRO paper's formulas, every DDP bucket's ring
// steps appear in the event stream, a failing rank stops every rank, and so
// does the stop flag (Ctrl-C) mid-step.
#include <QElapsedTimer>
#include <QTest>
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>

#include "core/error.h"
#include "engine/collecting_sink.h"
#include "events/event.h"
#include "model/activations.h"
#include "parallel/ddp.h"
#include "train/trainer.h"

using namespace shardscope;
using shardscope::test::CollectingSink;

namespace {

RunConfig base_config(const char* model = "gpt-tiny") {
  RunConfig c;
  c.model = model;
  c.steps = 20;
  c.batch = 8;
  c.seq = 32;
  c.lr = 3e-3f;
  c.threads = 2;
  return c;
}

std::vector<float> losses_of(const RunConfig& config) {
  Trainer trainer(config);
  std::vector<float> losses;
  trainer.run([&](const StepMetrics& m) { losses.push_back(m.loss); });
  return losses;
}

// Relative difference per step, the worst over the run.
double worst_relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]) / std::fabs(static_cast<double>(b[i])));
  return worst;
}

}  // namespace

class TestParallel : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void every_layout_matches_single_rank_data();
  void every_layout_matches_single_rank();
  void checkpointing_gives_identical_losses();
  void evaluation_matches_single_rank();
  void zero_memory_follows_the_paper();
  void zero3_gathers_and_releases_every_layer();
  void naive_data_parallel_loads_rank_0();
  void checkpointing_lowers_activation_memory_as_predicted();
  void ddp_event_stream_has_every_ring_step_in_order();
  void pipeline_stages_hold_their_share();
  void pipeline_activation_memory_gpipe_vs_1f1b();
  void pipeline_events_per_stage_and_micro_batch();
  void failing_rank_stops_every_rank();
  void stop_flag_mid_step_stops_every_rank();
  void invalid_layouts_are_refused();
};

void TestParallel::every_layout_matches_single_rank_data() {
  QTest::addColumn<QString>("model");
  QTest::addColumn<int>("dp");
  QTest::addColumn<int>("naive");
  QTest::addColumn<int>("zero");
  QTest::addColumn<int>("accum");
  QTest::addColumn<int>("pp");
  QTest::addColumn<int>("micro_batches");
  QTest::addColumn<int>("gpipe");
  QTest::newRow("ddp 2") << "gpt-tiny" << 2 << 0 << 0 << 1 << 1 << 1 << 0;
  QTest::newRow("ddp 4") << "gpt-tiny" << 4 << 0 << 0 << 1 << 1 << 1 << 0;
  QTest::newRow("naive 2") << "gpt-tiny" << 2 << 1 << 0 << 1 << 1 << 1 << 0;
  QTest::newRow("naive 4") << "gpt-tiny" << 4 << 1 << 0 << 1 << 1 << 1 << 0;
  QTest::newRow("zero-1 x 4") << "gpt-tiny" << 4 << 0 << 1 << 1 << 1 << 1 << 0;
  QTest::newRow("zero-2 x 4") << "gpt-tiny" << 4 << 0 << 2 << 1 << 1 << 1 << 0;
  QTest::newRow("zero-3 x 4") << "gpt-tiny" << 4 << 0 << 3 << 1 << 1 << 1 << 0;
  QTest::newRow("zero-2 x 2 accum 2") << "gpt-tiny" << 2 << 0 << 2 << 2 << 1 << 1 << 0;
  QTest::newRow("bert zero-3 x 2") << "bert-tiny" << 2 << 0 << 3 << 1 << 1 << 1 << 0;
  QTest::newRow("accum 4") << "gpt-tiny" << 1 << 0 << 0 << 4 << 1 << 1 << 0;
  QTest::newRow("ddp 2 x accum 2") << "gpt-tiny" << 2 << 0 << 0 << 2 << 1 << 1 << 0;
  QTest::newRow("bert ddp 2") << "bert-tiny" << 2 << 0 << 0 << 1 << 1 << 1 << 0;
  //                                        dp   naive zero accum pp  m   gpipe
  QTest::newRow("pp 2 gpipe") << "gpt-tiny" << 1 << 0 << 0 << 1 << 2 << 4 << 1;
  QTest::newRow("pp 2 1f1b") << "gpt-tiny" << 1 << 0 << 0 << 1 << 2 << 4 << 0;
  QTest::newRow("pp 4 gpipe") << "gpt-tiny" << 1 << 0 << 0 << 1 << 4 << 4 << 1;
  QTest::newRow("pp 4 1f1b") << "gpt-tiny" << 1 << 0 << 0 << 1 << 4 << 8 << 0;
  QTest::newRow("dp 2 x pp 2") << "gpt-tiny" << 2 << 0 << 0 << 1 << 2 << 2 << 0;
  QTest::newRow("dp 2 x pp 2 zero-1 accum 2") << "gpt-tiny" << 2 << 0 << 1 << 2 << 2 << 2 << 0;
  QTest::newRow("bert pp 2") << "bert-tiny" << 1 << 0 << 0 << 1 << 2 << 2 << 0;
}

void TestParallel::every_layout_matches_single_rank() {
  QFETCH(QString, model);
  QFETCH(int, dp);
  QFETCH(int, naive);
  QFETCH(int, zero);
  QFETCH(int, accum);
  QFETCH(int, pp);
  QFETCH(int, micro_batches);
  QFETCH(int, gpipe);
  RunConfig single = base_config(qPrintable(model));
  // The ThreadSanitizer job (tests/CMakeLists.txt) runs fewer steps: it looks
  // at how the ranks share memory, which the first steps already cross; the
  // plain build runs all 20 and checks that the run learns.
  if (const char* steps = std::getenv("SHARDSCOPE_LAYOUT_STEPS")) single.steps = std::clamp(std::atoi(steps), 2, 20);
  RunConfig parallel = single;
  parallel.layout[Axis::dp] = dp;
  parallel.dp_mode = naive ? DataParallelMode::naive : DataParallelMode::ddp;
  parallel.zero_stage = zero;
  parallel.accum = accum;
  parallel.layout[Axis::pp] = pp;
  parallel.micro_batches = micro_batches;
  parallel.schedule = gpipe ? PipelineScheduleKind::gpipe : PipelineScheduleKind::one_f_one_b;
  parallel.bucket_mb = 0.5;  // several buckets, so overlap and ordering are exercised
  const auto a = losses_of(single);
  const auto b = losses_of(parallel);
  QCOMPARE(b.size(), a.size());
  // Before the first update only the loss reduction differs: agreement to float precision.
  QVERIFY2(std::fabs(b.front() - a.front()) < 1e-5f * a.front(), qPrintable(QString("%1 vs %2").arg(b.front()).arg(a.front())));
  // Float sums in another order (ring all-reduce, split batches) then drift slowly over 20 steps.
  const double worst = worst_relative_difference(b, a);
  QVERIFY2(worst < 5e-4, qPrintable(QString("worst relative loss difference %1 (first %2 vs %3, last %4 vs %5)")
                                        .arg(worst)
                                        .arg(b.front())
                                        .arg(a.front())
                                        .arg(b.back())
                                        .arg(a.back())));
  if (a.size() < 20) return;
  // And the run did learn (the mean of the last 5 steps: MLM losses of 8 short sequences are noisy).
  const float tail = (a[15] + a[16] + a[17] + a[18] + a[19]) / 5.0f;
  QVERIFY2(tail < a.front() - 0.3f, qPrintable(QString("%1 -> %2").arg(a.front()).arg(tail)));
}

void TestParallel::evaluation_matches_single_rank() {
  // The held-out loss after 5 steps is the same whatever the layout.
  RunConfig c = base_config();
  c.steps = 5;
  c.eval_every = 5;
  auto eval_of = [](const RunConfig& config) {
    Trainer t(config);
    float eval = -1.0f;
    t.run([&](const StepMetrics& m) {
      if (m.eval_loss) eval = *m.eval_loss;
    });
    return eval;
  };
  const float single = eval_of(c);
  for (int layout = 0; layout < 4; ++layout) {
    RunConfig p = c;
    if (layout == 0) p.layout[Axis::dp] = 4;
    if (layout == 1) {
      p.layout[Axis::dp] = 4;
      p.dp_mode = DataParallelMode::naive;
    }
    if (layout == 2) {
      p.layout[Axis::pp] = 2;
      p.micro_batches = 2;
    }
    if (layout == 3) {
      p.layout[Axis::dp] = 2;
      p.zero_stage = 3;
    }
    const float e = eval_of(p);
    QVERIFY2(std::fabs(e - single) < 2e-4f * single, qPrintable(QString("layout %1: %2 vs %3").arg(layout).arg(e).arg(single)));
  }
}

void TestParallel::checkpointing_gives_identical_losses() {
  RunConfig c = base_config();  // 20 steps
  const auto plain = losses_of(c);
  c.checkpoint = true;
  QCOMPARE(losses_of(c), plain);  // recompute runs the same ops on the same inputs: bit-identical
}

void TestParallel::zero_memory_follows_the_paper() {
  // Per-rank model states in fp32 Adam (ZeRO paper, fig. 1, with 4-byte
  // parameters and gradients and 8-byte Adam states): parameters, gradients,
  // optimizer states = 4Ψ 4Ψ 8Ψ | 4Ψ 4Ψ 8Ψ/Nd | 4Ψ 4Ψ/Nd 8Ψ/Nd | 4Ψ/Nd 4Ψ/Nd 8Ψ/Nd.
  const int Nd = 4;
  for (int stage : {0, 1, 2, 3}) {
    RunConfig c = base_config();
    c.steps = 1;
    c.layout[Axis::dp] = Nd;
    c.zero_stage = stage;
    Trainer trainer(c);
    trainer.step();  // after a step every temporary gather and gradient buffer is released
    const std::int64_t psi = trainer.model().parameter_count();
    for (const auto& unit : trainer.model().layout().units()) QCOMPARE(unit.numel() % Nd, std::int64_t{0});
    for (int r = 0; r < Nd; ++r) {
      const MemoryBytes m = trainer.ledger(r).current();
      QCOMPARE(m[MemoryCategory::parameters], stage >= 3 ? 4 * psi / Nd : 4 * psi);
      QCOMPARE(m[MemoryCategory::gradients], stage >= 2 ? 4 * psi / Nd : 4 * psi);
      QCOMPARE(m[MemoryCategory::optimizer_states], stage >= 1 ? 8 * psi / Nd : 8 * psi);
    }
  }
}

void TestParallel::zero3_gathers_and_releases_every_layer() {
  RunConfig c = base_config();
  c.steps = 1;
  c.layout[Axis::dp] = 2;
  c.zero_stage = 3;
  CollectingSink sink;
  Trainer trainer(c, &sink);
  trainer.step();
  const int L = trainer.model().config().layers;
  for (int r = 0; r < 2; ++r) {
    std::map<int, int> open;  // unit -> gathers not yet released
    int gathers = 0;
    for (const Event& e : sink.events()) {
      if (e.kind != EventKind::shard || e.rank != r) continue;
      if (e.shard_action == ShardAction::gather) {
        QCOMPARE(open[e.unit]++, 0);  // never gathered twice at once
        ++gathers;
      } else {
        QCOMPARE(--open[e.unit], 0);  // released only what was gathered
      }
    }
    for (const auto& [layer, count] : open) QCOMPARE(count, 0);  // everything released
    // Forward gathers every layer, the embeddings (for the input and again for the
    // tied head) and the head: L + 3. Backward the same but the embeddings once,
    // for the head (GPT's embedding backward needs no parameter values): L + 2.
    QCOMPARE(gathers, (L + 3) + (L + 2));
  }
}

void TestParallel::naive_data_parallel_loads_rank_0() {
  RunConfig c = base_config();
  c.layout[Axis::dp] = 4;
  c.dp_mode = DataParallelMode::naive;
  Trainer trainer(c);
  const std::int64_t psi = trainer.model().parameter_count();
  const MemoryBytes master = trainer.ledger(0).current();
  QCOMPARE(master[MemoryCategory::optimizer_states], 8 * psi);
  QCOMPARE(master[MemoryCategory::communication], 4 * 4 * psi);  // all 4 gradient copies gathered
  for (int r = 1; r < 4; ++r) {
    QCOMPARE(trainer.ledger(r).current()[MemoryCategory::optimizer_states], std::int64_t{0});
    QCOMPARE(trainer.ledger(r).current()[MemoryCategory::communication], std::int64_t{0});
  }
}

void TestParallel::checkpointing_lowers_activation_memory_as_predicted() {
  RunConfig c = base_config();
  c.steps = 1;
  Trainer plain(c);
  plain.step();
  c.checkpoint = true;
  Trainer ckpt(c);
  ckpt.step();
  const ModelConfig& m = plain.model().config();
  const std::int64_t B = c.batch, T = c.seq, C = m.channels, L = m.layers;
  // Checkpointing keeps one layer's activations plus every layer's (B, T, C) output
  // instead of L layers' activations.
  const std::int64_t saved = 4 * ((L - 1) * Activations::layer_floats(m, c.batch, c.seq) - L * B * T * C);
  const std::int64_t a = plain.ledger().peak()[MemoryCategory::activations];
  const std::int64_t b = ckpt.ledger().peak()[MemoryCategory::activations];
  QVERIFY(b < a);
  QCOMPARE(a - b, saved);
}

void TestParallel::ddp_event_stream_has_every_ring_step_in_order() {
  RunConfig c = base_config();
  c.steps = 1;
  c.layout[Axis::dp] = 4;
  c.bucket_mb = 0.8;
  CollectingSink sink;
  Trainer trainer(c, &sink);
  trainer.step();
  const auto buckets = make_gradient_buckets(trainer.model().layout(), bucket_cap_bytes(c.bucket_mb));
  QVERIFY(buckets.size() >= 3);
  const int N = 4;
  for (int r = 0; r < N; ++r) {
    // This rank's gradient all-reduce transfers, in the order it made them.
    std::vector<Event> mine;
    for (const Event& e : sink.events())
      if (e.kind == EventKind::comm_span && e.op == CommOp::all_reduce && e.src == r && e.bucket >= 0)
        mine.push_back(e);
    QCOMPARE(mine.size(), buckets.size() * 2 * (N - 1));
    std::size_t i = 0;
    for (const auto& bucket : buckets) {
      std::int64_t bytes = 0;
      for (RingPhase phase : {RingPhase::reduce_scatter, RingPhase::all_gather}) {
        for (int s = 0; s < N - 1; ++s, ++i) {
          const Event& e = mine[i];
          QCOMPARE(e.bucket, bucket.index);
          QCOMPARE(e.phase, phase);
          QCOMPARE(e.ring_step, s);
          QCOMPARE(e.dst, (r + 1) % N);
          if (i > 0) QVERIFY(e.start_ns >= mine[i - 1].start_ns);
          bytes += e.bytes;
        }
      }
      // Ring all-reduce: each rank sends 2 (N - 1) / N of the bucket.
      const std::int64_t bucket_bytes = (bucket.end - bucket.begin) * 4;
      if (bucket_bytes % (4 * N) == 0) QCOMPARE(bytes, 2 * (N - 1) * bucket_bytes / N);
    }
  }
  // Compute spans: a forward and a backward per rank, and every layer's backward.
  int forwards = 0, layer_backwards = 0;
  for (const Event& e : sink.events()) {
    if (e.kind != EventKind::compute_span) continue;
    forwards += e.compute == ComputeKind::forward && e.layer == -1;
    layer_backwards += e.compute == ComputeKind::backward && e.layer >= 0;
  }
  QCOMPARE(forwards, N);
  QCOMPARE(layer_backwards, N * trainer.model().config().layers);
}

void TestParallel::pipeline_stages_hold_their_share() {
  RunConfig c = base_config();
  c.layout[Axis::pp] = 2;
  c.micro_batches = 2;
  Trainer trainer(c);
  const ModelConfig& m = trainer.model().config();
  const std::int64_t psi = analytic_parameter_count(m);
  const std::int64_t tied_copy = static_cast<std::int64_t>(m.vocab) * m.channels;
  // Stage 0: embeddings + layers 0-1; stage 1: layers 2-3 + final LN + its copy of the tied embedding.
  QCOMPARE(trainer.model(0).parameter_count() + trainer.model(1).parameter_count(), psi + tied_copy);
  QCOMPARE(trainer.model(0).stage().end_layer, 2);
  QVERIFY(trainer.model(1).layout().try_find("embed.positions") == nullptr);
  QVERIFY(trainer.model(1).layout().try_find("embed.tokens") != nullptr);
  for (int r = 0; r < 2; ++r)
    QCOMPARE(trainer.ledger(r).current()[MemoryCategory::parameters], 4 * trainer.model(r).parameter_count());
}

void TestParallel::pipeline_activation_memory_gpipe_vs_1f1b() {
  // GPipe keeps all m micro-batches' activations until the backwards start;
  // 1F1B keeps at most p - s on stage s (Narayanan et al. 2021, sec. 2.2).
  const int p = 4, m = 8;
  for (PipelineScheduleKind kind : {PipelineScheduleKind::gpipe, PipelineScheduleKind::one_f_one_b}) {
    RunConfig c = base_config();
    c.steps = 1;
    c.layout[Axis::pp] = p;
    c.micro_batches = m;
    c.schedule = kind;
    Trainer trainer(c);
    trainer.step();
    const ModelConfig& config = trainer.model().config();
    for (int s = 0; s < p; ++s) {
      const int slots = kind == PipelineScheduleKind::gpipe ? m : std::min(p - s, m);
      QCOMPARE(trainer.model(s).activation_slots(), slots);
      const std::int64_t per_slot = 4 * Activations::total_floats(config, c.micro_batch_size(), c.seq, false,
                                                                  pipeline_stage_layers(config, p, s));
      QCOMPARE(trainer.ledger(s).peak()[MemoryCategory::activations], slots * per_slot);
    }
  }
}

void TestParallel::pipeline_events_per_stage_and_micro_batch() {
  RunConfig c = base_config();
  c.steps = 1;
  c.layout[Axis::pp] = 4;
  c.micro_batches = 4;
  c.batch = 8;
  CollectingSink sink;
  Trainer trainer(c, &sink);
  trainer.step();
  const int p = 4, m = 4;
  // One forward and one backward box per (stage, micro-batch), as the timeline view draws them.
  std::map<std::tuple<int, int, int>, int> boxes;
  int sends = 0, recvs = 0;
  for (const Event& e : sink.events()) {
    if (e.kind == EventKind::compute_span && e.layer == -1 && e.compute != ComputeKind::optimizer)
      ++boxes[{e.stage, e.micro_batch, static_cast<int>(e.compute)}];
    if (e.kind == EventKind::comm_span && e.op == CommOp::send) ++sends;
    if (e.kind == EventKind::comm_span && e.op == CommOp::recv) ++recvs;
  }
  QCOMPARE(static_cast<int>(boxes.size()), p * m * 2);
  for (const auto& [key, count] : boxes) QCOMPARE(count, 1);
  // Activations go down p - 1 links and their gradients come back, per micro-batch.
  QVERIFY2(sends + recvs >= 2 * (p - 1) * m, qPrintable(QString("%1 sends, %2 recvs").arg(sends).arg(recvs)));
}

void TestParallel::failing_rank_stops_every_rank() {
  RunConfig c = base_config();
  c.layout[Axis::dp] = 4;
  c.fail_rank = 2;
  c.fail_step = 2;
  CollectingSink sink;
  Trainer trainer(c, &sink);
  trainer.step();  // step 1 is fine
  QElapsedTimer timer;
  timer.start();
  try {
    trainer.step();
    QFAIL("the injected failure did not surface");
  } catch (const RankFailure& e) {
    const std::string what = e.what();
    QVERIFY2(what.find("rank 2") != std::string::npos, e.what());
    QVERIFY2(what.find("injected failure") != std::string::npos, e.what());
  }
  QVERIFY2(timer.elapsed() < 1000, qPrintable(QString("stopping took %1 ms").arg(timer.elapsed())));
  bool error_event = false;
  for (const Event& e : sink.events()) error_event |= e.kind == EventKind::error && e.rank == 2;
  QVERIFY(error_event);
  QVERIFY_THROWS_EXCEPTION(RankFailure, trainer.step());  // a failed run stays stopped
}

namespace {
// Raises the stop flag at the first layer's forward span of `step`, as Ctrl-C
// would mid-step, and notes when.
class StopAtStep : public CollectingSink {
 public:
  StopAtStep(std::int64_t step, std::atomic<bool>& stop) : step_(step), stop_(stop) { raised_.start(); }
  void emit(const Event& e) override {
    CollectingSink::emit(e);
    if (e.kind == EventKind::compute_span && e.step == step_ && !stop_.exchange(true)) raised_.restart();
  }
  qint64 ms_since_raised() const { return raised_.elapsed(); }

 private:
  std::int64_t step_;
  std::atomic<bool>& stop_;
  QElapsedTimer raised_;
};
}  // namespace

// dp 2 x pp 2 with 4 micro-batches and 4 accumulation steps: when the flag goes
// up, some ranks compute and others wait in a send, a recv or an all-reduce;
// the rank that sees it aborts the world, as a failing rank does, and all stop.
void TestParallel::stop_flag_mid_step_stops_every_rank() {
  RunConfig c = base_config();
  c.layout[Axis::dp] = 2;
  c.layout[Axis::pp] = 2;
  c.micro_batches = 4;
  c.accum = 4;
  c.batch = 64;
  c.steps = 5;
  std::atomic<bool> stop{false};
  StopAtStep sink(2, stop);
  Trainer trainer(c, &sink);
  std::vector<std::int64_t> finished;
  trainer.run([&](const StepMetrics& m) { finished.push_back(m.step); }, &stop);
  const qint64 stopping_ms = sink.ms_since_raised();
  QCOMPARE(finished, std::vector<std::int64_t>{1});  // step 1 reported, step 2 discarded
  QCOMPARE(trainer.steps_done(), std::int64_t{1});
  int forwards_step1 = 0, forwards_step2 = 0;
  for (const Event& e : sink.events()) {
    if (e.kind != EventKind::compute_span) continue;
    QVERIFY2(!(e.step == 2 && e.compute == ComputeKind::optimizer), "step 2 reached its optimizer");
    if (e.compute == ComputeKind::forward && e.layer >= 0) (e.step == 1 ? forwards_step1 : forwards_step2) += 1;
  }
  // Stopped at a layer boundary soon after the flag: a small part of step 2's layers ran.
  QVERIFY2(forwards_step2 < forwards_step1 / 4,
           qPrintable(QString("%1 of %2").arg(forwards_step2).arg(forwards_step1)));
  QVERIFY2(stopping_ms < 1000, qPrintable(QString("stopping took %1 ms").arg(stopping_ms)));
  QVERIFY_THROWS_EXCEPTION(RankFailure, trainer.step());  // the world is aborted: no further step
}

void TestParallel::invalid_layouts_are_refused() {
  auto refused = [](RunConfig c, const char* fragment) {
    try {
      Trainer t(c);
      QFAIL(qPrintable(QString("accepted a config that should fail with '%1'").arg(fragment)));
    } catch (const ConfigError& e) {
      QVERIFY2(std::string(e.what()).find(fragment) != std::string::npos, e.what());
    }
  };
  RunConfig c = base_config();
  c.layout[Axis::dp] = 3;
  refused(c, "does not split");
  c = base_config();
  c.accum = 3;
  refused(c, "does not split");
  c = base_config();
  c.layout[Axis::pp] = 5;  // gpt-tiny has 4 layers
  refused(c, "more pipeline stages than gpt-tiny has layers");
  c = base_config();
  c.zero_stage = 1;
  c.dp_mode = DataParallelMode::naive;
  refused(c, "needs --dp-mode ddp");
  c = base_config();
  c.layout[Axis::dp] = 2;
  c.layout[Axis::pp] = 2;
  c.ranks = 3;
  refused(c, "--ranks 3 does not equal --dp 2 x --pp 2 = 4");
  c = base_config();
  c.layout[Axis::pp] = 2;
  c.micro_batches = 3;
  refused(c, "--micro-batches 3");
  c = base_config();
  c.layout[Axis::dp] = 2;
  c.zero_stage = 3;
  c.layout[Axis::pp] = 2;
  refused(c, "is refused");
}

QTEST_GUILESS_MAIN(TestParallel)
#include "test_parallel.moc"
