// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/hidden_states.h"

#include <string>

#include "core/error.h"

namespace shardscope {

HiddenStates compute_hidden_states(Model& model, const std::vector<std::int32_t>& ids) {
  if (ids.empty()) throw ConfigError("hidden states: the text gives no tokens");
  const int T = static_cast<int>(ids.size());
  model.forward(Batch{1, T, ids.data(), nullptr, nullptr, nullptr});  // checks T <= max_seq and the ids
  HiddenStates out;
  out.tokens = T;
  out.channels = model.config().channels;
  const std::int64_t floats = static_cast<std::int64_t>(T) * out.channels;
  for (int i = 0; i < model.hidden_state_count(); ++i) {
    std::vector<float>& state = out.states.emplace_back(static_cast<std::size_t>(floats));
    model.backend().download(state.data(), model.hidden_state(i).f32(), floats * 4);
  }
  return out;
}

}  // namespace shardscope
