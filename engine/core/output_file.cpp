// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <streambuf>
#include <system_error>
#include <utility>

#include "core/input_file.h"

namespace shardscope {
namespace {

namespace fs = std::filesystem;

std::string os_error(int error) {
  return std::strerror(error);
}

// "--record: cannot write 'run.ssrun'", or "run.ssrun: cannot write" without a flag.
std::string where(const NamedFile& file, const std::string& what) {
  return file.flag.empty() ? file.path + ": " + what : file.flag + ": " + what + " '" + file.path + "'";
}

std::string parent_directory(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

// The temporary is created beside the file: its directory must exist and take new files.
void check_directory(const NamedFile& output) {
  const std::string directory = parent_directory(output.path);
  struct stat st {};
  if (::stat(directory.c_str(), &st) != 0) {
    const int error = errno;
    throw OutputError(where(output, "cannot write") + ": " +
                      (error == ENOENT ? "the directory '" + directory + "' does not exist"
                                       : "its directory '" + directory + "': " + os_error(error)));
  }
  if (!S_ISDIR(st.st_mode))
    throw OutputError(where(output, "cannot write") + ": '" + directory + "' is not a directory");
  if (::access(directory.c_str(), W_OK | X_OK) != 0)
    throw OutputError(where(output, "cannot write") + ": the directory '" + directory + "' is not writable (" +
                      os_error(errno) + ")");
}

// The resolved absolute path, as far as it exists (symlinks in the directories followed).
fs::path resolved(const std::string& path) {
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec);
  if (ec) return fs::path(path).lexically_normal();
  const fs::path canonical = fs::weakly_canonical(absolute, ec);
  return ec ? absolute.lexically_normal() : canonical;
}

// The same file: the same inode (a hard link, a symlink to it), or the same resolved path.
bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  return resolved(a) == resolved(b);
}

std::string label(const NamedFile& file) {
  return file.flag.empty() ? "'" + file.path + "'" : file.flag;
}

// The mode the file gets: the replaced file's permissions, else what a plain
// open(O_CREAT, 0666) would give under the umask.
mode_t mode_for(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return st.st_mode & 0777;
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

}  // namespace

void check_output_path(const NamedFile& output) {
  struct stat st {};
  if (::lstat(output.path.c_str(), &st) != 0) {
    if (errno != ENOENT) throw OutputError(where(output, "cannot write") + ": " + os_error(errno));
  } else if (S_ISLNK(st.st_mode)) {
    std::error_code ec;
    const fs::path to = fs::read_symlink(output.path, ec);
    throw OutputError(where(output, "cannot replace") + ": it is a symbolic link" +
                      (ec ? std::string() : " (to '" + to.string() + "')") + "; name the file itself, or another path");
  } else if (!S_ISREG(st.st_mode)) {
    throw OutputError(where(output, "cannot replace") + ": it is " + file_type_text(st.st_mode) +
                      "; only a regular file is replaced: choose a file name");
  }
  check_directory(output);
}

void check_outputs(const std::vector<NamedFile>& inputs, const std::vector<NamedFile>& outputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const NamedFile& output = outputs[i];
    if (output.path.empty()) continue;
    for (const NamedFile& input : inputs)
      if (!input.path.empty() && same_file(input.path, output.path))
        throw OutputError(where(output, "will not write") + ": it is the same file as " + label(input) + " '" +
                          input.path + "', which it would destroy; choose another file");
    for (std::size_t j = 0; j < i; ++j)
      if (!outputs[j].path.empty() && same_file(outputs[j].path, output.path))
        throw OutputError(where(output, "will not write") + ": it is the same file as " + label(outputs[j]) +
                          "; give each output its own file");
  }
  for (const NamedFile& output : outputs)
    if (!output.path.empty()) check_output_path(output);
}

std::vector<NamedFile> files_in_directory(const std::string& flag, const std::string& dir) {
  std::vector<NamedFile> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_regular_file(ec)) files.push_back({flag, entry.path().string()});
  return files;
}

// ---- OutputFile ----

// stream(): a 64 KiB buffer in front of write_quietly(); a failed write makes
// the stream bad, and commit() reports the error.
class OutputFile::StreamBuffer final : public std::streambuf {
 public:
  explicit StreamBuffer(OutputFile& file) : file_(file), buffer_(64 * 1024) { reset(); }

 protected:
  int_type overflow(int_type ch) override {
    if (!drain()) return traits_type::eof();
    if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
    *pptr() = traits_type::to_char_type(ch);
    pbump(1);
    return ch;
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  void reset() { setp(buffer_.data(), buffer_.data() + buffer_.size()); }
  bool drain() {
    const auto bytes = static_cast<std::size_t>(pptr() - pbase());
    reset();
    return file_.write_quietly(buffer_.data(), bytes);
  }

  OutputFile& file_;
  std::vector<char> buffer_;
};

OutputFile::OutputFile(NamedFile target) : target_(std::move(target)) {
  check_output_path(target_);
  std::string name = target_.path + ".XXXXXX.part";
  fd_ = ::mkostemps(name.data(), 5, O_CLOEXEC);  // O_EXCL: a new file, never an existing one
  if (fd_ < 0)
    throw OutputError(where(target_, "cannot write") + ": creating a temporary beside it failed: " + os_error(errno));
  temp_ = name;
  temp_exists_ = true;
  ::fchmod(fd_, mode_for(target_.path));  // mkostemps gives 0600
}

OutputFile::~OutputFile() {
  abandon();
}

bool OutputFile::write_quietly(const char* data, std::size_t bytes) noexcept {
  if (!error_.empty() || fd_ < 0) return false;
  while (bytes > 0) {
    const ssize_t n = ::write(fd_, data, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // ENOSPC, EFBIG (with SIGXFSZ ignored), EIO, ...
      try {
        error_ = where(target_, "writing") + " failed: " + os_error(n < 0 ? errno : EIO);
      } catch (...) {
      }
      return false;
    }
    data += n;
    bytes -= static_cast<std::size_t>(n);
  }
  return true;
}

void OutputFile::write(const void* data, std::size_t bytes) {
  if (fd_ < 0 && error_.empty()) throw std::logic_error(target_.path + ": written after commit or abandon");
  if (!write_quietly(static_cast<const char*>(data), bytes)) throw OutputError(error_);
}

std::ostream& OutputFile::stream() {
  if (!stream_) {
    buffer_ = std::make_unique<StreamBuffer>(*this);
    stream_ = std::make_unique<std::ostream>(buffer_.get());
  }
  return *stream_;
}

void OutputFile::fail_commit(const std::string& what) {
  abandon();
  throw OutputError(what + "; '" + target_.path + "' was left as it was");
}

void OutputFile::commit() {
  if (!temp_exists_) throw std::logic_error(target_.path + ": committed after commit or abandon");
  if (stream_) stream_->flush();
  if (!error_.empty()) fail_commit(error_);
  if (::fsync(fd_) != 0) fail_commit(where(target_, "writing") + " failed: " + os_error(errno));
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) fail_commit(where(target_, "writing") + " failed: " + os_error(errno));
  try {
    check_output_path(target_);  // still replaceable: nothing put a directory or a link there meanwhile
  } catch (const OutputError& e) {
    temp_exists_ = false;  // kept: the run's output, under the temporary's name
    throw OutputError(std::string(e.what()) + "; what was written is kept as '" + temp_ + "'");
  }
  if (::rename(temp_.c_str(), target_.path.c_str()) != 0)
    fail_commit(where(target_, "cannot replace") + ": " + os_error(errno));
  temp_exists_ = false;
  // The rename reaches the disk with the directory (best effort: some file systems refuse).
  const int directory = ::open(parent_directory(target_.path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directory >= 0) {
    ::fsync(directory);
    ::close(directory);
  }
}

void OutputFile::abandon() noexcept {
  if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  if (temp_exists_) ::unlink(temp_.c_str());
  temp_exists_ = false;
}

}  // namespace shardscope
