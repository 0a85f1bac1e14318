// SPDX-License-Identifier: GPL-3.0-or-later
// Fused attention, checked on the CPU: the host twin of the CUDA kernels
// (flash_reference.h: same tiles, same order, same rounding points) against
// the CPU backend's materialized attention, forward output and all of d_qkv.
//
// Tolerances (|flash - cpu| <= atol + rtol |cpu|, qkv and dO ~ N(0, 1)):
//   no rounding  1e-5 + 1e-5 |x|: exact fp32 attention both; only the order
//                of sums and the online softmax's rescaling differ;
//   fp16         out 4e-3 + 4e-3 |x|, d_qkv 1e-2 + 1e-2 |x|: Q, K, V, dO, P, dS
//                rounded to 11 bits (relative 2^-11 each);
//   bf16         out 3e-2 + 3e-2 |x|, d_qkv 8e-2 + 5e-2 |x|: the same with 8 bits
//                (2^-8), eight times fp16's.
// Cases: causal, padding (a padded tail of several tokens, holes, a sequence
// with no real token at all), both, none; T = 1, 17, 64 and 100 (not multiples
// of the tiles), head dims 16, 32, 64 and 128 (the kernels' largest), three
// sequences, several heads (one at 128).
#include <QTest>
#include <cmath>
#include <limits>
#include <vector>

#include "core/caching_device_memory.h"
#include "core/memory_ledger.h"
#include "engine/flash_reference.h"
#include "engine/host_fused_backend.h"
#include "engine/test_support.h"
#include "model/activations.h"
#include "model/model.h"
#include "model/model_config.h"
#include "ops/backend.h"
#include "ops/flash_math.h"
#include "ops/op_profile.h"
#include "train/trainer.h"

using namespace shardscope;
using namespace shardscope::test;

class TestFlashAttention : public QObject {
  Q_OBJECT
  std::unique_ptr<Backend> cpu = make_cpu_backend({2});

 private Q_SLOTS:
  void online_softmax_math();
  void reference_matches_materialized_data();
  void reference_matches_materialized();
  void nan_in_a_key_reaches_the_output();
  void which_kernel_the_cuda_backend_runs();
  void fused_attention_keeps_rows_not_squares();
  void models_learn_the_same_with_fused_attention();
  void parallel_layouts_train_the_same_with_fused_attention_data();
  void parallel_layouts_train_the_same_with_fused_attention();
};

void TestFlashAttention::online_softmax_math() {
  // Nothing live yet: no rescale of the (zero) sums, and a masked score gives exactly 0.
  QCOMPARE(math::flash_rescale(-INFINITY, -INFINITY), 0.0f);
  QCOMPARE(math::flash_rescale(-INFINITY, 3.0f), 0.0f);
  QCOMPARE(math::flash_rescale(2.0f, 2.0f), 1.0f);
  QCOMPARE(math::flash_exp(math::flash_masked(), -INFINITY), 0.0f);
  QCOMPARE(math::flash_exp(math::flash_masked(), 1.0f), 0.0f);
  QCOMPARE(math::flash_exp(1.0f, 1.0f), 1.0f);
  // A row with no live key: lse is +inf, out = 0 and P = 0 in backward.
  QCOMPARE(math::flash_log_sum_exp(-INFINITY, 0.0f), std::numeric_limits<float>::infinity());
  QCOMPARE(math::flash_inverse_sum(0.0f), 0.0f);
  QCOMPARE(math::flash_prob(0.5f, INFINITY), 0.0f);
  QCOMPARE(math::flash_prob(math::flash_masked(), 1.0f), 0.0f);
  // Two tiles online = one softmax: scores {1, 2} then {3}.
  float m = math::flash_running_max(-INFINITY, 2.0f);
  float l = math::flash_exp(1.0f, m) + math::flash_exp(2.0f, m);
  const float m2 = math::flash_running_max(m, 3.0f);
  l = l * math::flash_rescale(m, m2) + math::flash_exp(3.0f, m2);
  const double expected = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  QVERIFY(std::fabs(math::flash_log_sum_exp(m2, l) - expected) < 1e-6);
  QCOMPARE(math::flash_score_grad(0.25f, 2.0f, 1.0f, 0.5f), 0.125f);
}

void TestFlashAttention::reference_matches_materialized_data() {
  QTest::addColumn<int>("T");
  QTest::addColumn<int>("head_dim");
  QTest::addColumn<int>("heads");
  for (const int T : {1, 17, 64, 100})
    for (const int hd : {16, 32, 64, 128}) {
      const int heads = hd == 128 ? 1 : hd == 64 ? 2 : 3;
      QTest::newRow(qPrintable(QString("T=%1 hd=%2 H=%3").arg(T).arg(hd).arg(heads))) << T << hd << heads;
    }
}

void TestFlashAttention::reference_matches_materialized() {
  QFETCH(int, T);
  QFETCH(int, head_dim);
  QFETCH(int, heads);
  const int B = 3, H = heads, C = H * head_dim;
  const auto qkv = random_vector(static_cast<std::size_t>(B) * T * 3 * C, 100 + T);
  const auto dy = random_vector(static_cast<std::size_t>(B) * T * C, 200 + T);
  std::vector<std::int32_t> padding(static_cast<std::size_t>(B) * T, 1);
  for (int t = 2 * T / 3; t < T; ++t) padding[static_cast<std::size_t>(t)] = 0;  // sequence 0: a padded tail
  for (int t = 1; t < T; t += 3) padding[static_cast<std::size_t>(T + t)] = 0;   // sequence 1: holes
  for (int t = 0; t < T; ++t) padding[static_cast<std::size_t>(2 * T + t)] = 0;  // sequence 2: no real token

  struct Case {
    const char* name;
    bool causal, padded;
  };
  struct Rounding {
    const char* name;
    FlashRounding rounding;
    double out_atol, out_rtol, grad_atol, grad_rtol;
  };
  for (const Case c : {Case{"causal", true, false}, Case{"padding", false, true}, Case{"causal+padding", true, true},
                       Case{"none", false, false}}) {
    const AttentionMask mask{c.causal, c.padded ? padding.data() : nullptr};
    std::vector<float> out(dy.size()), probs(static_cast<std::size_t>(B) * H * T * T);
    std::vector<float> d_qkv(qkv.size()), scratch(probs.size());
    cpu->attention_forward(out.data(), probs.data(), qkv.data(), B, T, C, H, mask);
    cpu->attention_backward(d_qkv.data(), scratch.data(), dy.data(), qkv.data(), out.data(), probs.data(), B, T, C, H,
                            mask);
    for (const Rounding r : {Rounding{"fp32", FlashRounding::none, 1e-5, 1e-5, 1e-5, 1e-5},
                             Rounding{"fp16", FlashRounding::fp16, 4e-3, 4e-3, 1e-2, 1e-2},
                             Rounding{"bf16", FlashRounding::bf16, 3e-2, 3e-2, 8e-2, 5e-2}}) {
      std::vector<float> f_out(out.size(), 7.0f), lse(static_cast<std::size_t>(B) * H * T, 7.0f);
      std::vector<float> f_d_qkv(qkv.size(), 7.0f);  // overwritten everywhere
      flash_forward_reference(r.rounding, f_out.data(), lse.data(), qkv.data(), B, T, C, H, mask);
      flash_backward_reference(r.rounding, f_d_qkv.data(), dy.data(), qkv.data(), f_out.data(), lse.data(), B, T, C, H,
                               mask);
      const QString what = QString("%1 %2 ").arg(c.name).arg(r.name);
      std::size_t at = 0;
      const double out_worst = worst_mismatch(f_out.data(), out.data(), out.size(), r.out_atol, r.out_rtol, &at);
      QVERIFY2(out_worst <= 1.0, qPrintable(what + QString("out[%1] flash %2 materialized %3 (%4x the tolerance)")
                                                       .arg(at)
                                                       .arg(static_cast<double>(f_out[at]), 0, 'g', 9)
                                                       .arg(static_cast<double>(out[at]), 0, 'g', 9)
                                                       .arg(out_worst)));
      const double grad_worst =
          worst_mismatch(f_d_qkv.data(), d_qkv.data(), d_qkv.size(), r.grad_atol, r.grad_rtol, &at);
      QVERIFY2(grad_worst <= 1.0, qPrintable(what + QString("d_qkv[%1] flash %2 materialized %3 (%4x the tolerance)")
                                                        .arg(at)
                                                        .arg(static_cast<double>(f_d_qkv[at]), 0, 'g', 9)
                                                        .arg(static_cast<double>(d_qkv[at]), 0, 'g', 9)
                                                        .arg(grad_worst)));
      if (c.padded)  // sequence 2 has no real key: lse is the +inf marker, out and d_qkv are 0
        for (int h = 0; h < H; ++h)
          for (int t = 0; t < T; ++t)
            QCOMPARE(lse[(static_cast<std::size_t>(2) * H + h) * T + t], std::numeric_limits<float>::infinity());
    }
  }
}

// A NaN in one key's vector makes every query that sees that key NaN, as PyTorch's softmax does: the
// small-T kernel (T = 64, head dim 32, what gpt-tiny runs) must not drop it in its max or in its
// zeroing of masked keys. Causal: queries before the key do not see it and stay finite.
void TestFlashAttention::nan_in_a_key_reaches_the_output() {
  const int B = 1, T = 64, H = 2, C = 64, key = 40;
  auto qkv = random_vector(static_cast<std::size_t>(B) * T * 3 * C, 7);
  qkv[static_cast<std::size_t>(key) * 3 * C + C] = std::numeric_limits<float>::quiet_NaN();  // head 0 of K at t = 40
  std::vector<float> out(static_cast<std::size_t>(B) * T * C), probs(static_cast<std::size_t>(B) * H * T * T);
  cpu->attention_forward(out.data(), probs.data(), qkv.data(), B, T, C, H, AttentionMask{true, nullptr});
  for (int t = 0; t < T; ++t) {
    const float head0 = out[static_cast<std::size_t>(t) * C], head1 = out[static_cast<std::size_t>(t) * C + C / H];
    QVERIFY2(std::isnan(head0) == (t >= key), qPrintable(QString("query %1, head 0: %2").arg(t).arg(head0)));
    QVERIFY2(std::isfinite(head1), qPrintable(QString("query %1, head 1: %2").arg(t).arg(head1)));
  }
}

void TestFlashAttention::which_kernel_the_cuda_backend_runs() {
  QVERIFY(cuda_attention_kernel(true, 64) == AttentionKernel::fused);
  QVERIFY(cuda_attention_kernel(true, 16) == AttentionKernel::fused);
  QVERIFY(cuda_attention_kernel(true, 128) == AttentionKernel::fused);
  QVERIFY(cuda_attention_kernel(false, 64) == AttentionKernel::materialized);  // fp32 / TF32 math
  QVERIFY(cuda_attention_kernel(true, 72) == AttentionKernel::materialized);   // not a multiple of 16
  QVERIFY(cuda_attention_kernel(true, 256) == AttentionKernel::materialized);  // beyond the tiles
  QVERIFY(cpu->attention_kernel(64) == AttentionKernel::materialized);
  // A wrapping backend (the op profile) says what the backend it wraps runs.
  OpProfile profile;
  const auto profiled = make_profiling_backend(std::make_unique<testing::HostFusedAttentionBackend>(), profile);
  QVERIFY(profiled->attention_kernel(64) == AttentionKernel::fused);
}

void TestFlashAttention::fused_attention_keeps_rows_not_squares() {
  ModelConfig config;
  config.kind = ModelKind::gpt;
  config.layers = 2;
  config.channels = 64;
  config.heads = 4;
  config.vocab = 50;
  config.max_seq = 32;
  const int B = 2, T = 32, H = config.heads;
  const std::int64_t squares = std::int64_t{B} * H * T * T, rows = std::int64_t{B} * H * T;
  QCOMPARE(attention_saved_floats(AttentionKernel::materialized, B, H, T), squares);
  QCOMPARE(attention_saved_floats(AttentionKernel::fused, B, H, T), rows);
  QCOMPARE(attention_scratch_floats(AttentionKernel::fused, B, H, T), rows);
  QCOMPARE(Activations::layer_floats(config, B, T) - Activations::layer_floats(config, B, T, AttentionKernel::fused),
           squares - rows);
  const StageLayers whole = whole_model_stage(config);
  QCOMPARE(Activations::total_floats(config, B, T, false, whole) -
               Activations::total_floats(config, B, T, false, whole, AttentionKernel::fused),
           config.layers * (squares - rows));
  QCOMPARE(BackwardScratch::total_floats(config, B, T) -
               BackwardScratch::total_floats(config, B, T, true, AttentionKernel::fused),
           squares - rows);
  // The views follow the sizes: attn_y starts right after the log-sum-exp rows.
  std::vector<float> buffer(
      static_cast<std::size_t>(Activations::total_floats(config, B, T, false, whole, AttentionKernel::fused)));
  Activations acts;
  acts.bind(config, B, T, false, whole, buffer.data(), AttentionKernel::fused);
  QCOMPARE(acts.layers[0].attn_y - acts.layers[0].probs, rows);
}

// GPT (causal) and BERT (padding mask) on a backend that runs the fused
// algorithm on the host: the model carves (B, H, T) rows for probs and
// d_probs, hands backward the forward's output and mask, and recomputes them
// under checkpointing; loss and every gradient match the CPU backend's
// materialized run to fp32 rounding (1e-5 relative for the loss, 1e-5 + 1e-3
// |x| for gradients after two layers of backward).
void TestFlashAttention::models_learn_the_same_with_fused_attention() {
  for (const char* preset : {"gpt-tiny", "bert-tiny"})
    for (const bool checkpointing : {false, true}) {
      const ModelConfig config = find_model_preset(preset);
      const int B = 2, T = 40;  // not a multiple of the tiles
      std::vector<std::int32_t> ids(static_cast<std::size_t>(B) * T), targets(ids.size()), mask(ids.size(), 1);
      for (std::size_t i = 0; i < ids.size(); ++i) {
        ids[i] = static_cast<std::int32_t>((i * 7919 + 13) % static_cast<std::size_t>(config.vocab));
        targets[i] =
            i % 5 == 0 ? -1 : static_cast<std::int32_t>((i * 104729 + 7) % static_cast<std::size_t>(config.vocab));
      }
      for (int t = 30; t < T; ++t) mask[static_cast<std::size_t>(T + t)] = 0;  // sequence 1: padded tail
      const bool bert = config.kind == ModelKind::bert;
      const Batch batch{B, T, ids.data(), targets.data(), nullptr, bert ? mask.data() : nullptr};
      struct Run {
        float loss;
        std::vector<float> grads;
        std::int64_t activation_bytes;
      };
      auto run = [&](Backend& backend) {
        MemoryLedger ledger;
        auto model = make_model(config, backend, ledger);
        model->init_weights(1);
        model->set_checkpointing(checkpointing);
        model->zero_grads();
        Run r;
        r.loss = model->forward(batch);
        model->backward();
        r.grads.assign(model->grads(), model->grads() + model->parameter_count());
        r.activation_bytes = ledger.current()[MemoryCategory::activations];
        return r;
      };
      testing::HostFusedAttentionBackend fused_backend;
      const Run materialized = run(*cpu), fused = run(fused_backend);
      const QString what = QString("%1%2 ").arg(preset).arg(checkpointing ? " checkpointing" : "");
      QVERIFY2(std::fabs(fused.loss - materialized.loss) <= 1e-5 * std::fabs(materialized.loss),
               qPrintable(what + QString("loss fused %1 materialized %2").arg(fused.loss).arg(materialized.loss)));
      std::size_t at = 0;
      const double worst =
          worst_mismatch(fused.grads.data(), materialized.grads.data(), fused.grads.size(), 1e-5, 1e-3, &at);
      QVERIFY2(worst <= 1.0, qPrintable(what + QString("grad[%1] fused %2 materialized %3 (%4x the tolerance)")
                                                   .arg(at)
                                                   .arg(static_cast<double>(fused.grads[at]), 0, 'g', 9)
                                                   .arg(static_cast<double>(materialized.grads[at]), 0, 'g', 9)
                                                   .arg(worst)));
      // Each kept set of layer activations holds B H T floats of attention instead of B H T^2.
      const std::int64_t sets = checkpointing ? 1 : config.layers;
      const std::int64_t saved = 4 * sets * std::int64_t{B} * config.heads * (std::int64_t{T} * T - T);
      QCOMPARE(materialized.activation_bytes - fused.activation_bytes, saved);
    }
}

// The trainer on ranks whose attention is fused (the kernels' host twin, on a
// pretend device of host memory, as a bf16 GPU rank sees it): every parallel
// layout carves rows instead of T x T, sends activations between stages and
// recomputes checkpointed layers through the new backward arguments, and its
// losses follow the CPU trainer's (materialized attention) step by step.
void TestFlashAttention::parallel_layouts_train_the_same_with_fused_attention_data() {
  QTest::addColumn<QString>("model");
  QTest::addColumn<int>("dp");
  QTest::addColumn<int>("pp");
  QTest::addColumn<int>("zero");
  QTest::addColumn<int>("checkpoint");
  QTest::addColumn<QString>("precision");
  QTest::newRow("gpt ddp2") << "gpt-tiny" << 2 << 1 << 0 << 0 << "fp32";
  QTest::newRow("gpt zero3 dp2 bf16") << "gpt-tiny" << 2 << 1 << 3 << 0 << "bf16";
  QTest::newRow("gpt pp2 ckpt") << "gpt-tiny" << 1 << 2 << 0 << 1 << "fp32";
  QTest::newRow("gpt dp2 pp2 zero1 fp16") << "gpt-tiny" << 2 << 2 << 1 << 0 << "fp16";
  QTest::newRow("bert dp2 zero2 bf16") << "bert-tiny" << 2 << 1 << 2 << 0 << "bf16";
  QTest::newRow("bert pp2 ckpt") << "bert-tiny" << 1 << 2 << 0 << 1 << "fp32";
}

void TestFlashAttention::parallel_layouts_train_the_same_with_fused_attention() {
  QFETCH(QString, model);
  QFETCH(int, dp);
  QFETCH(int, pp);
  QFETCH(int, zero);
  QFETCH(int, checkpoint);
  QFETCH(QString, precision);
  RunConfig c;
  c.model = model.toStdString();
  c.steps = 3;
  c.batch = 8;
  c.seq = 24;  // not a multiple of the tiles
  c.layout[Axis::dp] = dp;
  c.layout[Axis::pp] = pp;
  c.zero_stage = zero;
  c.micro_batches = pp > 1 ? 2 : 1;
  c.checkpoint = checkpoint != 0;
  c.precision = parse_precision(precision.toStdString());
  c.threads = 2;
  Trainer materialized(c);
  Trainer fused(c, nullptr, [](int) {
    RankDevice d;
    d.memory = std::make_unique<CachingDeviceMemory>(std::make_unique<HostRawAllocator>(std::int64_t{1} << 30));
    d.backend = std::make_unique<testing::HostFusedAttentionBackend>();
    return d;
  });
  for (int step = 1; step <= c.steps; ++step) {
    const float want = materialized.step().loss, got = fused.step().loss;
    QVERIFY2(std::fabs(got - want) <= 1e-4f * std::fabs(want),
             qPrintable(QString("step %1: fused %2, materialized %3").arg(step).arg(got).arg(want)));
  }
  // Every rank keeps B H T floats per attention instead of B H T^2 (one slot's worth here).
  for (int r = 0; r < fused.world_size(); ++r)
    QVERIFY(fused.ledger(r).peak()[MemoryCategory::activations] <
            materialized.ledger(r).peak()[MemoryCategory::activations]);
}

QTEST_GUILESS_MAIN(TestFlashAttention)
#include "test_flash_attention.moc"
