#pragma once
// What machine a result came from, for provenance records.
#include <cstdint>
#include <string>

namespace attngeom {

struct MachineInfo {
  std::string hostname;
  std::string cpu_model;
  int logical_cores = 0;
  std::uint64_t memory_bytes = 0;
  bool has_amx = false;  // filled by the caller, which knows the GEMM library
};

MachineInfo machine_info();
std::string utc_timestamp();  // ISO 8601, e.g. 2026-11-21T17:30:00Z

}  // namespace attngeom
