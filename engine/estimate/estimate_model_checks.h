// SPDX-License-Identifier: GPL-3.0-or-later
// The estimate's limits that depend on the model (validate_estimate_settings checks the
// rest): heads and vocabulary that split over --tp, experts over --ep, the sequence length,
// the pipeline stages, and the most ranks (and rank × unit entries) the table lists.
#pragma once

#include "estimate/estimate_settings.h"
#include "estimate/model_shape.h"

namespace shardscope {

// Throws ConfigError naming the flag and the numbers.
void validate_estimate_against_model(const ModelShape& model, const EstimateSettings& s);

}  // namespace shardscope
