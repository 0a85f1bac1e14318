// SPDX-License-Identifier: GPL-3.0-or-later
// Zero-bubble pipelines (Qi et al. 2024): the backward split into B and W gives
// the same gradient bits as the whole backward.
#include <QTest>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "core/memory_ledger.h"
#include "model/model.h"
#include "ops/backend.h"

using namespace shardscope;

namespace {

// The gradients after two micro-batches of `model_name`, each backward whole
// or split into B and W (both B's first, then both W's, as a schedule may).
std::vector<float> gradients_after_two_micro_batches(const char* model_name, bool split, std::int64_t* kept_bytes) {
  MemoryLedger ledger;
  auto backend = make_cpu_backend({2});
  auto model = make_model(find_model_preset(model_name), *backend, ledger);
  model->init_weights(7);
  model->zero_grads();
  model->set_activation_slots(2);
  const int B = 2, T = 16;
  std::vector<std::int32_t> ids(B * T), targets(B * T);
  for (int mb = 0; mb < 2; ++mb) {
    for (int i = 0; i < B * T; ++i) {
      ids[std::size_t(i)] = (i * 7 + mb * 13) % 60 + 1;
      targets[std::size_t(i)] = (i * 5 + mb * 3) % 60 + 1;
    }
    model->open_slot({0, mb});
    model->forward(Batch{B, T, ids.data(), targets.data(), nullptr, nullptr});
    const std::int64_t before = ledger.current()[MemoryCategory::activations];
    if (split) {
      model->backward_input(2.0 * B * T);
      *kept_bytes = ledger.current()[MemoryCategory::activations] - before;
    } else {
      model->backward(2.0 * B * T);
    }
  }
  if (split)
    for (int mb = 0; mb < 2; ++mb) {
      model->use_slot({0, mb});
      if (!model->weights_pending()) throw std::logic_error("B kept nothing for W");
      model->backward_weights();
      if (model->weights_pending()) throw std::logic_error("W left weight gradients owed");
    }
  return std::vector<float>(model->grads(), model->grads() + model->parameter_count());
}

}  // namespace

class TestZeroBubble : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void split_backward_gives_the_same_gradient_bits();
};

void TestZeroBubble::split_backward_gives_the_same_gradient_bits() {
  for (const char* name : {"gpt-tiny", "bert-tiny"}) {
    std::int64_t kept = 0;
    const std::vector<float> whole = gradients_after_two_micro_batches(name, false, &kept);
    const std::vector<float> split = gradients_after_two_micro_batches(name, true, &kept);
    QCOMPARE(split.size(), whole.size());
    QVERIFY2(std::memcmp(split.data(), whole.data(), whole.size() * sizeof(float)) == 0, name);
    // B keeps each layer's four linear output gradients, 9C floats per token, on the ledger until W.
    const ModelConfig config = find_model_preset(name);
    QCOMPARE(kept, std::int64_t{4} * config.layers * 2 * 16 * 9 * config.channels);
  }
}

QTEST_GUILESS_MAIN(TestZeroBubble)
#include "test_zero_bubble.moc"
