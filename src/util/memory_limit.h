#pragma once
// How much memory this process may use: the smaller of MemAvailable and the memory limit of
// its cgroup (v1 memory.limit_in_bytes, v2 memory.max, the tightest along the cgroup's
// ancestors), and how fast a file reads from its storage (for estimating the cost of
// memory-mapped pages that do not stay resident).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace attngeom {

struct MemoryLimit {
  std::uint64_t bytes = 0;
  std::string source;  // "MemAvailable", "cgroup v1 memory.limit_in_bytes of /NAME", "cgroup v2 memory.max of /NAME"
};

// The tightest cgroup memory limit of a process whose /proc/PID/cgroup reads `proc_cgroup`,
// with the v1 memory hierarchy under `root`/memory and v2's under `root` or `root`/unified.
// Unset when no cgroup sets a limit (or none can be read).
std::optional<MemoryLimit> cgroup_memory_limit(const std::string& proc_cgroup, const std::filesystem::path& root);

// The smaller of MemAvailable and this process's cgroup limit; unset if neither is known.
std::optional<MemoryLimit> process_memory_limit();

// Bytes per second read from `file` over a sample of at most `sample_bytes` from its middle,
// with the sample first dropped from the page cache so storage, not memory, is timed. Unset
// when the file cannot be read or the sample is too small to time.
std::optional<double> measured_read_rate(const std::filesystem::path& file, std::uint64_t sample_bytes);

}  // namespace attngeom
