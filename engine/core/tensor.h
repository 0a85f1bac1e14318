// SPDX-License-Identifier: GPL-3.0-or-later
// A Tensor is a view: a pointer into a Buffer, a dtype and a row-major shape.
// It owns nothing; the Buffer behind it must outlive it.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/dtype.h"

namespace shardscope {

inline constexpr int kMaxDims = 4;

struct Shape {
  std::array<std::int64_t, kMaxDims> dims{};
  int rank = 0;

  Shape() = default;
  Shape(std::initializer_list<std::int64_t> list) {
    for (std::int64_t d : list) dims[static_cast<std::size_t>(rank++)] = d;
  }
  std::int64_t operator[](int i) const { return dims[static_cast<std::size_t>(i)]; }
  std::int64_t numel() const {
    std::int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= dims[static_cast<std::size_t>(i)];
    return n;
  }
  bool operator==(const Shape& other) const {
    if (rank != other.rank) return false;
    for (int i = 0; i < rank; ++i)
      if (dims[static_cast<std::size_t>(i)] != other.dims[static_cast<std::size_t>(i)]) return false;
    return true;
  }
  std::string to_string() const {
    std::string s = "(";
    for (int i = 0; i < rank; ++i) s += (i ? ", " : "") + std::to_string(dims[static_cast<std::size_t>(i)]);
    return s + ")";
  }
};

struct Tensor {
  void* data = nullptr;
  DType dtype = DType::f32;
  Shape shape;

  std::int64_t numel() const { return shape.numel(); }
  std::int64_t bytes() const { return numel() * static_cast<std::int64_t>(dtype_size(dtype)); }
  float* f32() const { return static_cast<float*>(data); }
};

}  // namespace shardscope
