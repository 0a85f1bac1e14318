// SPDX-License-Identifier: GPL-3.0-or-later
#include "clock/attention_kernel.h"

namespace shardscope {

AttentionKernelRate flash_attention_rate(std::string_view gpu) {
  // FlashAttention-2, section 4.1: the best forward + backward rate on each GPU, over its data-sheet peak.
  if (gpu == "A100-40GB" || gpu == "A100-80GB") return {230.0 / 312.0, "FlashAttention-2 on A100: 230 of 312 TFLOP/s"};
  if (gpu == "H100" || gpu == "H200") return {335.0 / 989.4, "FlashAttention-2 on H100: 335 of 989.4 TFLOP/s"};
  return {};
}

}  // namespace shardscope
