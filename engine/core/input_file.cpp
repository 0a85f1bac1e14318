// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace shardscope {

namespace {

std::optional<std::string> kind_of(mode_t mode) {
  if (S_ISREG(mode)) return std::nullopt;
  return file_type_text(mode);
}

// An open descriptor that closes itself on every way out.
class Descriptor {
 public:
  // O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting forever.
  explicit Descriptor(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)) {}
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

std::string open_error_text(int error) {
  if (error == ENOENT) return "no such file";
  if (error == EACCES) return "permission denied";
  return std::strerror(error);
}

}  // namespace

std::string file_type_text(unsigned mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::optional<std::string> special_file_kind(const std::string& path) {
  const Descriptor file(path);
  struct stat status {};
  if (file.fd() < 0 || ::fstat(file.fd(), &status) != 0) return std::nullopt;
  return kind_of(status.st_mode);
}

void require_regular_input(const NamedFile& input) {
  if (input.path.empty()) return;
  if (const auto kind = special_file_kind(input.path))
    throw ConfigError(
        (input.flag.empty() ? input.path + ": cannot read" : input.flag + ": cannot read '" + input.path + "'") +
        ": it is " + *kind + ", not a regular file");
}

std::string read_input_file(const std::string& path, std::string_view what, std::uint64_t max_bytes) {
  const std::string flag(what);
  const Descriptor file(path);
  if (file.fd() < 0) throw ConfigError(flag + ": cannot open '" + path + "': " + open_error_text(errno));
  struct stat status {};
  if (::fstat(file.fd(), &status) != 0)
    throw ConfigError(flag + ": cannot open '" + path + "': " + std::strerror(errno));
  if (const auto kind = kind_of(status.st_mode))
    throw ConfigError(flag + ": '" + path + "' is " + *kind + ", not a file" +
                      (S_ISDIR(status.st_mode) ? "; give the config file inside it" : ""));
  const auto size = static_cast<std::uint64_t>(status.st_size);
  if (size > max_bytes)
    throw ConfigError(flag + ": '" + path + "' is " + std::to_string(size) + " bytes; a config file is at most " +
                      std::to_string(max_bytes) + " bytes (is it the right file?)");
  std::string text(static_cast<std::size_t>(size), '\0');
  std::size_t have = 0;
  while (have < text.size()) {
    const ssize_t n = ::read(file.fd(), text.data() + have, text.size() - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw ConfigError(flag + ": cannot read '" + path + "': " + std::strerror(errno));
    if (n == 0) break;  // the file shrank while being read: take what is there
    have += static_cast<std::size_t>(n);
  }
  text.resize(have);
  if (text.empty()) throw ConfigError(flag + ": '" + path + "' is an empty file");
  return text;
}

}  // namespace shardscope
