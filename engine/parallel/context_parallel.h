// SPDX-License-Identifier: GPL-3.0-or-later
// Context parallelism's communication (model/context_parallel.h): the ring
// attention's block exchanges on the rank's cp communicator, each a send to
// the next cp rank and a receive from the previous one, tagged as
// context_parallel traffic with the layer, pass, block and ring step; and the
// sum of every parameter's gradient over the cp group after backward.
#pragma once

#include <memory>

#include "model/context_parallel.h"
#include "parallel/communicator.h"

namespace shardscope {

std::unique_ptr<ContextParallelGroup> make_context_parallel_group(Communicator& cp, bool zigzag);

// The tag of ring attention's transfers (and of the cp gradient sum: layer -1).
CommTag context_parallel_tag(const Event& context, ComputeKind pass, int block, int ring_step);

}  // namespace shardscope
