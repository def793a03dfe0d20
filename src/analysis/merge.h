#pragma once
// attngeom merge: shard run directories (analyze --shard i/n) -> one run directory whose
// tables equal those of a single unsharded run (same records, same order).
#include <filesystem>
#include <vector>

#include "analysis/aggregate.h"

namespace attngeom {

void merge_runs(const std::vector<std::filesystem::path>& shards, const std::filesystem::path& out,
                const AggregateOptions& options, bool per_sequence);

}  // namespace attngeom
