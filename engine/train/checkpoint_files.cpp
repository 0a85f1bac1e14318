// SPDX-License-Identifier: GPL-3.0-or-later
// Checkpoint step directories (train/checkpoint.h): written through a hidden
// temporary renamed into place, read back with every file checked against
// the manifest and the parameters reassembled whole.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "core/input_file.h"
#include "core/output_file.h"
#include "io/safetensors.h"
#include "train/checkpoint.h"

namespace shardscope {

namespace fs = std::filesystem;

namespace {

constexpr const char* kTensorKinds[3] = {"master", "exp_avg", "exp_avg_sq"};

// Temporaries of saves whose process is gone (killed mid-save): removed before a new save.
void remove_stale_temporaries(const std::string& root) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename().string();
    const auto at = name.rfind(".tmp-");
    if (!name.starts_with(".step-") || at == std::string::npos) continue;
    const std::string pid = name.substr(at + 5);
    if (pid.empty() || pid.size() > 9 || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (::kill(static_cast<pid_t>(std::stol(pid)), 0) != 0 && errno == ESRCH) fs::remove_all(entry.path(), ec);
  }
}

void fsync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0 || ::fsync(fd) != 0) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    throw OutputError("--save-dir " + dir + ": cannot fsync the directory: " + why);
  }
  ::close(fd);
}

// The whole file, or a ConfigError saying why it cannot be read.
std::string file_bytes(const std::string& path, const std::string& what) {
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(path, ec);
  if (!fs::exists(status)) throw ConfigError(path + ": missing (" + what + ")");
  if (fs::is_directory(status)) throw ConfigError(path + ": is a directory, not a file (" + what + ")");
  if (!fs::is_regular_file(status)) throw ConfigError(path + ": not a regular file (" + what + ")");
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad() || !in.is_open()) throw ConfigError(path + ": cannot be read (" + what + ")");
  return bytes;
}

// Parameters being reassembled: values, and which elements some file gave.
struct Assembly {
  std::map<std::string, ParameterState> values;
  std::map<std::string, std::vector<char>> covered;
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> rows_inner;  // the whole shape as rows × the rest
};

Assembly empty_assembly(const CheckpointManifest& m, const std::string& manifest_path) {
  Assembly a;
  for (const auto& [name, shape] : m.parameters) {
    std::int64_t numel = 1;  // the parser checked that the product fits (kMaxCheckpointParameterElements)
    for (const std::int64_t d : shape) numel *= d;
    if (a.values.count(name) != 0) throw ConfigError(manifest_path + ": parameter '" + name + "' listed twice");
    const auto n = static_cast<std::size_t>(numel);
    a.values[name] = ParameterState{std::vector<float>(n), std::vector<float>(n), std::vector<float>(n)};
    a.covered[name].assign(n, 0);
    const std::int64_t rows = shape.empty() ? 1 : shape[0];
    a.rows_inner[name] = {rows, rows == 0 ? 0 : numel / rows};
  }
  return a;
}

// How many elements the slice's tensor holds: the whole parameter, or its tp
// rank's part, whose split must divide the whole's rows or columns.
std::int64_t tensor_slice_elements(const std::string& path, const ParameterSlice& slice, std::int64_t rows,
                                   std::int64_t inner) {
  if (slice.tp.whole()) return rows * inner;
  const TensorSliceOf& tp = slice.tp;
  const bool by_rows = tp.split == TensorSplit::rows;
  const std::int64_t cut = by_rows ? rows : inner, pieces = by_rows ? std::int64_t{tp.parts} * tp.tp_size : tp.tp_size;
  if (cut % pieces != 0)
    throw ConfigError(path + ": '" + slice.name + "' is split by " + (by_rows ? "rows" : "columns") + " into " +
                      std::to_string(pieces) + " parts, but its " + std::to_string(cut) + " " +
                      (by_rows ? "rows" : "columns") + " do not divide by that");
  return rows * inner / tp.tp_size;
}

// One slice's three tensors into the assembly.
void take_slice(const SafetensorsFile& st, const ParameterSlice& slice, Assembly& a) {
  const std::string& path = st.path();
  const auto it = a.values.find(slice.name);
  if (it == a.values.end())
    throw ConfigError(path + ": '" + slice.name + "' is not a parameter of the checkpoint's model");
  std::vector<char>& covered = a.covered[slice.name];
  const auto [rows, inner] = a.rows_inner.at(slice.name);
  const std::int64_t held = tensor_slice_elements(path, slice, rows, inner);
  if (slice.end > held)
    throw ConfigError(path + ": '" + slice.name + "' elements [" + std::to_string(slice.begin) + ", " +
                      std::to_string(slice.end) + ") run past its " + std::to_string(held) + " elements" +
                      (slice.tp.whole() ? ""
                                        : " (its tp " + std::to_string(slice.tp.tp_rank) + " of " +
                                              std::to_string(slice.tp.tp_size) + " slice)"));
  std::vector<float>* targets[3] = {&it->second.master, &it->second.exp_avg, &it->second.exp_avg_sq};
  for (int k = 0; k < 3; ++k) {
    const std::string key = slice.name + "/" + kTensorKinds[k];
    if (!st.contains(key)) throw ConfigError(path + ": tensor '" + key + "' is missing");
    const SafetensorsEntry& e = st.entry(key);
    if (e.dtype != "F32") throw ConfigError(path + ": tensor '" + key + "' is " + e.dtype + ", expected F32");
    if (e.shape != std::vector<std::int64_t>{slice.end - slice.begin})
      throw ConfigError(path + ": tensor '" + key + "' has the wrong shape (expected [" +
                        std::to_string(slice.end - slice.begin) + "], the slice's length)");
    const std::vector<float> values = st.floats(key);
    for (std::int64_t i = 0; i < slice.end - slice.begin; ++i) {
      const float v = values[static_cast<std::size_t>(i)];
      if (!std::isfinite(v))
        throw ConfigError(path + ": tensor '" + key + "' element " + std::to_string(i) +
                          " is not finite (a diverged run cannot be resumed)");
      const auto at = static_cast<std::size_t>(whole_tensor_index(slice.tp, rows, inner, slice.begin + i));
      float& slot = (*targets[k])[at];
      const bool seen = covered[at] != 0;
      if (seen && std::memcmp(&slot, &v, sizeof v) != 0)
        throw ConfigError(path + ": tensor '" + key + "' element " + std::to_string(i) +
                          " disagrees with another file's copy of " + slice.name);
      slot = v;
    }
  }
  for (std::int64_t i = slice.begin; i < slice.end; ++i)
    covered[static_cast<std::size_t>(whole_tensor_index(slice.tp, rows, inner, i))] = 1;
}

void read_rank_file(const std::string& dir, const CheckpointFile& file, Assembly& a) {
  const std::string path = (fs::path(dir) / file.name).string();
  const std::string bytes = file_bytes(path, "a rank file the manifest lists");
  if (static_cast<std::int64_t>(bytes.size()) != file.bytes)
    throw ConfigError(path + ": is " + std::to_string(bytes.size()) + " bytes, manifest.json says " +
                      std::to_string(file.bytes) + " (truncated or damaged)");
  if (fnv1a64(bytes.data(), bytes.size()) != file.checksum)
    throw ConfigError(path + ": its FNV-1a 64 checksum differs from manifest.json's (the file is damaged)");
  const SafetensorsFile st = SafetensorsFile::read(path);
  if (st.entries().size() != 3 * file.slices.size())
    throw ConfigError(path + ": holds " + std::to_string(st.entries().size()) + " tensors, manifest.json lists " +
                      std::to_string(3 * file.slices.size()) + " (3 per slice)");
  for (const ParameterSlice& slice : file.slices) take_slice(st, slice, a);
}

}  // namespace

CheckpointManifest read_checkpoint_manifest(const std::string& dir) {
  const std::string manifest_path = (fs::path(dir) / "manifest.json").string();
  return parse_checkpoint_manifest(file_bytes(manifest_path, "the checkpoint's manifest"), manifest_path);
}

TrainingCheckpoint read_checkpoint(const std::string& dir) {
  return read_checkpoint(dir, read_checkpoint_manifest(dir));
}

TrainingCheckpoint read_checkpoint(const std::string& dir, CheckpointManifest manifest) {
  const std::string manifest_path = (fs::path(dir) / "manifest.json").string();
  TrainingCheckpoint out;
  out.dir = dir;
  out.manifest = std::move(manifest);
  Assembly a = empty_assembly(out.manifest, manifest_path);
  for (const CheckpointFile& file : out.manifest.files) read_rank_file(dir, file, a);
  for (const auto& [name, covered] : a.covered)
    for (std::size_t i = 0; i < covered.size(); ++i)
      if (covered[i] == 0)
        throw ConfigError(manifest_path + ": element " + std::to_string(i) + " of '" + name +
                          "' is in no rank file (a rank's file or slice is missing)");
  out.parameters = std::move(a.values);
  return out;
}

CheckpointWriter::CheckpointWriter(const std::string& root, std::int64_t step) : root_(root) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec || !fs::is_directory(root))
    throw OutputError("--save-dir " + root + ": cannot create the directory" + (ec ? ": " + ec.message() : ""));
  const std::string name = checkpoint_step_name(step);
  final_ = (fs::path(root) / name).string();
  if (fs::exists(fs::symlink_status(final_, ec)))
    throw OutputError("--save-dir " + final_ + ": already exists (a checkpoint is never overwritten)");
  remove_stale_temporaries(root);
  temp_ = (fs::path(root) / ("." + name + ".tmp-" + std::to_string(::getpid()))).string();
  fs::remove_all(temp_, ec);  // an earlier save of this process that failed to clean up
  if (!fs::create_directory(temp_, ec))
    throw OutputError("--save-dir " + temp_ + ": cannot create the directory" + (ec ? ": " + ec.message() : ""));
}

CheckpointWriter::~CheckpointWriter() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(temp_, ec);  // never throws: a failed save leaves no step directory
}

void write_checkpoint_rank(const std::string& dir, const RankCheckpoint& rank) {
  std::vector<SafetensorsTensorOut> tensors;
  std::map<std::string, std::string> metadata{{"format", std::string(kCheckpointFormat) + "-rank"},
                                              {"rank", std::to_string(rank.file.rank)}};
  std::size_t at = 0;
  for (const ParameterSlice& s : rank.file.slices) {
    const std::vector<std::int64_t> shape{s.end - s.begin};
    const std::vector<float>* sources[3] = {&rank.master, &rank.exp_avg, &rank.exp_avg_sq};
    for (int k = 0; k < 3; ++k)
      tensors.push_back({s.name + "/" + kTensorKinds[k], "F32", shape, sources[k]->data() + at});
    metadata[s.name] = std::to_string(s.begin) + ":" + std::to_string(s.end);  // the elements held
    at += static_cast<std::size_t>(s.end - s.begin);
  }
  write_safetensors(NamedFile{"--save-dir", (fs::path(dir) / rank.file.name).string()}, tensors, metadata);
}

std::vector<float> read_checkpoint_masters(const std::string& path, const CheckpointFile& file) {
  const SafetensorsFile st = SafetensorsFile::read(path);
  std::vector<float> out;
  for (const ParameterSlice& slice : file.slices) {
    const std::string key = slice.name + "/master";
    if (!st.contains(key)) throw OutputError("--save-dir " + path + ": tensor '" + key + "' is missing");
    const std::vector<float> values = st.floats(key);
    if (static_cast<std::int64_t>(values.size()) != slice.end - slice.begin)
      throw OutputError("--save-dir " + path + ": tensor '" + key + "' is not its slice's length");
    out.insert(out.end(), values.begin(), values.end());
  }
  return out;
}

std::vector<std::string> torn_checkpoints(const std::string& root) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(".step-") && name.find(".tmp-") != std::string::npos) out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string CheckpointWriter::commit(CheckpointManifest manifest) {
  for (CheckpointFile& file : manifest.files) {
    const std::string bytes = file_bytes((fs::path(temp_) / file.name).string(), "just written");
    file.bytes = static_cast<std::int64_t>(bytes.size());
    file.checksum = fnv1a64(bytes.data(), bytes.size());
  }
  OutputFile out(NamedFile{"--save-dir", (fs::path(temp_) / "manifest.json").string()});
  out.write(checkpoint_manifest_text(manifest));
  out.commit();  // fsyncs the manifest and the temporary directory
  if (std::rename(temp_.c_str(), final_.c_str()) != 0)
    throw OutputError("--save-dir " + final_ +
                      ": cannot rename the finished checkpoint into place: " + std::strerror(errno));
  committed_ = true;
  fsync_directory(root_);
  return final_;
}

}  // namespace shardscope
