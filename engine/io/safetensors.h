// SPDX-License-Identifier: GPL-3.0-or-later
// The safetensors format (Hugging Face): 8-byte little-endian header length N,
// N bytes of JSON {"name": {"dtype", "shape", "data_offsets": [begin, end]},
// "__metadata__": {string: string}}, then the raw little-endian tensor bytes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/output_file.h"
#include "core/tensor.h"

namespace shardscope {

struct SafetensorsEntry {
  std::string dtype;  // "F32", "F16", "BF16", "I32", "I64", ...
  std::vector<std::int64_t> shape;
  std::int64_t begin = 0, end = 0;  // byte range within the data section
  std::int64_t numel() const;
};

class SafetensorsFile {
 public:
  // Reads the whole file. Throws FormatError naming the file and the byte
  // offset or key at fault, with a hint.
  static SafetensorsFile read(const std::string& path);

  const std::map<std::string, SafetensorsEntry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool contains(const std::string& name) const { return entries_.count(name) != 0; }
  const SafetensorsEntry& entry(const std::string& name) const;
  // Values converted to f32 / i32 (from F32, F16, BF16 / I32, I64). Throws if the
  // tensor is absent or its type does not convert.
  std::vector<float> floats(const std::string& name) const;
  std::vector<std::int32_t> ints(const std::string& name) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::map<std::string, SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
  std::vector<std::uint8_t> data_;
};

struct SafetensorsTensorOut {
  std::string name;
  std::string dtype;  // "F32" or "I32"
  std::vector<std::int64_t> shape;
  const void* data;
};

// Writes target.path through OutputFile (core/output_file.h): checked first,
// written to a temporary beside it, fsync'd and renamed over it, so an existing
// file is never left half-written and a failed write leaves it as it was.
// Throws OutputError naming target.flag (or the path) and the reason.
void write_safetensors(const NamedFile& target, const std::vector<SafetensorsTensorOut>& tensors,
                       const std::map<std::string, std::string>& metadata);

}  // namespace shardscope
