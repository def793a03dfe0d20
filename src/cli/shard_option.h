#pragma once
// --shard i/n, or --shard auto: this process's shard from the scheduler's environment, a
// Slurm job array's task (SLURM_ARRAY_TASK_ID with SLURM_ARRAY_TASK_COUNT, or _MIN and
// _MAX) or an MPI launcher's rank (OMPI_COMM_WORLD_RANK/_SIZE, PMI_RANK/PMI_SIZE).
#include <functional>
#include <optional>
#include <string>

namespace attngeom::cli {

struct ShardChoice {
  int index = 0;
  int count = 1;
};

// A variable's value, or null when unset (std::getenv, or a table in tests).
using EnvironmentLookup = std::function<const char*(const char*)>;

// Throws InputError naming the flag, or the variables that are missing or disagree.
ShardChoice parse_shard(const std::string& text, const EnvironmentLookup& environment);

// The rank and size an MPI launcher gave this process (the variables --shard auto reads),
// unset when none did. Throws InputError ("MPI launch: ...") for variables that disagree.
std::optional<ShardChoice> mpi_launch(const EnvironmentLookup& environment);

}  // namespace attngeom::cli
