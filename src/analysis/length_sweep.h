#pragma once
// The length sweep's table: the mean of each head's selection metrics at every N, one block
// of rows per sequence length.
#include <filesystem>
#include <utility>
#include <vector>

#include "analysis/aggregate.h"

namespace attngeom {

// RUN_DIR `out`/length_sweep.csv from a length sweep's run directories, (seq_len, dir) each.
void write_length_sweep(const std::filesystem::path& out, const AggregateOptions& options,
                        const std::vector<std::pair<int, std::filesystem::path>>& runs, int kv_heads);

}  // namespace attngeom
