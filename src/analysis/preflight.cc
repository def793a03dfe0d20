#include "analysis/preflight.h"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <system_error>

#include "analysis/resources.h"
#include "util/error.h"
#include "util/machine.h"
#include "util/memory_limit.h"

namespace attngeom {
namespace {

namespace fs = std::filesystem;

// Enough to time storage, small enough to cost a fraction of a second.
constexpr std::uint64_t kReadRateSample = std::uint64_t{16} << 20;

const fs::path& largest_shard(const Checkpoint& checkpoint) {
  const auto& shards = checkpoint.shards();
  ATTNGEOM_CHECK(!shards.empty());
  std::error_code ec;
  return std::max_element(shards.begin(), shards.end(),
                          [&ec](const ShardInfo& a, const ShardInfo& b) {
                            return fs::file_size(a.path, ec) < fs::file_size(b.path, ec);
                          })
      ->path;
}

}  // namespace

void check_run_resources(const AnalysisSettings& s, const RunInputs& in, const std::vector<LengthPlan>& plans,
                         const RunControl& control) {
  const ModelConfig& c = in.checkpoint.config();
  ResourceEstimate need;
  need.weight_bytes = in.checkpoint.weight_bytes();
  for (const LengthPlan& plan : plans) {
    const LengthWork work{plan.seq_len, plan.rows.size(), &plan.schema,
                          records_to_write(plan, s.mode == RunDirMode::kResume)};
    need.working_bytes = std::max(need.working_bytes, working_memory_bytes(c, work, omp_get_max_threads()));
    need.disk_bytes =
        std::min(need.disk_bytes + output_disk_bytes(c, work), std::numeric_limits<std::uint64_t>::max() / 2);
  }
  const std::optional<MemoryLimit> memory = process_memory_limit();
  // The other ranks of an MPI job write no run directory: only their memory is checked.
  const std::optional<std::uint64_t> disk = writes_run_dir(control) ? free_disk_bytes(s.out) : std::nullopt;
  if (check_resources(need, memory, disk, s.out, s.memory_check) && control.warn) {
    control.warn(streaming_warning(need, *memory, measured_read_rate(largest_shard(in.checkpoint), kReadRateSample)));
  }
}

}  // namespace attngeom
