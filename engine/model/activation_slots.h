// SPDX-License-Identifier: GPL-3.0-or-later
// The activation slots of a pipeline stage: each holds the activations of one
// (model chunk, micro-batch) from its forward to its last backward phase. A
// schedule (plan/pipeline_schedule.h) opens a key's slot at its first
// forward-side action, works in it, and frees it after the backward; the
// table hands out the lowest free slot, so a stage needs exactly as many slots
// as its schedule has in flight (peak_in_flight), and a schedule that asks for
// a key it never opened, or opens more than fit, fails naming the key instead
// of overwriting another micro-batch's activations.
#pragma once

#include <compare>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace shardscope {

struct ActivationKey {
  int chunk = 0;        // which of the stage's model chunks (0 while a stage holds one)
  int micro_batch = 0;  // index within the step's micro-batches
  friend auto operator<=>(const ActivationKey&, const ActivationKey&) = default;
};
std::string to_string(ActivationKey key);  // "chunk 0, micro-batch 3"

class ActivationSlots {
 public:
  explicit ActivationSlots(int count = 1) { resize(count); }

  // count >= 1 slots, all free; throws std::logic_error while a key is held.
  void resize(int count);
  int size() const { return count_; }

  // Takes the lowest free slot for `key` and returns it. Throws
  // std::logic_error naming the key if it holds one already or none is free.
  int open(ActivationKey key);
  // The slot `key` holds; throws std::logic_error naming the key if it holds none.
  int find(ActivationKey key) const;
  bool holds(ActivationKey key) const { return held_.contains(key); }
  // Frees `key`'s slot; throws std::logic_error naming the key if it holds none.
  void close(ActivationKey key);
  // Frees every slot (a step stopped mid-schedule leaves keys held).
  void close_all();
  // The keys holding a slot, in key order.
  std::vector<ActivationKey> held() const;

 private:
  int count_ = 0;
  std::map<ActivationKey, int> held_;  // key -> its slot
  std::set<int> free_;                 // the free slots, lowest first
};

}  // namespace shardscope
