// SPDX-License-Identifier: GPL-3.0-or-later
#include "parallel/context_parallel.h"

namespace shardscope {

// A layer's transfers count toward its unit (1 + l), as tensor parallelism's
// do, so the events add up to bytes per layer per micro-batch. Forward's
// blocks are keys and values (the ring all-gathers them); backward's
// dK, dV exchange sums each block's gradient on its way home (a ring
// reduce-scatter); backward's key/value exchange is an all-gather again.
CommTag context_parallel_tag(const Event& context, ComputeKind pass, int block, int ring_step) {
  CommTag tag{context.step, context.micro_batch, -1, -1, CommPurpose::context_parallel};
  if (context.layer >= 0) tag.unit = 1 + context.layer;
  tag.layer = context.layer;
  tag.pass = pass;
  tag.chunk = block;
  tag.ring_step = ring_step;
  return tag;
}

namespace {

class CommunicatorRing final : public ContextParallelGroup {
 public:
  CommunicatorRing(Communicator& comm, bool zigzag) : comm_(comm), zigzag_(zigzag) {}
  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }
  bool zigzag() const override { return zigzag_; }
  void ring_exchange(const float* send, float* recv, std::int64_t count, const Event& context, ComputeKind pass,
                     int block, int ring_step, bool gradients) override {
    CommTag tag = context_parallel_tag(context, pass, block, ring_step);
    tag.phase = gradients ? RingPhase::reduce_scatter : RingPhase::all_gather;
    const int n = size(), next = (rank() + 1) % n, previous = (rank() + n - 1) % n;
    CommTag incoming = tag;  // the block arriving is the previous rank's
    incoming.chunk = (block + n - 1) % n;
    comm_.send_recv(send, count, next, recv, count, previous, tag, incoming);
  }

 private:
  Communicator& comm_;
  bool zigzag_;
};

}  // namespace

std::unique_ptr<ContextParallelGroup> make_context_parallel_group(Communicator& cp, bool zigzag) {
  return std::make_unique<CommunicatorRing>(cp, zigzag);
}

}  // namespace shardscope
