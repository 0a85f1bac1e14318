// SPDX-License-Identifier: GPL-3.0-or-later
#include "parallel/expert_parallel.h"

#include <algorithm>

namespace shardscope {

std::vector<int> expert_parallel_group(const Grid& grid, int rank, int ep) {
  const int first = grid.dp_rank_of(rank) / ep * ep;
  std::vector<int> members;
  for (int d = first; d < first + ep; ++d) members.push_back(grid.with_coordinate(rank, Axis::dp, d));
  return members;
}

std::vector<int> expert_data_parallel_group(const Grid& grid, int rank, int ep) {
  std::vector<int> members;
  for (int d = grid.dp_rank_of(rank) % ep; d < grid.dp(); d += ep)
    members.push_back(grid.with_coordinate(rank, Axis::dp, d));
  return members;
}

float expert_parallel_sum_of_squares(const ParameterLayout& layout, std::int64_t begin, std::int64_t end,
                                     const std::function<double(std::int64_t, std::int64_t)>& squares, Communicator& ep,
                                     const CommTag& tag) {
  // Runs of consecutive parameters of one kind, each summed in one call.
  double dense = 0.0, experts = 0.0;
  const auto& entries = layout.entries();
  for (std::size_t i = 0; i < entries.size();) {
    std::size_t j = i + 1;
    while (j < entries.size() && entries[j].expert == entries[i].expert) ++j;
    const std::int64_t from = std::max(begin, entries[i].offset),
                       to = std::min(end, entries[j - 1].offset + entries[j - 1].numel);
    if (from < to) (entries[i].expert ? experts : dense) += squares(from, to - from);
    i = j;
  }
  auto expert_total = static_cast<float>(experts);
  ep.all_reduce_host(&expert_total, 1, ReduceOp::sum, tag);
  return static_cast<float>(dense) + expert_total;
}

namespace {

class CommunicatorExperts final : public ExpertParallelGroup {
 public:
  explicit CommunicatorExperts(Communicator& comm) : comm_(comm) {}
  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }

  void all_to_all(const float* send, const std::vector<std::int64_t>& send_counts, float* recv,
                  const std::vector<std::int64_t>& recv_counts, const Event& context) override {
    const int n = size(), me = rank();
    std::vector<std::int64_t> send_at(static_cast<std::size_t>(n), 0), recv_at(send_at.size(), 0);
    for (std::size_t q = 1; q < send_at.size(); ++q) {
      send_at[q] = send_at[q - 1] + send_counts[q - 1];
      recv_at[q] = recv_at[q - 1] + recv_counts[q - 1];
    }
    const auto self = static_cast<std::size_t>(me);
    std::copy(send + send_at[self], send + send_at[self] + send_counts[self], recv + recv_at[self]);
    CommTag tag{context.step, context.micro_batch, -1, context.layer >= 0 ? 1 + context.layer : -1,
                CommPurpose::expert_parallel};
    for (int s = 1; s < n; ++s) {
      const auto to = static_cast<std::size_t>((me + s) % n), from = static_cast<std::size_t>((me - s + n) % n);
      comm_.send_recv(send + send_at[to], send_counts[to], static_cast<int>(to), recv + recv_at[from],
                      recv_counts[from], static_cast<int>(from), tag, tag);
    }
  }

 private:
  Communicator& comm_;
};

}  // namespace

std::unique_ptr<ExpertParallelGroup> make_expert_parallel_group(Communicator& ep) {
  return std::make_unique<CommunicatorExperts>(ep);
}

}  // namespace shardscope
