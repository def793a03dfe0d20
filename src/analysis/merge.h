#pragma once
// attngeom merge: shard run directories (analyze --shard i/n) -> one run directory whose
// tables equal those of a single unsharded run (same records, same order).
#include <filesystem>
#include <functional>
#include <vector>

#include "analysis/aggregate.h"

namespace attngeom {

// The tables use the shards' own aggregation options (run.json); a length sweep's
// lengths/L folders are merged alike and length_sweep.csv rewritten. `finish` runs last on
// `out` (the CLI writes the report there); a throw from it undoes the merge like any other.
void merge_runs(const std::vector<std::filesystem::path>& shards, const std::filesystem::path& out, bool per_sequence,
                const std::function<void(const std::filesystem::path&)>& finish);

}  // namespace attngeom
