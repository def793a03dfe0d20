#pragma once
// attngeom merge: shard run directories (analyze --shard i/n) -> one run directory whose
// tables equal those of a single unsharded run (same records, same order).
#include <filesystem>
#include <vector>

#include "analysis/aggregate.h"

namespace attngeom {

// The tables use the shards' own aggregation options (run.json); a length sweep's
// lengths/L folders are merged alike and length_sweep.csv rewritten.
void merge_runs(const std::vector<std::filesystem::path>& shards, const std::filesystem::path& out, bool per_sequence);

}  // namespace attngeom
