#include "cli/shard_option.h"

#include <optional>
#include <string_view>

#include "cli/commands.h"
#include "util/error.h"

namespace attngeom::cli {
namespace {

constexpr long long kMaxShards = 1LL << 30;

// The environment, read for `subject` (which starts every error: "--shard auto").
class Environment {
 public:
  Environment(const EnvironmentLookup& lookup, std::string subject) : lookup_(lookup), subject_(std::move(subject)) {}
  const std::string& subject() const { return subject_; }
  bool has(const char* name) const { return lookup_(name) != nullptr; }
  // The variable as an integer in [lo, kMaxShards], unset if absent.
  std::optional<long long> integer(const char* name, long long lo) const {
    const char* value = lookup_(name);
    if (value == nullptr) return std::nullopt;
    const std::optional<long long> number = parse_integer(value);
    if (!number || *number < lo || *number > kMaxShards) {
      throw InputError(subject_ + ": " + name + "='" + value + "' is not an integer in [" + std::to_string(lo) +
                       ", 2^30]");
    }
    return number;
  }

 private:
  const EnvironmentLookup& lookup_;
  std::string subject_;
};

ShardChoice checked(const Environment& env, long long index, long long count, const std::string& from) {
  if (index < 0 || index >= count) {
    throw InputError(env.subject() + ": " + from + " gives shard " + std::to_string(index) + " of " +
                     std::to_string(count) + ", outside [0, " + std::to_string(count) + ")");
  }
  return {static_cast<int>(index), static_cast<int>(count)};
}

// A job array's task: index = ID - MIN, count = COUNT (or MAX - MIN + 1); the two counts must
// agree, which they do only for an array without gaps or steps (--array=0-15, not 0-15:4).
ShardChoice slurm_shard(const Environment& env) {
  const long long id = *env.integer("SLURM_ARRAY_TASK_ID", 0);
  const std::optional<long long> count = env.integer("SLURM_ARRAY_TASK_COUNT", 1);
  const std::optional<long long> min = env.integer("SLURM_ARRAY_TASK_MIN", 0);
  const std::optional<long long> max = env.integer("SLURM_ARRAY_TASK_MAX", 0);
  if (min.has_value() != max.has_value()) {
    throw InputError(std::string("--shard auto: ") + (min ? "SLURM_ARRAY_TASK_MIN" : "SLURM_ARRAY_TASK_MAX") +
                     " is set without " + (min ? "SLURM_ARRAY_TASK_MAX" : "SLURM_ARRAY_TASK_MIN"));
  }
  if (!count && !min) {
    throw InputError(
        "--shard auto: SLURM_ARRAY_TASK_ID is set without SLURM_ARRAY_TASK_COUNT or "
        "SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_MAX");
  }
  if (min && *max < *min) {
    throw InputError("--shard auto: SLURM_ARRAY_TASK_MAX=" + std::to_string(*max) +
                     " is below SLURM_ARRAY_TASK_MIN=" + std::to_string(*min));
  }
  if (min && count && *count != *max - *min + 1) {
    throw InputError("--shard auto: SLURM_ARRAY_TASK_COUNT=" + std::to_string(*count) +
                     " disagrees with SLURM_ARRAY_TASK_MIN=" + std::to_string(*min) + " and SLURM_ARRAY_TASK_MAX=" +
                     std::to_string(*max) + " (an array with gaps or steps); use --array=0-N");
  }
  return checked(env, id - min.value_or(0), count ? *count : *max - *min + 1,
                 "SLURM_ARRAY_TASK_ID=" + std::to_string(id));
}

// An MPI launcher's rank and size, Open MPI's or the PMI's (MPICH, Intel MPI, srun).
std::optional<ShardChoice> mpi_shard(const Environment& env) {
  for (const auto& [rank_name, size_name] :
       {std::pair{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, std::pair{"PMI_RANK", "PMI_SIZE"}}) {
    const std::optional<long long> rank = env.integer(rank_name, 0);
    const std::optional<long long> size = env.integer(size_name, 1);
    if (rank.has_value() != size.has_value()) {
      throw InputError(env.subject() + ": " + (rank ? rank_name : size_name) + " is set without " +
                       (rank ? size_name : rank_name));
    }
    if (rank) return checked(env, *rank, *size, std::string(rank_name) + "=" + std::to_string(*rank));
  }
  return std::nullopt;
}

}  // namespace

std::optional<ShardChoice> mpi_launch(const EnvironmentLookup& environment) {
  return mpi_shard(Environment(environment, "MPI launch"));
}

ShardChoice parse_shard(const std::string& text, const EnvironmentLookup& environment) {
  if (text == "auto") {
    const Environment env(environment, "--shard auto");
    const std::optional<ShardChoice> mpi = mpi_shard(env);
    if (!env.has("SLURM_ARRAY_TASK_ID")) {
      if (mpi) return *mpi;
      throw InputError(
          "--shard auto: none of SLURM_ARRAY_TASK_ID, OMPI_COMM_WORLD_RANK or PMI_RANK is set "
          "(run it as a Slurm array task or under mpirun, or give --shard i/n)");
    }
    const ShardChoice slurm = slurm_shard(env);
    if (mpi && mpi->count > 1) {
      throw InputError("--shard auto: both a Slurm array task (SLURM_ARRAY_TASK_ID) and " + std::to_string(mpi->count) +
                       " MPI ranks are set; give --shard i/n");
    }
    return slurm;
  }
  const std::size_t slash = text.find('/');
  const std::string_view whole(text);
  const long long index = slash == std::string::npos ? -1 : parse_integer(whole.substr(0, slash)).value_or(-1);
  const long long count = slash == std::string::npos ? 0 : parse_integer(whole.substr(slash + 1)).value_or(0);
  if (count < 1 || count > kMaxShards || index < 0 || index >= count) {
    throw InputError("--shard '" + text + "': expected i/n with 0 <= i < n, or auto");
  }
  return {static_cast<int>(index), static_cast<int>(count)};
}

}  // namespace attngeom::cli
