// SPDX-License-Identifier: GPL-3.0-or-later
#include "parallel/tensor_parallel.h"

#include <algorithm>

namespace shardscope {

namespace {

// A model collective's tag: its step and micro-batch, and the unit of its
// layer (1 + l; -1 for the embedding and the head's loss), so the events
// count bytes per layer per micro-batch.
CommTag tensor_parallel_tag(const Event& context) {
  CommTag tag{context.step, context.micro_batch, -1, -1, CommPurpose::tensor_parallel};
  if (context.layer >= 0) tag.unit = 1 + context.layer;
  return tag;
}

class CommunicatorGroup final : public TensorParallelGroup {
 public:
  explicit CommunicatorGroup(Communicator& comm) : comm_(comm) {}
  void all_reduce_sum(float* data, std::int64_t count, const Event& context) override {
    comm_.all_reduce(data, count, ReduceOp::sum, tensor_parallel_tag(context));
  }
  void all_gather(const float* send, float* recv, std::int64_t count, const Event& context) override {
    comm_.all_gather(send, recv, count, tensor_parallel_tag(context));
  }
  void reduce_scatter_sum(const float* send, float* recv, std::int64_t recv_count, const Event& context) override {
    comm_.reduce_scatter(send, recv, recv_count, ReduceOp::sum, tensor_parallel_tag(context));
  }

 private:
  Communicator& comm_;
};

}  // namespace

std::unique_ptr<TensorParallelGroup> make_tensor_parallel_group(Communicator& tp) {
  return std::make_unique<CommunicatorGroup>(tp);
}

double tensor_parallel_squares(const ParameterLayout& layout, std::int64_t begin, std::int64_t end,
                               const std::function<double(std::int64_t, std::int64_t)>& squares,
                               bool count_replicated) {
  double mine = 0.0;
  for (const ParameterEntry& e : layout.entries()) {
    const std::int64_t from = std::max(begin, e.offset), to = std::min(end, e.offset + e.numel);
    if (from >= to || (e.split == TensorSplit::replicated && !count_replicated)) continue;
    mine += squares(from, to - from);
  }
  return mine;
}

float tensor_parallel_sum_of_squares(const ParameterLayout& layout, std::int64_t begin, std::int64_t end,
                                     const std::function<double(std::int64_t, std::int64_t)>& squares, Communicator* tp,
                                     const CommTag& tag) {
  if (tp == nullptr) return static_cast<float>(squares(begin, end - begin));
  auto total = static_cast<float>(tensor_parallel_squares(layout, begin, end, squares, tp->rank() == 0));
  tp->all_reduce_host(&total, 1, ReduceOp::sum, tag);
  return total;
}

}  // namespace shardscope
