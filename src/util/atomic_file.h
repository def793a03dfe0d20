#pragma once
// A file that appears at its final path only when committed: it is written as a
// temporary sibling, then fsync'ed and renamed. Destroyed uncommitted, it is removed,
// so a failed run never leaves a half-written output behind.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "util/error.h"

namespace attngeom {

class AtomicFile {
 public:
  explicit AtomicFile(std::filesystem::path final_path);  // throws InputError
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Thread-safe positional write; throws InputError (e.g. disk full) naming the file.
  void write_at(std::size_t offset, const void* data, std::size_t bytes);
  void resize(std::size_t bytes);
  void commit();

  const std::filesystem::path& path() const { return final_path_; }

 private:
  std::filesystem::path final_path_;
  std::filesystem::path temp_path_;
  int fd_ = -1;
  bool committed_ = false;
};

// Checked before any work: `out` (named `label`, e.g. {setting("out"), " x.json"}) must be a path in an
// existing directory, new or a regular file (not a directory, device, FIFO, socket or
// link, which the final rename would replace), and not one of `inputs` nor anywhere below an
// input directory. `expected` says what it should be ("a .json file path"). Throws SettingError.
void check_output_path(const std::filesystem::path& out, const SettingMessage& label, const std::string& expected,
                       const std::vector<std::filesystem::path>& inputs = {});

// Whether `path` is `dir` or lies anywhere below it (links resolved where they exist).
bool lies_within(const std::filesystem::path& path, const std::filesystem::path& dir);

// The first input that names the same file or folder as an earlier one (the same device and
// inode: "x", "./x", a link or a hard link to it), as {earlier, repeat}; paths that do not
// exist are never repeats. O(n log n), for the "given twice" checks of every command.
std::optional<std::pair<std::size_t, std::size_t>> repeated_path(const std::vector<std::filesystem::path>& paths);

// Copies `from` to `to` through an AtomicFile: `to` appears whole or not at all.
void copy_file_atomic(const std::filesystem::path& from, const std::filesystem::path& to);

}  // namespace attngeom
