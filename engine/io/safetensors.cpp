// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/checked_math.h"
#include "core/error.h"
#include "core/input_file.h"
#include "core/json_text.h"

namespace shardscope {

namespace {
constexpr std::uint64_t kMaxHeader = 100u << 20;  // the format caps the JSON header at 100 MB

std::int64_t dtype_bytes(const std::string& dtype) {
  if (dtype == "F32" || dtype == "I32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16") return 2;
  if (dtype == "F64" || dtype == "I64") return 8;
  if (dtype == "U8" || dtype == "I8" || dtype == "BOOL") return 1;
  return 0;
}

// The bytes a tensor's shape and dtype need; FormatError when they do not fit in 64 bits.
std::int64_t entry_bytes(const SafetensorsEntry& e, const std::string& where) {
  try {
    return checked_mul(e.numel(), dtype_bytes(e.dtype));
  } catch (const SizeOverflow&) {
    throw FormatError(where + "shape has more elements than fit in 64 bits; the file is damaged");
  }
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1Fu;
  std::uint32_t mant = h & 0x3FFu;
  std::uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);
  } else if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      bits = sign | (static_cast<std::uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3FFu) << 13);
    }
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
}  // namespace

std::int64_t SafetensorsEntry::numel() const {
  CheckedSize n = 1;  // a damaged shape may multiply past 64 bits: SizeOverflow, never a wrapped count
  for (auto d : shape) n *= d;
  return n.value();
}

SafetensorsFile SafetensorsFile::read(const std::string& path) {
  const std::string hint = " (is it a .safetensors file? re-export it with the safetensors library)";
  if (const auto kind = special_file_kind(path))  // a FIFO would block the stream's open forever
    throw FormatError(path + ": is " + *kind + ", not a .safetensors file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FormatError(path + ": cannot open the file");
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::uint64_t>(in.tellg());
  in.seekg(0);
  if (size < 8) throw FormatError(path + ": file is " + std::to_string(size) + " bytes, too short for a header" + hint);
  std::uint8_t len_bytes[8];
  in.read(reinterpret_cast<char*>(len_bytes), 8);
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len_bytes[i];
  if (header_len > kMaxHeader || header_len > size - 8)
    throw FormatError(path + ": byte 0: header length " + std::to_string(header_len) +
                      " is larger than the file or the 100 MB limit" + hint);
  std::string header(header_len, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_len));

  SafetensorsFile file;
  file.path_ = path;
  JsonTextError error;  // syntax, numbers past a double's range, a repeated key, nesting depth (core/json_text.h)
  std::optional<nlohmann::json> parsed = parse_json_text(header, error);
  if (!parsed)  // the header starts at file offset 8
    throw FormatError(path + ": byte " + std::to_string(8 + error.byte) + ": header is not valid JSON (" +
                      error.reason + ")" + hint);
  const nlohmann::json j = std::move(*parsed);
  if (!j.is_object()) throw FormatError(path + ": byte 8: header is not a JSON object" + hint);
  const std::uint64_t data_size = size - 8 - header_len;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) throw FormatError(path + ": key __metadata__: must be an object of strings");
      for (auto m = it->begin(); m != it->end(); ++m)
        if (m->is_string()) file.metadata_[m.key()] = m->get<std::string>();
      continue;
    }
    const std::string where = path + ": tensor '" + bounded_excerpt(it.key()) + "': ";
    try {
      SafetensorsEntry e;
      e.dtype = it->at("dtype").get<std::string>();
      e.shape = it->at("shape").get<std::vector<std::int64_t>>();
      const auto offsets = it->at("data_offsets").get<std::vector<std::int64_t>>();
      if (offsets.size() != 2) throw FormatError(where + "data_offsets must have 2 entries");
      e.begin = offsets[0];
      e.end = offsets[1];
      if (dtype_bytes(e.dtype) == 0) throw FormatError(where + "unsupported dtype " + e.dtype);
      if (std::any_of(e.shape.begin(), e.shape.end(), [](std::int64_t d) { return d < 0; }))
        throw FormatError(where + "shape has a negative dimension" + hint);
      const std::int64_t bytes = entry_bytes(e, where);
      if (e.begin < 0 || e.end < e.begin || static_cast<std::uint64_t>(e.end) > data_size)
        throw FormatError(where + "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                          "] fall outside the " + std::to_string(data_size) + "-byte data section" + hint);
      if (e.end - e.begin != bytes)
        throw FormatError(where + "shape and dtype need " + std::to_string(bytes) + " bytes but data_offsets give " +
                          std::to_string(e.end - e.begin));
      file.entries_[it.key()] = e;
    } catch (const nlohmann::json::exception& ex) {
      throw FormatError(where + "malformed entry (" + ex.what() + ")");
    }
  }
  file.data_.resize(data_size);
  in.read(reinterpret_cast<char*>(file.data_.data()), static_cast<std::streamsize>(data_size));
  if (!in) throw FormatError(path + ": could not read the data section");
  return file;
}

const SafetensorsEntry& SafetensorsFile::entry(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) throw FormatError(path_ + ": no tensor named '" + name + "'");
  return it->second;
}

std::vector<float> SafetensorsFile::floats(const std::string& name) const {
  const auto& e = entry(name);
  std::vector<float> out(static_cast<std::size_t>(e.numel()));
  const std::uint8_t* src = data_.data() + e.begin;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (e.dtype == "F32") {
      std::memcpy(&out[i], src + 4 * i, 4);
    } else if (e.dtype == "F16" || e.dtype == "BF16") {
      std::uint16_t h;
      std::memcpy(&h, src + 2 * i, 2);
      if (e.dtype == "F16") {
        out[i] = half_to_float(h);
      } else {
        const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
        std::memcpy(&out[i], &bits, 4);
      }
    } else {
      throw FormatError(path_ + ": tensor '" + name + "' has dtype " + e.dtype + ", expected a float type");
    }
  }
  return out;
}

std::vector<std::int32_t> SafetensorsFile::ints(const std::string& name) const {
  const auto& e = entry(name);
  std::vector<std::int32_t> out(static_cast<std::size_t>(e.numel()));
  const std::uint8_t* src = data_.data() + e.begin;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (e.dtype == "I32") {
      std::memcpy(&out[i], src + 4 * i, 4);
    } else if (e.dtype == "I64") {
      std::int64_t v;
      std::memcpy(&v, src + 8 * i, 8);
      out[i] = static_cast<std::int32_t>(v);
    } else {
      throw FormatError(path_ + ": tensor '" + name + "' has dtype " + e.dtype + ", expected I32 or I64");
    }
  }
  return out;
}

namespace {

std::int64_t tensor_bytes(const SafetensorsTensorOut& t) {
  std::int64_t n = 1;
  for (const std::int64_t d : t.shape) {
    if (d < 0) throw FormatError("safetensors: tensor " + t.name + " has a negative dimension");
    n = checked_mul(n, d);
  }
  const std::int64_t element = dtype_bytes(t.dtype);
  if (element == 0) throw FormatError("safetensors: tensor " + t.name + " has unsupported dtype " + t.dtype);
  return checked_mul(n, element);
}

}  // namespace

void write_safetensors(const NamedFile& target, const std::vector<SafetensorsTensorOut>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::int64_t offset = 0;
  for (const auto& t : tensors) {
    const std::int64_t end = checked_add(offset, tensor_bytes(t));
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');  // align the data section
  OutputFile out(target);  // a temporary beside it, renamed over it by commit()
  std::uint8_t len[8];
  const std::uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) len[i] = static_cast<std::uint8_t>(n >> (8 * i));
  out.write(len, 8);
  out.write(text);
  for (const auto& t : tensors) out.write(t.data, static_cast<std::size_t>(tensor_bytes(t)));
  out.commit();
}

}  // namespace shardscope
