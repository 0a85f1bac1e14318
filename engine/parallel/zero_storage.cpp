// SPDX-License-Identifier: GPL-3.0-or-later
#include "parallel/zero_storage.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "clock/device_clock.h"
#include "core/half.h"

namespace shardscope {

ZeroShardedStorage::ZeroShardedStorage(const ShardingRules& rules, const RankPlan& rank, DType dtype, Model& model,
                                       Communicator& dp, MemoryLedger& ledger)
    : rules_(rules), dtype_(dtype), model_(model), dp_(dp), ledger_(ledger) {
  if (!rules.unit_storage()) throw std::invalid_argument("ZeRO storage: fp32 stages 0 and 1 use the model's own buffers");
  if (dtype != DType::f32 && dtype != DType::f16 && dtype != DType::bf16)
    throw std::invalid_argument("ZeRO storage: dtype must be f32, f16 or bf16");
  if ((dtype != DType::f32) != rules.mixed()) throw std::invalid_argument("ZeRO storage: dtype and precision differ");
  for (const UnitChunk& c : rank.chunks) {
    const ParameterUnit* u = model.layout().find_unit(c.unit);
    if (u == nullptr || u->numel() != c.numel)
      throw std::logic_error("ZeRO storage: the plan's unit " + std::to_string(c.unit) + " is not the model's");
    UnitShard s;
    s.unit = *u;
    s.chunk = c.chunk;
    s.packed = c.packed;
    s.mine = c.mine;
    shard_size_ += s.chunk;
    units_.emplace(c.unit, std::move(s));
  }
  const std::int64_t whole = model.parameter_count();
  grads_ = Buffer(ledger, MemoryCategory::gradients, (shards_gradients() ? shard_size_ : whole) * element_bytes());
  if (shards_parameters())
    params_ = Buffer(ledger, MemoryCategory::parameters, shard_size_ * element_bytes());
  else if (mixed())
    params_ = Buffer(ledger, MemoryCategory::parameters, whole * element_bytes());
}

ZeroShardedStorage::UnitShard& ZeroShardedStorage::shard_of(int unit) {
  auto it = units_.find(unit);
  if (it == units_.end()) throw std::logic_error("ZeRO storage: no unit " + std::to_string(unit));
  return it->second;
}

void ZeroShardedStorage::set_context(EventSink* sink, DeviceClock* clock, const Event& base, CommPurpose gathers) {
  sink_ = sink;
  clock_ = clock;
  base_ = base;
  gathers_ = gathers;
}

void ZeroShardedStorage::emit_shard(ShardAction action, int unit, std::int64_t bytes) {
  if (sink_ == nullptr) return;
  Event e = base_;
  e.kind = EventKind::shard;
  e.shard_action = action;
  e.unit = unit;
  e.bytes = bytes;
  e.start_ns = e.end_ns = clock_ != nullptr ? clock_->now() : 0;
  sink_->emit(e);
}

void ZeroShardedStorage::init_parameters(std::uint64_t seed) {
  if (!shards_parameters() && !mixed()) throw std::logic_error("ZeRO-2 fp32: the model initialises its own parameters");
  Backend& be = model_.backend();
  std::vector<float> whole;         // host: the unit's initial values
  std::vector<std::uint16_t> bits;  // host: rounded to 16 bits
  for (auto& [id, s] : units_) {
    whole.assign(static_cast<std::size_t>(s.unit.numel()), 0.0f);
    model_.init_unit(seed, id, whole.data());
    const float* from = whole.data();
    std::int64_t count = s.unit.numel();
    std::byte* to = bytes_at(params_, s.unit.begin);
    if (shards_parameters()) {
      from += dp_.rank() * s.chunk;
      count = s.mine;
      to = bytes_at(params_, s.packed);
    }
    if (mixed()) {
      bits.resize(static_cast<std::size_t>(count));
      half::narrow(dtype_, from, bits.data(), count);
      be.upload(to, bits.data(), count * 2);
    } else {
      be.upload(to, from, count * 4);
    }
  }
}

void ZeroShardedStorage::zero_gradients() {
  model_.backend().zero(grads_.data(), grads_.bytes());
  first_overflow_.clear();
}

std::string ZeroShardedStorage::tensor_at(std::int64_t offset) const {
  for (const auto& e : model_.layout().entries())
    if (offset >= e.offset && offset < e.offset + e.numel) return e.name;
  return "offset " + std::to_string(offset);
}

std::int64_t ZeroShardedStorage::flat_offset_of_gradient(std::int64_t i) const {
  if (!shards_gradients()) return i;
  for (const auto& [id, s] : units_)
    if (i >= s.packed && i < s.packed + s.chunk) return s.unit.begin + dp_.rank() * s.chunk + (i - s.packed);
  return -1;
}

void ZeroShardedStorage::note_overflow(const std::uint16_t* values, std::int64_t n, std::int64_t flat_begin) {
  if (!first_overflow_.empty()) return;
  const std::int64_t bad = model_.backend().first_non_finite_16(dtype_, values, n);
  if (bad >= 0) first_overflow_ = tensor_at(flat_begin + bad);
}

void ZeroShardedStorage::gather_parameters(Model& model, int unit) {
  if (!shards_parameters() && !mixed()) return;
  UnitShard& s = shard_of(unit);
  if (s.users++ > 0) return;
  const std::byte* source = nullptr;
  if (shards_parameters()) {
    // All-gather every rank's chunk of this unit (padded to chunk x Nd).
    s.gathered = Buffer(ledger_, MemoryCategory::communication, s.chunk * dp_.size() * element_bytes());
    std::byte* send = bytes_at(s.gathered, dp_.rank() * s.chunk);  // in place: our slot of the result
    model.backend().copy(send, bytes_at(params_, s.packed), s.chunk * element_bytes());
    const CommTag tag = unit_tag(base_.step, base_.micro_batch, unit, gathers_);
    dp_.all_gather(send, s.gathered.data(), s.chunk, dtype_, tag);
    source = static_cast<const std::byte*>(s.gathered.data());
    emit_shard(ShardAction::gather, unit, s.unit.numel() * element_bytes());
  } else {
    source = bytes_at(params_, s.unit.begin);
  }
  if (mixed()) {
    s.working = Buffer(ledger_, MemoryCategory::workspace, s.unit.numel() * 4);
    model.backend().widen(dtype_, reinterpret_cast<const std::uint16_t*>(source), s.working.floats(), s.unit.numel());
    model.bind_unit_parameters(unit, s.working.floats());
  } else {
    model.bind_unit_parameters(unit, s.gathered.floats());
  }
}

void ZeroShardedStorage::release_parameters(Model& model, int unit) {
  if (!shards_parameters() && !mixed()) return;
  UnitShard& s = shard_of(unit);
  if (--s.users > 0) return;
  model.bind_unit_parameters(unit, nullptr);
  s.working = Buffer();
  if (shards_parameters()) {
    s.gathered = Buffer();
    emit_shard(ShardAction::release, unit, s.unit.numel() * element_bytes());
  }
}

void ZeroShardedStorage::gradients_needed(Model& model, int unit) {
  UnitShard& s = shard_of(unit);
  if (!s.gradient.empty()) return;
  // The whole unit's gradient in fp32, zero-filled (backward adds); padded so it
  // splits into Nd chunks when it is reduce-scattered.
  const std::int64_t count = shards_gradients() ? s.chunk * dp_.size() : s.unit.numel();
  s.gradient = Buffer(ledger_, mixed() ? MemoryCategory::workspace : MemoryCategory::communication, count * 4);
  model.bind_unit_gradients(unit, s.gradient.floats());
}

void ZeroShardedStorage::gradients_done(Model& model, int unit) {
  UnitShard& s = shard_of(unit);
  hand_over(model, s, unit, s.gradient);
  model.bind_unit_gradients(unit, nullptr);
  s.gradient = Buffer();
}

float* ZeroShardedStorage::hold_gradients(Model& model, int unit) {
  UnitShard& s = shard_of(unit);
  if (s.gradient.empty())
    throw std::logic_error("ZeRO storage: unit " + std::to_string(unit) + " has no gradient to hold");
  s.held.push_back(std::move(s.gradient));
  s.gradient = Buffer();
  model.bind_unit_gradients(unit, nullptr);
  return s.held.back().floats();
}

void ZeroShardedStorage::held_gradients_done(Model& model, int unit, float* held) {
  UnitShard& s = shard_of(unit);
  const auto it = std::find_if(s.held.begin(), s.held.end(), [held](Buffer& b) { return b.floats() == held; });
  if (it == s.held.end())
    throw std::logic_error("ZeRO storage: unit " + std::to_string(unit) + " holds no such gradient for a W");
  hand_over(model, s, unit, *it);
  s.held.erase(it);
}

void ZeroShardedStorage::hand_over(Model& model, UnitShard& s, int unit, Buffer& gradient) {
  Backend& be = model.backend();
  const CommTag tag = unit_tag(base_.step, base_.micro_batch, unit, CommPurpose::gradients);
  if (!shards_gradients()) {
    // Mixed stages 0/1: round to 16 bits and add to the stored gradient (the
    // accumulation over micro-batches is in 16 bits, as a GPU's .grad is).
    auto* stored = reinterpret_cast<std::uint16_t*>(bytes_at(grads_, s.unit.begin));
    be.accumulate_16(dtype_, stored, gradient.floats(), s.unit.numel());
    note_overflow(stored, s.unit.numel(), s.unit.begin);  // this micro-batch's or the accumulated sum's
  } else if (mixed()) {
    // Round to 16 bits, reduce-scatter in 16 bits, add to the 16-bit shard.
    const std::int64_t padded = s.chunk * dp_.size();
    Buffer rounded(ledger_, MemoryCategory::communication, padded * 2);
    auto* bits = static_cast<std::uint16_t*>(rounded.data());
    be.narrow(dtype_, gradient.floats(), bits, padded);
    note_overflow(bits, s.unit.numel(), s.unit.begin);
    std::uint16_t* mine = bits + dp_.rank() * s.chunk;  // in place: the unit's own chunk receives the average
    dp_.reduce_scatter(bits, mine, s.chunk, dtype_, ReduceOp::average, tag);
    be.add_16(dtype_, reinterpret_cast<std::uint16_t*>(bytes_at(grads_, s.packed)), mine, s.chunk);
  } else {
    // Reduce-scatter in place: this rank's chunk of the unit gradient receives
    // the average over ranks, added to its gradient shard (accumulation steps
    // add up there); the unit buffer is freed right after.
    float* mine = gradient.floats() + dp_.rank() * s.chunk;
    dp_.reduce_scatter(gradient.floats(), mine, s.chunk, ReduceOp::average, tag);
    float* shard = grads_.floats() + s.packed;
    be.add(shard, shard, mine, s.chunk);
  }
}

void ZeroShardedStorage::all_gather_parameters(const CommTag& tag) {
  if (!rules_.all_gathers_unit_chunks())
    throw std::logic_error("ZeRO storage: only ZeRO-2 all-gathers the updated chunks after the step");
  Buffer& whole_params = params_;  // mixed: our 16-bit parameters
  for (auto& [id, s] : units_) {
    Buffer staging(ledger_, MemoryCategory::communication, s.chunk * dp_.size() * element_bytes());
    std::byte* send = bytes_at(staging, dp_.rank() * s.chunk);
    const std::int64_t own = s.unit.begin + dp_.rank() * s.chunk;
    const std::byte* from =
        mixed() ? bytes_at(whole_params, own) : reinterpret_cast<const std::byte*>(model_.params() + own);
    model_.backend().copy(send, from, s.mine * element_bytes());
    CommTag t = with_purpose(tag, CommPurpose::parameters);
    t.unit = id;
    dp_.all_gather(send, staging.data(), s.chunk, dtype_, t);
    std::byte* to =
        mixed() ? bytes_at(whole_params, s.unit.begin) : reinterpret_cast<std::byte*>(model_.params() + s.unit.begin);
    model_.backend().copy(to, staging.data(), s.unit.numel() * element_bytes());
  }
}

}  // namespace shardscope
