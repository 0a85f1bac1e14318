// SPDX-License-Identifier: GPL-3.0-or-later
// Element types of tensors. f32 is the training type on the CPU today; f16 and
// bf16 are storage types for mixed precision.
#pragma once

#include <cstddef>
#include <string_view>

namespace shardscope {

enum class DType { f32, f16, bf16, i32 };

constexpr std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::i32: return 4;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i32: return "i32";
  }
  return "?";
}

}  // namespace shardscope
