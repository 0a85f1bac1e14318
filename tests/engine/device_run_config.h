// SPDX-License-Identifier: GPL-3.0-or-later
// The short runs the device-path tests train (test_shared_device: ranks on one
// pretend GPU; test_nccl_path: one rank per pretend GPU over a stand-in NCCL):
// 3 steps of gpt-tiny with one evaluation, and the layout of a data row.
#pragma once

#include <QTest>

#include "config/run_config.h"

namespace shardscope::testing {

inline RunConfig short_device_run() {
  RunConfig c;
  c.model = "gpt-tiny";
  c.steps = 3;
  c.batch = 8;
  c.seq = 32;
  c.lr = 3e-3f;
  c.threads = 2;
  c.eval_every = 3;
  c.eval_batches = 1;
  return c;
}

// short_device_run() with the row's columns dp, pp, zero, naive and precision
// (pipelines get `micro_batches`; 3 data-parallel ranks a batch of 12).
inline RunConfig layout_of_the_row(int micro_batches = 2) {
  QFETCH(int, dp);
  QFETCH(int, pp);
  QFETCH(int, zero);
  QFETCH(bool, naive);
  QFETCH(int, precision);
  RunConfig c = short_device_run();
  c.layout[Axis::dp] = dp;
  c.layout[Axis::pp] = pp;
  c.zero_stage = zero;
  c.dp_mode = naive ? DataParallelMode::naive : DataParallelMode::ddp;
  c.precision = static_cast<Precision>(precision);
  if (pp > 1) c.micro_batches = micro_batches;
  if (dp == 3) c.batch = 12;
  return c;
}

}  // namespace shardscope::testing
