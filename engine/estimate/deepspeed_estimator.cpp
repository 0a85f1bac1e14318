// SPDX-License-Identifier: GPL-3.0-or-later
#include "estimate/deepspeed_estimator.h"

#include <algorithm>

#include "core/checked_math.h"
#include "core/error.h"
#include "estimate/formula_text.h"

namespace shardscope {

namespace {
void check(std::int64_t total_params, int gpus_per_node, int nodes) {
  if (total_params < 0 || gpus_per_node < 1 || nodes < 1)
    throw ConfigError("DeepSpeed estimator: needs total_params >= 0, gpus_per_node >= 1 and nodes >= 1");
}
// Python's int(x) of a float: truncation toward zero (past 64 bits a SizeOverflow, not undefined behaviour).
std::int64_t py_int(double x) {
  if (!(x > -0x1p63 && x < 0x1p63)) throw SizeOverflow(std::to_string(x) + " bytes does not fit in 64 bits");
  return static_cast<std::int64_t>(x);
}
}  // namespace

DeepSpeedModelStates deepspeed_zero2_model_states(std::int64_t total_params, int gpus_per_node, int nodes,
                                                  bool cpu_offload, double buffer_factor) {
  check(total_params, gpus_per_node, nodes);
  const std::int64_t total_gpus = static_cast<std::int64_t>(nodes) * gpus_per_node;
  const std::string psi = grouped(total_params), n = std::to_string(total_gpus);
  DeepSpeedModelStates r;
  r.stage = 2;
  r.cpu_offload = cpu_offload;
  r.buffer_factor = buffer_factor;
  if (cpu_offload) {
    r.gpu_bytes = checked_mul(2, total_params);
    const std::int64_t multiplier = std::max<std::int64_t>(checked_mul(4, total_gpus), 16);
    r.cpu_bytes_before_factor = static_cast<double>(checked_mul(total_params, multiplier));
    r.gpu_formula = "2Ψ = 2 × " + psi;
    r.cpu_formula = "Ψ · max(4N, 16) = " + psi + " × " + std::to_string(multiplier);
  } else {
    // 2 = 16-bit parameters; 18 = 16-bit + fp32 gradients, fp32 master weights, fp32 m and v.
    r.gpu_bytes = checked_add(checked_mul(2, total_params), checked_mul(18, total_params) / total_gpus);
    r.cpu_bytes_before_factor = static_cast<double>(checked_mul(checked_mul(total_params, 4), gpus_per_node));
    r.gpu_formula = "2Ψ + int(18Ψ / N) = 2 × " + psi + " + int(18 × " + psi + " / " + n + ")";
    r.cpu_formula = "Ψ · 4 · gpus_per_node = " + psi + " × 4 × " + std::to_string(gpus_per_node);
  }
  r.cpu_bytes = py_int(r.cpu_bytes_before_factor * buffer_factor);
  r.cpu_formula += " (× buffer factor " + short_number(buffer_factor) + ")";
  return r;
}

DeepSpeedModelStates deepspeed_zero3_model_states(std::int64_t total_params, std::int64_t largest_layer_params,
                                                  int gpus_per_node, int nodes, bool cpu_offload,
                                                  bool cpu_offload_params, bool zero_init, double buffer_factor) {
  check(total_params, gpus_per_node, nodes);
  const std::int64_t total_gpus = static_cast<std::int64_t>(nodes) * gpus_per_node;
  const double gpus_factor = 1.0 / nodes;
  const double psi_f = static_cast<double>(total_params);
  const std::string psi = grouped(total_params), n = std::to_string(total_gpus);
  const std::string largest = "4 × " + grouped(largest_layer_params);
  DeepSpeedModelStates r;
  r.stage = 3;
  r.cpu_offload = cpu_offload;
  r.cpu_offload_params = cpu_offload && cpu_offload_params;
  r.zero_init = zero_init;
  r.buffer_factor = buffer_factor;
  r.largest_layer_memory = checked_mul(4, largest_layer_params);
  const double per_gpu_node = 4.0 * gpus_per_node;
  if (cpu_offload && cpu_offload_params) {
    r.gpu_bytes = r.largest_layer_memory;
    r.gpu_formula = "largest_layer_memory = " + largest;
    const double multiplier = zero_init ? 18 * gpus_factor : std::max(per_gpu_node, 18 * gpus_factor);
    // In Python's order: (Ψ · 18) · (1 / nodes), so the float rounding matches.
    r.cpu_bytes_before_factor =
        zero_init ? static_cast<double>(checked_mul(total_params, 18)) * gpus_factor : psi_f * multiplier;
    r.cpu_formula = zero_init ? "Ψ · 18 / nodes = " + psi + " × 18 / " + std::to_string(nodes)
                              : "Ψ · max(4 gpus_per_node, 18 / nodes) = " + psi + " × " + short_number(multiplier);
  } else if (cpu_offload) {
    r.gpu_bytes = checked_add(r.largest_layer_memory, checked_mul(2, total_params) / total_gpus);
    r.gpu_formula = "largest_layer_memory + int(2Ψ / N) = " + largest + " + int(2 × " + psi + " / " + n + ")";
    const double multiplier = zero_init ? 16 * gpus_factor : std::max(per_gpu_node, 16 * gpus_factor);
    r.cpu_bytes_before_factor =
        zero_init ? static_cast<double>(checked_mul(total_params, 16)) * gpus_factor : psi_f * multiplier;
    r.cpu_formula = zero_init ? "Ψ · 16 / nodes = " + psi + " × 16 / " + std::to_string(nodes)
                              : "Ψ · max(4 gpus_per_node, 16 / nodes) = " + psi + " × " + short_number(multiplier);
  } else {
    r.gpu_bytes = checked_add(r.largest_layer_memory, checked_mul(18, total_params) / total_gpus);
    r.gpu_formula = "largest_layer_memory + int(18Ψ / N) = " + largest + " + int(18 × " + psi + " / " + n + ")";
    r.cpu_bytes_before_factor =
        zero_init ? static_cast<double>(largest_layer_params) * per_gpu_node : psi_f * per_gpu_node;
    r.cpu_formula = zero_init ? "largest_layer · 4 · gpus_per_node = " + grouped(largest_layer_params) + " × 4 × " +
                                    std::to_string(gpus_per_node)
                              : "Ψ · 4 · gpus_per_node = " + psi + " × 4 × " + std::to_string(gpus_per_node);
  }
  r.cpu_bytes = py_int(r.cpu_bytes_before_factor * buffer_factor);
  r.cpu_formula += " (× buffer factor " + short_number(buffer_factor) + ")";
  return r;
}

}  // namespace shardscope
