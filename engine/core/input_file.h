// SPDX-License-Identifier: GPL-3.0-or-later
// Files the user names as input (config files, recordings) are read only when
// they are regular files: a FIFO would block the program forever, a device
// such as /dev/zero never ends, and a directory or /dev/null would be read as
// an empty file and blamed on its contents. The check opens the file without
// blocking (O_NONBLOCK) and asks the open descriptor what it is.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace shardscope {

// Config files are small; a larger "config" is the wrong file (and would be read whole into memory).
inline constexpr std::uint64_t kMaxConfigFileBytes = 64ull << 20;

// A file the user named, with the flag (or menu item) that named it:
// {"--record", "run.ssrun"}. Messages start with the flag, or with the path
// where the flag is empty.
struct NamedFile {
  std::string flag;
  std::string path;
};

// What a file of this st_mode is, in words: "a directory", "a symbolic link",
// "a FIFO (named pipe)", "a character device", ...; "a regular file" for one.
std::string file_type_text(unsigned mode);

// What `path` is when it exists but is not a regular file: "a directory",
// "a FIFO (named pipe)", "a character device", ...; nullopt for a regular file
// and for a path that cannot be opened (the caller's own open reports that).
std::optional<std::string> special_file_kind(const std::string& path);

// The one check before a user's file is opened by a reader of its own (an
// ifstream, a safetensors or checkpoint reader): ConfigError naming the flag and
// the file when it exists but is not a regular file ("--data: cannot read
// 'x': it is a FIFO (named pipe), not a regular file"). A missing file is left
// to the reader, which says so in its own words. read_input_file checks the
// same on the descriptor it reads.
void require_regular_input(const NamedFile& input);

// The whole file at `path`. ConfigError naming `what` (the flag) and the path
// when it cannot be opened ("<what>: cannot open '<path>': no such file"), is
// not a regular file ("<what>: '<path>' is a directory, not a file"), is
// empty, or is larger than `max_bytes`.
std::string read_input_file(const std::string& path, std::string_view what,
                            std::uint64_t max_bytes = kMaxConfigFileBytes);

}  // namespace shardscope
