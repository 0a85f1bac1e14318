// SPDX-License-Identifier: GPL-3.0-or-later
// Every file ShardScope writes (metrics, recordings, traces) goes through
// OutputFile, so that a bad output path or a full disk never destroys a file
// the user already had:
//   - the path is checked before anything is written: only a regular file, or
//     a path where nothing is yet, is replaced; a symbolic link, directory,
//     device, FIFO or socket is refused, and so is an output that is one of the
//     run's inputs (same path, hard link or symlink) or another output;
//   - the bytes go to a new temporary beside it, "<path>.XXXXXX.part" (created
//     with O_EXCL: no existing file is ever opened), every write checked
//     (ENOSPC, EFBIG, EIO);
//   - commit() fsyncs the temporary and renames it over the path, so readers
//     see the old file or the new one, never half of one; abandon() (and the
//     destructor, before a commit) removes the temporary and leaves the path
//     as it was.
// A process killed outright (SIGKILL, power loss) leaves the temporary: what
// was written so far, under the name temp_path() gives.
//
// It lives in core/ (not io/) because events/ writes recordings through it and
// io/ already depends on events/ (through model/).
#pragma once

#include <cstddef>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/input_file.h"

namespace shardscope {

// An output that cannot be written or may not be replaced. The message names
// the flag, the file and the reason (the OS error for a failed write). The CLI
// maps it, as every FormatError, to exit code 2.
class OutputError : public FormatError {
 public:
  using FormatError::FormatError;
};

// Refuses, with an OutputError, an output path that cannot be replaced safely:
// a symbolic link, a directory, a device, FIFO or socket, or a path whose
// directory is missing or not writable.
void check_output_path(const NamedFile& output);

// Refuses an output that is the same file as an input (the same path, a hard
// link, a symbolic link to it, or the same resolved path) or as an earlier
// output; the message names both flags. Then check_output_path for each.
// Empty paths (a flag not given) are skipped.
void check_outputs(const std::vector<NamedFile>& inputs, const std::vector<NamedFile>& outputs);

// The regular files directly in `dir`, each named by `flag`: the inputs a model
// or checkpoint directory holds, for check_outputs (none when dir is no directory).
std::vector<NamedFile> files_in_directory(const std::string& flag, const std::string& dir);

// A new file at target.path, written through a unique temporary beside it.
// Not thread-safe: one writer at a time (RecordingWriter holds a mutex).
class OutputFile {
 public:
  // check_output_path, then creates the temporary. Throws OutputError.
  explicit OutputFile(NamedFile target);
  // Before commit(): abandon().
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  const std::string& flag() const { return target_.flag; }
  const std::string& path() const { return target_.path; }  // where commit() puts it
  const std::string& temp_path() const { return temp_; }    // what is being written now

  // Appends, straight to the file (a reader of temp_path() sees it at once).
  // Throws OutputError with the OS error; after one failure every later write
  // and commit() throw the same error.
  void write(const void* data, std::size_t bytes);
  void write(std::string_view text) { write(text.data(), text.size()); }
  // A buffered stream onto the file, for code that writes to a std::ostream.
  // Its write errors do not throw: commit() throws the first one.
  std::ostream& stream();
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }

  // Flushes stream(), fsyncs, closes and renames the temporary over path();
  // then fsyncs the directory. On any failure the temporary is removed, path()
  // is left as it was, and OutputError says why.
  void commit();
  // Removes the temporary; path() is left as it was. Never throws.
  void abandon() noexcept;
  bool finished() const { return !temp_exists_; }  // committed or abandoned

 private:
  class StreamBuffer;
  bool write_quietly(const char* data, std::size_t bytes) noexcept;  // false once a write failed
  [[noreturn]] void fail_commit(const std::string& what);

  NamedFile target_;
  std::string temp_;
  int fd_ = -1;               // open while writing
  bool temp_exists_ = false;  // until commit() renames it or abandon() removes it
  std::string error_;         // the first write error
  std::unique_ptr<StreamBuffer> buffer_;
  std::unique_ptr<std::ostream> stream_;
};

}  // namespace shardscope
