#pragma once
// What machine a result came from, for provenance records.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace attngeom {

struct MachineInfo {
  std::string hostname;
  std::string cpu_model;
  int logical_cores = 0;
  std::uint64_t memory_bytes = 0;
};

MachineInfo machine_info();
// The CPU's vendor string from cpuid leaf 0 ("GenuineIntel", "AuthenticAMD"); empty off x86.
std::string cpu_vendor();
std::string utc_timestamp();  // ISO 8601, e.g. 2026-11-21T17:30:00Z

// MemAvailable from /proc/meminfo: what can be allocated without swapping. Unset if unknown.
std::optional<std::uint64_t> available_memory_bytes();
// Bytes an unprivileged user may still write on the file system holding `path`, or its
// nearest existing ancestor (statvfs f_bavail * f_frsize). Unset if unknown.
std::optional<std::uint64_t> free_disk_bytes(const std::filesystem::path& path);

}  // namespace attngeom
