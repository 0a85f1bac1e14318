// SPDX-License-Identifier: GPL-3.0-or-later
// Checkpoints of the training state: everything a run needs to continue
// exactly where it stopped. A checkpoint root holds one directory per save:
//
//   ROOT/step-000123/manifest.json        format version, model, the layout it
//                                         was saved under, step, LR schedule,
//                                         AdamW step count, loss scaler, RNGs,
//                                         data position, every file's size and
//                                         FNV-1a 64 checksum and slices
//   ROOT/step-000123/rank-R.safetensors   rank R's fp32 master weights and
//                                         AdamW m and v: "NAME/master",
//                                         "NAME/exp_avg", "NAME/exp_avg_sq"
//   ROOT/step-000123/config.json,         the whole model as Hugging Face's
//                    model.safetensors    GPT-2 or BERT (not for a mixture of
//                                         experts: the manifest says why)
//
// Each rank saves what its optimizer updates: everything (DDP, one rank), its
// flat shard (ZeRO-1), its chunk of every unit (ZeRO-2/3), its stage's
// parameters (pipeline), nothing (a naive DataParallel replica). A tensor
// holds elements [begin, end) of its parameter (row-major; under tensor
// parallelism, of its tp rank's slice, whose split the manifest records; under
// expert parallelism a rank's block of experts is such a range of the whole),
// recorded in the manifest, so the reader reassembles every parameter whole
// from all the files whatever the layout that wrote them, as DeepSpeed's universal
// checkpoints do; a run then resumes under any layout. The 16-bit parameters
// of mixed precision are not saved: they are always the master weights
// rounded to nearest even (adamw.h), so they are rebuilt exactly.
//
// Writing is atomic: everything goes into ROOT/.step-000123.tmp-PID/, every
// file and the directory are fsync'd, the directory is renamed to
// step-000123 and ROOT is fsync'd. A save that fails or is killed leaves at
// most a hidden temporary, never a step directory, and never touches an
// earlier one. Under mpirun (ranks as processes) the temporary is rank 0's
// (PID is rank 0's): every process writes its own rank file into it and
// tells rank 0 when it is fsync'd; rank 0 commits (the manifest written last,
// then the rename) only when every rank's file is durable, as
// torch.distributed.checkpoint and DeepSpeed do. ROOT must then be one
// directory for every process (a shared filesystem across machines). A
// process whose rank fails while a save is in flight lets it end (bounded)
// before it stops the others (checkpoint_save.cpp), so that save is not lost.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/parameter_layout.h"
#include "train/loss_scaler.h"

namespace shardscope {

inline constexpr int kCheckpointFormatVersion = 1;
// 2^34 elements (64 GiB of fp32): no parameter of a model this program trains comes near.
inline constexpr std::int64_t kMaxCheckpointParameterElements = std::int64_t{1} << 34;
inline constexpr std::string_view kCheckpointFormat = "shardscope-checkpoint";

// Elements [begin, end) of a parameter, in its row-major order; under tensor
// parallelism, of tp rank tp.tp_rank's slice of it (`tp`: how that slice sits
// in the whole), so a run at another tp reassembles and re-splits it.
struct ParameterSlice {
  std::string name;
  std::int64_t begin = 0, end = 0;
  TensorSliceOf tp{};
};

// One rank's file, as the manifest lists it.
struct CheckpointFile {
  std::string name;  // "rank-3.safetensors"
  int rank = 0, dp_rank = 0, stage = 0;
  std::int64_t bytes = 0;
  std::uint64_t checksum = 0;  // FNV-1a 64 of the whole file
  std::vector<ParameterSlice> slices;
};

struct CheckpointManifest {
  int format_version = kCheckpointFormatVersion;
  std::int64_t step = 0;  // optimizer steps done; the run continues with step + 1
  nlohmann::json model;   // the model config (checkpoint_model_json)
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> parameters;  // the whole model's, name and shape
  nlohmann::json layout;         // what the run was saved under: dp, pp, zero, precision, accum, ...
  nlohmann::json lr_schedule;    // lr, min_lr, warmup, steps, next_step, next_lr (for the reader)
  std::int64_t adamw_steps = 0;  // AdamW's t (skipped fp16 steps do not count)
  LossScalerState loss_scaler;
  std::uint64_t seed = 0;           // the data-sampling and MLM-masking streams are (seed, step, sample)
  std::int64_t data_next_step = 0;  // the next global batch drawn is this step's
  nlohmann::json data;              // where the text came from (for the reader)
  std::string hugging_face;         // why no Hugging Face weights lie beside it (a mixture of experts); empty: they do
  std::vector<CheckpointFile> files;
};

// One parameter of the whole model, reassembled from every file.
struct ParameterState {
  std::vector<float> master, exp_avg, exp_avg_sq;
};

struct TrainingCheckpoint {
  std::string dir;  // the step directory read
  CheckpointManifest manifest;
  std::map<std::string, ParameterState> parameters;
};

// What one rank saves: its file's entry and the values of its slices, one
// after another in slice order.
struct RankCheckpoint {
  CheckpointFile file;
  std::vector<float> master, exp_avg, exp_avg_sq;
};

// "step-000123", and back (nullopt for any other name).
std::string checkpoint_step_name(std::int64_t step);
std::optional<std::int64_t> checkpoint_step_of(const std::string& name);

// ConfigError when a run saving under `root` (steps first_step+1..last_step,
// every `every` and the last) would find a step directory taken or root a file.
void check_save_dir(const std::string& root, std::int64_t first_step, std::int64_t last_step, std::int64_t every);
std::uint64_t fnv1a64(const void* data, std::size_t bytes, std::uint64_t hash = 0xcbf29ce484222325ull);
std::string hex64(std::uint64_t value);  // 16 lowercase hex digits, as the manifest writes checksums

// The manifest as JSON text, and back. The parser checks every field's type
// and range and the files' slices; it throws ConfigError naming `path`, the
// field and the reason.
std::string checkpoint_manifest_text(const CheckpointManifest& manifest);
CheckpointManifest parse_checkpoint_manifest(std::string_view text, const std::string& path);

// One file's entry as JSON text, and back (how a rank process tells rank 0 its file).
std::string checkpoint_file_text(const CheckpointFile& file);
CheckpointFile parse_checkpoint_file(std::string_view text, const std::string& path);

// `path` itself when it holds a manifest.json; else the newest step-N
// directory under it that holds one. ConfigError (naming `flag`) when there is none.
std::string find_checkpoint_dir(const std::string& path, const std::string& flag = "--resume");

// The manifest.json of a step directory, parsed (parse_checkpoint_manifest);
// ConfigError when it is missing or not a regular file.
CheckpointManifest read_checkpoint_manifest(const std::string& dir);

// Reads a step directory's rank files, checked against its manifest (size,
// checksum, keys, dtypes, shapes), reassembled into whole parameters; every
// element of every parameter must be present, and the tied copies of a
// parameter must agree. ConfigError names the file and the reason. The
// parameters are allocated at the manifest's shapes: a reader that knows its
// model checks them first (Trainer::check_checkpoint), so a damaged shape is
// refused before gigabytes are zeroed for it.
TrainingCheckpoint read_checkpoint(const std::string& dir, CheckpointManifest manifest);
// Both: the manifest, then the rank files.
TrainingCheckpoint read_checkpoint(const std::string& dir);

// The hidden temporaries under `root` (".step-000123.tmp-PID"): saves that
// never committed (killed, or failed before their rename). Never resumed
// from; the next save removes those whose process is gone.
std::vector<std::string> torn_checkpoints(const std::string& root);

// Writes rank.file.name in the directory `dir` (safetensors, fsync'd): a
// rank's part of a save, from the thread or process that holds the rank.
void write_checkpoint_rank(const std::string& dir, const RankCheckpoint& rank);
// The master values of `file`'s slices, one after another in slice order,
// from the file at `path` (a save's rank file, read back by rank 0 for the whole model's weights).
std::vector<float> read_checkpoint_masters(const std::string& path, const CheckpointFile& file);

// A save in progress: the temporary directory under `root` (created, with
// `root` itself if missing), the rank files written into it (from any
// thread), then commit(). Destroyed before commit(), it removes the temporary.
class CheckpointWriter {
 public:
  CheckpointWriter(const std::string& root, std::int64_t step);
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Writes rank.file.name in the temporary (write_checkpoint_rank).
  void write_rank(const RankCheckpoint& rank) const { write_checkpoint_rank(temp_, rank); }
  // Fills the files' sizes and checksums into the manifest, writes it,
  // fsyncs, renames the directory into place and fsyncs the root. Returns the
  // step directory. Throws OutputError (the step directory exists already,
  // a write failed); the temporary is then removed.
  std::string commit(CheckpointManifest manifest);

  const std::string& temp_dir() const { return temp_; }

 private:
  std::string root_, final_, temp_;
  bool committed_ = false;
};

}  // namespace shardscope
