// SPDX-License-Identifier: GPL-3.0-or-later
// A pass a model runs on the host itself instead of as a backend op (the MoE
// routing's softmax and top-k, the gather and scatter of routed rows), with
// the bytes a GPU kernel doing the same must read and write at least. On a
// backend wrapped by ops/op_work.h it goes through the observer as an op of
// that name: --profile-ops times it, the GPU-profile clock prices it
// (train/run_device_models.h). On any other backend it just runs.
#pragma once

#include <functional>

namespace shardscope {

class Backend;

void host_pass(Backend& backend, const char* op, double bytes, const std::function<void()>& pass);

}  // namespace shardscope
