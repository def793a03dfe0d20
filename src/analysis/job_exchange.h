#pragma once
// One length's work under MPI (analysis/job_ranks.h): what the ranks must share for their
// records to belong to one run, and which sequences each rank computes or rank 0 awaits.
#include <cstddef>
#include <string>
#include <vector>

#include "analysis/job_ranks.h"
#include "analysis/length_plan.h"

namespace attngeom {

// What every rank of an MPI job must share for its records to belong to one run: the settings
// but the paths (a node may hold its copy elsewhere), the model's config and weight headers, and
// the sequences' tokens.
std::string job_fingerprint(const RunInputs& inputs, const LengthPlan& plan);

// This process's part of a length's (shard's) sequences: rank r of K computes those with
// index mod K = r that are not finished yet; a process alone computes every unfinished one.
struct RankWork {
  std::vector<std::size_t> to_compute;  // this rank's, never recomputed once finished
  std::size_t finished = 0;             // finished before, by any rank (a resumed run)
  std::size_t awaited_records = 0;      // those other ranks have still to send (to rank 0)
};
RankWork rank_work(const std::vector<std::size_t>& shard_sequences, const std::vector<std::size_t>& finished,
                   const JobRanks* ranks);

}  // namespace attngeom
