// SPDX-License-Identifier: GPL-3.0-or-later
// Saving a checkpoint (train/checkpoint.h) without stopping training for the
// disk, as torch.distributed.checkpoint's async_save does: between two steps
// every rank's state is copied to host memory (the snapshot: the only time
// the step loop waits), then a background thread writes the rank files, the
// Hugging Face weights and the manifest while the next steps run. The next
// save, or the run's end, waits for it. With the ranks as threads, one thread
// per rank writes; under mpirun each process writes its own rank's file and
// rank 0 commits once every file is durable.
//
// A rank that fails under mpirun while a save is in flight holds back its
// abort, for at most save_grace_s(), until the save has ended: the save needs
// every process's part, and the abort would cut the others' part short, so a
// save that only had to finish writing would be lost. The other processes
// wait in the step's collectives meanwhile; their save threads run on.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <memory>
#include <thread>

#include "core/error.h"
#include "core/output_file.h"
#include "io/hf_model.h"
#include "model/parameter_layout.h"
#include "train/checkpoint.h"
#include "train/trainer_rank.h"

namespace shardscope {

// The state of one save, in host memory: what the background write reads.
struct Trainer::CheckpointSnapshot {
  std::int64_t step = 0;
  CheckpointManifest manifest;        // its files filled by the write
  std::vector<RankCheckpoint> ranks;  // this process's ranks, in ranks_ order
};

// The save in flight, for a rank thread that fails while it is written: ended
// (committed or not) once the background write returns or throws.
struct Trainer::SaveInFlight {
  std::int64_t step = 0;
  std::mutex mutex;
  std::condition_variable ended_signal;
  bool ended = false, committed = false;

  void end(bool with_commit) {
    {
      std::lock_guard lock(mutex);
      ended = true;
      committed = with_commit;
    }
    ended_signal.notify_all();
  }
};

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The whole model's fp32 weights in ParameterLayout(config) order, from the
// master slices every rank saved (the tied embedding's copies are equal; tp
// slices put back into their whole tensors).
std::vector<float> whole_weights(const ModelConfig& config, const std::vector<RankCheckpoint>& ranks) {
  const ParameterLayout layout(config);
  std::vector<float> out(static_cast<std::size_t>(layout.total()));
  for (const RankCheckpoint& rank : ranks) {
    std::size_t at = 0;
    for (const ParameterSlice& slice : rank.file.slices) {
      const ParameterEntry& e = layout.find(slice.name);
      const auto len = static_cast<std::size_t>(slice.end - slice.begin);
      if (slice.tp.whole()) {
        std::copy_n(rank.master.begin() + static_cast<std::ptrdiff_t>(at), len,
                    out.begin() + static_cast<std::ptrdiff_t>(e.offset + slice.begin));
      } else {  // a tp rank's slice: each element to its place in the whole tensor
        const std::int64_t rows = e.shape[0], inner = e.numel / rows;
        for (std::int64_t i = slice.begin; i < slice.end; ++i)
          out[static_cast<std::size_t>(e.offset + whole_tensor_index(slice.tp, rows, inner, i))] =
              rank.master[at + static_cast<std::size_t>(i - slice.begin)];
      }
      at += len;
    }
  }
  return out;
}

// What a process tells the others in a save under mpirun: "ok\n" and a value, or "error\n" and why.
std::string outcome(bool ok, const std::string& text) {
  return (ok ? "ok\n" : "error\n") + text;
}
std::string outcome_value(const std::string& said) {
  if (said.starts_with("ok\n")) return said.substr(3);
  throw OutputError(said.starts_with("error\n") ? said.substr(6) : "--save-dir: a process's answer is garbled");
}

}  // namespace

// Every rank's state copied from its device (or its buffers) in its own thread.
Trainer::CheckpointSnapshot Trainer::checkpoint_snapshot() const {
  CheckpointSnapshot snapshot;
  snapshot.step = steps_done_;
  snapshot.manifest = checkpoint_manifest();
  snapshot.ranks.resize(ranks_.size());
  std::vector<std::exception_ptr> errors(ranks_.size());
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < ranks_.size(); ++r)
    threads.emplace_back([&, r] {
      try {
        snapshot.ranks[r] = rank_checkpoint(*ranks_[r]);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  return snapshot;
}

// Every rank's file, each in its own thread; then the weights in Hugging Face
// layout (config.json, model.safetensors, and the tokenizer a --init-from
// directory had; none for a mixture of experts: has_hf_layout), the manifest
// and the rename that makes the step directory appear whole.
std::string Trainer::write_checkpoint(const std::string& root, CheckpointSnapshot& snapshot) const {
  if (process_.active()) return write_checkpoint_as_process(root, snapshot);
  CheckpointWriter writer(root, snapshot.step);
  std::vector<std::exception_ptr> errors(snapshot.ranks.size());
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < snapshot.ranks.size(); ++r)
    threads.emplace_back([&, r] {
      try {
        faults_.before_checkpoint_write(snapshot.ranks[r].file.rank, snapshot.step);
        writer.write_rank(snapshot.ranks[r]);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  for (const RankCheckpoint& rank : snapshot.ranks) snapshot.manifest.files.push_back(rank.file);
  const ModelConfig model = run_model_config(config_);
  if (has_hf_layout(model))
    write_hf_model_dir(writer.temp_dir(), model, whole_weights(model, snapshot.ranks).data(), "--save-dir");
  copy_tokenizer_files(config_.init_from, writer.temp_dir());
  faults_.before_checkpoint_commit(snapshot.step);
  return writer.commit(std::move(snapshot.manifest));
}

// Under mpirun, in four moves, every process at each: rank 0 makes the
// temporary and names it to the others; each process writes its rank's file
// there (fsync'd) and sends rank 0 its entry; rank 0, holding every entry (so
// every file is durable: this is the barrier), reads the masters back for the
// Hugging Face weights, writes the manifest last and renames; then it tells
// the others the step directory, or why the save failed, so every process
// returns the same or throws the same. Rank 0 keeps a commit it made even
// when that last broadcast is cut short by an abort: the step directory is
// whole on disk, and rank 0 is the process that reports it.
std::string Trainer::write_checkpoint_as_process(const std::string& root, CheckpointSnapshot& snapshot) const {
  const bool leader = process_.rank == 0;
  std::unique_ptr<CheckpointWriter> writer;
  std::string said, committed;
  if (leader) try {
      writer = std::make_unique<CheckpointWriter>(root, snapshot.step);
      said = outcome(true, writer->temp_dir());
    } catch (const std::exception& e) {
      said = outcome(false, e.what());
    }
  const std::string temp = outcome_value(process_.broadcast(said));
  try {
    std::error_code ec;
    if (!std::filesystem::is_directory(temp, ec))  // rank 0 made it: another machine without a shared folder
      throw OutputError("--save-dir " + temp +
                        ": rank 0's temporary is not here: every process writes its rank file into it, so under "
                        "mpirun --save-dir must be a folder that every machine shares");
    faults_.before_checkpoint_write(process_.rank, snapshot.step);
    write_checkpoint_rank(temp, snapshot.ranks.front());
    said = outcome(true, checkpoint_file_text(snapshot.ranks.front().file));
  } catch (const std::exception& e) {
    said = outcome(false, "rank " + std::to_string(process_.rank) + ": " + e.what());
  }
  const std::vector<std::string> entries = process_.gather(said);
  if (leader) try {
      const ModelConfig model = run_model_config(config_);
      std::vector<RankCheckpoint> saved(entries.size());
      for (std::size_t r = 0; r < entries.size(); ++r) {
        saved[r].file = parse_checkpoint_file(outcome_value(entries[r]), temp + "/rank-" + std::to_string(r));
        if (has_hf_layout(model))
          saved[r].master = read_checkpoint_masters(temp + "/" + saved[r].file.name, saved[r].file);
        snapshot.manifest.files.push_back(saved[r].file);
      }
      if (has_hf_layout(model)) write_hf_model_dir(temp, model, whole_weights(model, saved).data(), "--save-dir");
      copy_tokenizer_files(config_.init_from, temp);
      faults_.before_checkpoint_commit(snapshot.step);
      committed = writer->commit(std::move(snapshot.manifest));
      said = outcome(true, committed);
    } catch (const std::exception& e) {
      said = outcome(false, e.what());
    }
  try {
    return outcome_value(process_.broadcast(said));
  } catch (const CommAborted&) {
    if (committed.empty()) throw;
    return committed;
  }
}

void Trainer::begin_checkpoint(const std::string& root) {
  if (failed_) throw RankFailure("the run has stopped after a rank failed or it was interrupted: nothing to save");
  finish_checkpoint();  // one save at a time: the one in flight ends first (its event says how it went)
  const auto start = std::chrono::steady_clock::now();
  const std::int64_t start_ns = event_time_ns();
  auto snapshot = std::make_shared<CheckpointSnapshot>(checkpoint_snapshot());
  const double copy_s = seconds_since(start);
  auto in_flight = std::make_shared<SaveInFlight>();
  in_flight->step = snapshot->step;
  {
    std::lock_guard lock(save_in_flight_mutex_);
    save_in_flight_ = in_flight;
  }
  pending_save_ = std::async(std::launch::async, [this, root, snapshot, copy_s, start_ns, in_flight] {
    try {
      const auto write_start = std::chrono::steady_clock::now();
      CheckpointSave save{snapshot->step, write_checkpoint(root, *snapshot), copy_s, 0.0, start_ns};
      save.write_s = seconds_since(write_start);
      in_flight->end(true);
      return save;
    } catch (...) {
      in_flight->end(false);
      throw;
    }
  });
}

// Half the --comm-timeout, so that the other processes, waiting for this one
// in the step's collectives, usually do not time out first (their timers may
// have started earlier, while this rank was slow before it failed: then their
// own abort ends the wait, and the save is reported as not committed); and at
// most 30 s.
double Trainer::save_grace_s() const {
  return std::min(30.0, config_.comm_timeout_s / 2.0);
}

std::string Trainer::await_save_before_abort() {
  std::shared_ptr<SaveInFlight> save;
  {
    std::lock_guard lock(save_in_flight_mutex_);
    save = save_in_flight_;
  }
  if (save == nullptr) return {};
  const auto start = std::chrono::steady_clock::now();
  std::unique_lock lock(save->mutex);
  if (save->ended) return {};  // ended before the failure: nothing was held back
  const double grace_s = save_grace_s();
  const bool ended =
      save->ended_signal.wait_for(lock, std::chrono::duration<double>(grace_s), [&] { return save->ended; });
  char text[256];
  const auto step = static_cast<long long>(save->step);
  if (!ended)
    std::snprintf(text, sizeof text,
                  "; the checkpoint of step %lld, still being written, did not end within %.1f s of waiting for it "
                  "(half of --comm-timeout, at most 30 s): it is abandoned, not committed",
                  step, grace_s);
  else
    std::snprintf(text, sizeof text, "; the stop waited %.1f s for the checkpoint of step %lld in flight, which %s",
                  seconds_since(start), step, save->committed ? "committed" : "ended in an error");
  return text;
}

std::optional<CheckpointSave> Trainer::finish_checkpoint() {
  if (!pending_save_.valid()) return std::nullopt;
  const CheckpointSave save = pending_save_.get();  // rethrows the write's error
  // On the timeline: one log event spanning the save, from the copy's start
  // (on the event clock) for the copy's and the write's wall time.
  Event log;
  log.kind = EventKind::log;
  log.level = LogLevel::info;
  log.step = save.step;
  log.start_ns = save.start_ns;
  log.end_ns = save.start_ns + static_cast<std::int64_t>((save.copy_s + save.write_s) * 1e9);
  char text[kEventTextSize];
  std::snprintf(text, sizeof text, "checkpoint step %lld: training waited %.1f ms (copy), written in %.1f ms",
                static_cast<long long>(save.step), save.copy_s * 1e3, save.write_s * 1e3);
  log.set_text(text);
  emit(log);
  return save;
}

std::string Trainer::save_checkpoint(const std::string& root) {
  begin_checkpoint(root);
  return finish_checkpoint()->dir;
}

}  // namespace shardscope
