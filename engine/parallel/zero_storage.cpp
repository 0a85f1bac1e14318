// SPDX-License-Identifier: GPL-3.0-or-later
#include "parallel/zero_storage.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace shardscope {

ZeroShardedStorage::ZeroShardedStorage(int stage, Model& model, Communicator& dp, MemoryLedger& ledger)
    : stage_(stage), model_(model), dp_(dp), ledger_(ledger) {
  const std::int64_t N = dp.size(), r = dp.rank();
  std::int64_t largest_chunk = 0;
  for (const ParameterUnit& u : model.layout().units()) {
    UnitShard s;
    s.unit = u;
    s.chunk = (u.numel() + N - 1) / N;
    s.packed = shard_size_;
    s.mine = std::clamp<std::int64_t>(u.numel() - r * s.chunk, 0, s.chunk);
    shard_size_ += s.chunk;
    largest_chunk = std::max(largest_chunk, s.chunk);
    units_.emplace(u.id, std::move(s));
  }
  grad_shard_ = Buffer(ledger, MemoryCategory::gradients, shard_size_ * 4);
  if (stage >= 3) param_shard_ = Buffer(ledger, MemoryCategory::parameters, shard_size_ * 4);
  received_ = Buffer(ledger, MemoryCategory::communication, largest_chunk * 4);
}

ZeroShardedStorage::UnitShard& ZeroShardedStorage::shard_of(int unit) {
  auto it = units_.find(unit);
  if (it == units_.end()) throw std::logic_error("ZeRO storage: no unit " + std::to_string(unit));
  return it->second;
}

void ZeroShardedStorage::set_context(EventSink* sink, const RunClock* clock, const Event& base) {
  sink_ = sink;
  clock_ = clock;
  base_ = base;
}

void ZeroShardedStorage::emit_shard(ShardAction action, int unit, std::int64_t bytes) {
  if (sink_ == nullptr) return;
  Event e = base_;
  e.kind = EventKind::shard;
  e.shard_action = action;
  e.layer = unit - 1;  // -1 embeddings, L the head
  e.bytes = bytes;
  e.start_ns = e.end_ns = clock_ != nullptr ? clock_->now_ns() : 0;
  sink_->emit(e);
}

void ZeroShardedStorage::init_parameters(std::uint64_t seed) {
  for (auto& [id, s] : units_) {
    Buffer whole(ledger_, MemoryCategory::workspace, s.unit.numel() * 4);
    model_.init_unit(seed, id, whole.floats());
    std::memcpy(param_shard_.floats() + s.packed, whole.floats() + dp_.rank() * s.chunk,
                static_cast<std::size_t>(s.mine) * 4);
  }
}

void ZeroShardedStorage::zero_gradients() {
  std::memset(grad_shard_.floats(), 0, static_cast<std::size_t>(shard_size_) * 4);
}

std::vector<AdamW::ShardRange> ZeroShardedStorage::shard_ranges() const {
  std::vector<AdamW::ShardRange> ranges;
  for (const auto& [id, s] : units_) {
    const std::int64_t begin = s.unit.begin + dp_.rank() * s.chunk;
    if (s.mine > 0) ranges.push_back({begin, begin + s.mine, s.packed});
  }
  return ranges;
}

void ZeroShardedStorage::parameters_needed(Model& model, int unit) {
  if (stage_ < 3) return;
  UnitShard& s = shard_of(unit);
  if (s.users++ > 0) return;
  // All-gather every rank's chunk of this unit (padded to chunk x Nd).
  s.gathered = Buffer(ledger_, MemoryCategory::communication, s.chunk * dp_.size() * 4);
  float* send = s.gathered.floats() + dp_.rank() * s.chunk;  // in place: our slot of the result
  std::memcpy(send, param_shard_.floats() + s.packed, static_cast<std::size_t>(s.chunk) * 4);
  CommTag tag{base_.step, base_.micro_batch, unit};
  dp_.all_gather(send, s.gathered.floats(), s.chunk, tag);
  model.bind_unit_parameters(unit, s.gathered.floats());
  emit_shard(ShardAction::gather, unit, s.unit.numel() * 4);
}

void ZeroShardedStorage::parameters_done(Model& model, int unit) {
  if (stage_ < 3) return;
  UnitShard& s = shard_of(unit);
  if (--s.users > 0) return;
  model.bind_unit_parameters(unit, nullptr);
  s.gathered = Buffer();
  emit_shard(ShardAction::release, unit, s.unit.numel() * 4);
}

void ZeroShardedStorage::gradients_needed(Model& model, int unit) {
  UnitShard& s = shard_of(unit);
  if (!s.gradient.empty()) return;
  // The whole unit's gradient, padded so it splits into Nd chunks; zero-filled (backward adds).
  s.gradient = Buffer(ledger_, MemoryCategory::communication, s.chunk * dp_.size() * 4);
  model.bind_unit_gradients(unit, s.gradient.floats());
}

void ZeroShardedStorage::gradients_done(Model& model, int unit) {
  UnitShard& s = shard_of(unit);
  // Reduce-scatter: this rank receives the average over ranks of its chunk, and adds it
  // to its gradient shard (accumulation steps add up there).
  CommTag tag{base_.step, base_.micro_batch, unit};
  dp_.reduce_scatter(s.gradient.floats(), received_.floats(), s.chunk, ReduceOp::average, tag);
  float* shard = grad_shard_.floats() + s.packed;
  const float* got = received_.floats();
  for (std::int64_t i = 0; i < s.chunk; ++i) shard[i] += got[i];
  model.bind_unit_gradients(unit, nullptr);
  s.gradient = Buffer();
}

void ZeroShardedStorage::all_gather_parameters(const CommTag& tag) {
  float* params = model_.params();
  for (auto& [id, s] : units_) {
    Buffer staging(ledger_, MemoryCategory::communication, s.chunk * dp_.size() * 4);
    float* send = staging.floats() + dp_.rank() * s.chunk;
    std::memcpy(send, params + s.unit.begin + dp_.rank() * s.chunk, static_cast<std::size_t>(s.mine) * 4);
    CommTag t = tag;
    t.bucket = id;
    dp_.all_gather(send, staging.floats(), s.chunk, t);
    std::memcpy(params + s.unit.begin, staging.floats(), static_cast<std::size_t>(s.unit.numel()) * 4);
  }
}

}  // namespace shardscope
