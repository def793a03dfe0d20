#include "util/memory_limit.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

#include "util/machine.h"

namespace attngeom {
namespace fs = std::filesystem;
namespace {

// v1 writes "no limit" as the largest page-aligned signed 64-bit value, v2 as "max".
constexpr std::uint64_t kUnlimitedAbove = std::uint64_t{1} << 62;

std::optional<std::uint64_t> read_limit_file(const fs::path& file) {
  std::ifstream in(file);
  std::string text;
  if (!(in >> text) || text == "max") return std::nullopt;
  std::uint64_t value = 0;
  std::istringstream number(text);
  if (!(number >> value) || value >= kUnlimitedAbove) return std::nullopt;
  return value;
}

// The tightest limit in `file_name` of cgroup `path` and its ancestors under `hierarchy`.
std::optional<MemoryLimit> tightest_limit(const fs::path& hierarchy, const std::string& path, const char* file_name,
                                          const std::string& version) {
  std::optional<MemoryLimit> best;
  for (fs::path group = fs::path(path).lexically_normal();; group = group.parent_path()) {
    const std::optional<std::uint64_t> limit = read_limit_file(hierarchy / group.relative_path() / file_name);
    if (limit && (!best || *limit < best->bytes)) {
      best = MemoryLimit{*limit, "cgroup " + version + " " + file_name + " of " + group.string()};
    }
    if (!group.has_relative_path()) break;
  }
  return best;
}

// Whether a comma-separated controller list ("cpu,memory") names `controller`.
bool lists_controller(std::string_view list, std::string_view controller) {
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    if (list.substr(0, comma) == controller) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

std::optional<MemoryLimit> cgroup_memory_limit(const std::string& proc_cgroup, const fs::path& root) {
  std::optional<MemoryLimit> best;
  const auto keep = [&best](std::optional<MemoryLimit> limit) {
    if (limit && (!best || limit->bytes < best->bytes)) best = std::move(limit);
  };
  std::istringstream lines(proc_cgroup);
  for (std::string line; std::getline(lines, line);) {  // "id:controllers:path"
    const std::size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string path = line.substr(second + 1);
    if (path.empty() || path[0] != '/') continue;
    if (lists_controller(std::string_view(line).substr(first + 1, second - first - 1), "memory")) {
      keep(tightest_limit(root / "memory", path, "memory.limit_in_bytes", "v1"));
    } else if (line.compare(0, first + 2, "0::") == 0) {
      const fs::path unified = fs::exists(root / "cgroup.controllers") ? root : root / "unified";
      keep(tightest_limit(unified, path, "memory.max", "v2"));
    }
  }
  return best;
}

std::optional<MemoryLimit> process_memory_limit() {
  std::ifstream file("/proc/self/cgroup");
  std::stringstream text;
  text << file.rdbuf();
  std::optional<MemoryLimit> limit = cgroup_memory_limit(text.str(), "/sys/fs/cgroup");
  const std::optional<std::uint64_t> available = available_memory_bytes();
  if (available && (!limit || *available < limit->bytes)) limit = MemoryLimit{*available, "MemAvailable"};
  return limit;
}

std::optional<double> measured_read_rate(const fs::path& file, std::uint64_t sample_bytes) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  const off_t size = ::lseek(fd, 0, SEEK_END);
  constexpr std::uint64_t kChunk = std::uint64_t{1} << 20;
  const std::uint64_t sample = size > 0 ? std::min<std::uint64_t>(sample_bytes, static_cast<std::uint64_t>(size)) : 0;
  const auto offset = static_cast<off_t>((static_cast<std::uint64_t>(size) - sample) / 2 / 4096 * 4096);
  // Pages of the sample that another mapping holds stay cached: the rate is then an upper bound.
  ::posix_fadvise(fd, offset, static_cast<off_t>(sample), POSIX_FADV_DONTNEED);
  std::vector<char> buffer(kChunk);
  std::uint64_t done = 0;
  const auto start = std::chrono::steady_clock::now();
  while (done < sample) {
    const ssize_t got = ::pread(fd, buffer.data(), std::min(kChunk, sample - done), offset + static_cast<off_t>(done));
    if (got <= 0) break;
    done += static_cast<std::uint64_t>(got);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ::close(fd);
  if (done < sample || done == 0 || seconds <= 0) return std::nullopt;
  return static_cast<double>(done) / seconds;
}

}  // namespace attngeom
