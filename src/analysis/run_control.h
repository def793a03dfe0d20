#pragma once
// How a front end steers a run and hears from it: stop requests, progress, warnings, and the
// ranks of an MPI job. The library writes nothing to stderr itself.
#include <atomic>
#include <functional>

#include "analysis/job_ranks.h"
#include "analysis/progress.h"
#include "util/error.h"

namespace attngeom {

struct RunControl {
  const std::atomic<bool>* stop = nullptr;              // stops a run between sequences (set from a signal handler)
  std::function<void(const ProgressUpdate&)> progress;  // after each finished sequence; null: none shown
  std::function<void(const SettingMessage&)> warn;      // e.g. fewer sequences than asked for; null: none shown
  JobRanks* ranks = nullptr;                            // this process's part of an MPI job; null: alone
  std::function<void(const RunStart&)> started;         // once, before the first sequence; null: not shown
};

// Whether this process writes the run directory: a process alone, or rank 0 of an MPI job.
inline bool writes_run_dir(const RunControl& control) { return control.ranks == nullptr || control.ranks->rank() == 0; }

}  // namespace attngeom
