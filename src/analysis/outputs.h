#pragma once
// Writes the tables of docs/run_format.md from an aggregated run.
#include <filesystem>

#include "analysis/aggregate.h"

namespace attngeom {

void write_tables(const RunAggregate& run, const std::filesystem::path& dir);

// selection_per_seq.csv, streamed from the record files (ascending sequence order).
void write_per_sequence_table(const std::vector<std::filesystem::path>& record_files, int kv_heads,
                              const std::filesystem::path& path);

// A mixture of experts' routing, summed over the records: experts.csv (tokens per layer and
// expert) and routing.csv (per layer, the tokens whose fp32 routing differs). Nothing for a
// dense model.
void write_routing_tables(const std::vector<std::filesystem::path>& record_files, const std::filesystem::path& dir);

}  // namespace attngeom
