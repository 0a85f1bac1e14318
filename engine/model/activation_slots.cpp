// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/activation_slots.h"

#include <stdexcept>

namespace shardscope {

std::string to_string(ActivationKey key) {
  return "chunk " + std::to_string(key.chunk) + ", micro-batch " + std::to_string(key.micro_batch);
}

void ActivationSlots::resize(int count) {
  if (count < 1) throw std::invalid_argument("activation slots must be at least 1");
  if (!held_.empty())
    throw std::logic_error("activation slots resized while (" + to_string(held_.begin()->first) + ") holds one");
  count_ = count;
  close_all();
}

void ActivationSlots::close_all() {
  held_.clear();
  free_.clear();
  for (int slot = 0; slot < count_; ++slot) free_.insert(slot);
}

std::vector<ActivationKey> ActivationSlots::held() const {
  std::vector<ActivationKey> keys;
  for (const auto& [key, slot] : held_) keys.push_back(key);
  return keys;
}

int ActivationSlots::open(ActivationKey key) {
  if (held_.contains(key))
    throw std::logic_error("activation slot of (" + to_string(key) +
                           ") opened twice: its forward ran again before its backward");
  if (free_.empty()) {
    std::string holders;
    for (const auto& [held, slot] : held_) holders += (holders.empty() ? "(" : ", (") + to_string(held) + ")";
    throw std::logic_error("no free activation slot for (" + to_string(key) + "): all " + std::to_string(count_) +
                           " hold " + holders +
                           "; the schedule has more micro-batches in flight than the stage has slots");
  }
  const int slot = *free_.begin();
  free_.erase(free_.begin());
  held_.emplace(key, slot);
  return slot;
}

int ActivationSlots::find(ActivationKey key) const {
  const auto it = held_.find(key);
  if (it == held_.end())
    throw std::logic_error("no activation slot holds (" + to_string(key) +
                           "): the schedule uses it before its forward, or after its backward freed it");
  return it->second;
}

void ActivationSlots::close(ActivationKey key) {
  free_.insert(find(key));
  held_.erase(key);
}

}  // namespace shardscope
