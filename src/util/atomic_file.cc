#include "util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <string>

#include "util/error.h"
#include "util/mapped_file.h"

namespace attngeom {

namespace fs = std::filesystem;

namespace {

// Something the final rename would replace that is not a file: a link, device, FIFO, socket.
bool is_special(const fs::file_status& status) {
  return fs::exists(status) && !fs::is_regular_file(status) && !fs::is_directory(status);
}

}  // namespace

void check_output_path(const fs::path& out, const SettingMessage& label, const std::string& expected,
                       const std::vector<fs::path>& inputs) {
  const auto bad = [&](const std::string& what) { return SettingError(label + SettingMessage(": " + what)); };
  if (out.empty()) throw bad("empty path; expected " + expected);
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(out, ec);
  if (fs::is_directory(status)) throw bad("is a directory; expected " + expected);
  if (is_special(status))
    throw bad("exists and is not a regular file (a link, device, FIFO or socket); expected " + expected);
  const fs::path parent = fs::absolute(out).parent_path();
  if (!fs::is_directory(parent, ec)) throw bad("directory " + parent.string() + " does not exist");
  for (const fs::path& input : inputs) {
    if (input.empty() || !fs::exists(input, ec)) continue;
    if (fs::exists(status) && fs::equivalent(out, input, ec)) {
      throw bad("is an input of this run (" + input.string() + "); expected " + expected);
    }
    if (fs::is_directory(input, ec) && lies_within(parent, input)) {
      throw bad("lies inside the input folder " + input.string() + "; expected " + expected + " elsewhere");
    }
  }
}

bool lies_within(const fs::path& path, const fs::path& dir) {
  std::error_code ec;
  const fs::path inside =
      fs::weakly_canonical(fs::absolute(path), ec).lexically_relative(fs::weakly_canonical(fs::absolute(dir), ec));
  return !inside.empty() && *inside.begin() != "..";
}

std::optional<std::pair<std::size_t, std::size_t>> repeated_path(const std::vector<fs::path>& paths) {
  std::map<std::pair<dev_t, ino_t>, std::size_t> seen;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    struct stat st {};
    if (::stat(paths[i].c_str(), &st) != 0) continue;
    const auto [it, inserted] = seen.emplace(std::make_pair(st.st_dev, st.st_ino), i);
    if (!inserted) return std::make_pair(it->second, i);
  }
  return std::nullopt;
}

AtomicFile::AtomicFile(std::filesystem::path final_path) : final_path_(std::move(final_path)) {
  // The final rename would replace whatever sits at the path (a directory makes it fail).
  std::error_code ec;
  if (is_special(fs::symlink_status(final_path_, ec))) {
    throw InputError(final_path_.string() + ": exists and is not a regular file; refusing to replace it");
  }
  temp_path_ = final_path_;
  temp_path_ += ".tmp." + std::to_string(::getpid());
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw InputError(final_path_.string() + ": cannot create output: " + std::strerror(errno));
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());
}

void AtomicFile::write_at(std::size_t offset, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::pwrite(fd_, p, bytes, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw InputError(final_path_.string() + ": write failed: " + std::strerror(n < 0 ? errno : ENOSPC));
    }
    p += n;
    offset += static_cast<std::size_t>(n);
    bytes -= static_cast<std::size_t>(n);
  }
}

void AtomicFile::resize(std::size_t bytes) {
  if (::ftruncate(fd_, static_cast<off_t>(bytes)) != 0) {
    throw InputError(final_path_.string() + ": cannot size output: " + std::strerror(errno));
  }
}

void AtomicFile::commit() {
  ATTNGEOM_CHECK(!committed_);
  if (::fsync(fd_) != 0) throw InputError(final_path_.string() + ": fsync failed: " + std::strerror(errno));
  ::close(fd_);
  fd_ = -1;
  if (::rename(temp_path_.c_str(), final_path_.c_str()) != 0) {
    throw InputError(final_path_.string() + ": cannot rename into place: " + std::strerror(errno));
  }
  committed_ = true;
}

void copy_file_atomic(const std::filesystem::path& from, const std::filesystem::path& to) {
  const MappedFile source(from);
  AtomicFile file(to);
  const auto bytes = source.bytes();
  if (!bytes.empty()) file.write_at(0, bytes.data(), bytes.size());
  file.commit();
}

}  // namespace attngeom
