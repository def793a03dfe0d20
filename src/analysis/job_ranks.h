#pragma once
// The ranks of one analyze job spread over processes that share no file system (under
// mpirun: cluster/mpi_job.h). Rank r of K computes the sequences k with k mod K = r; only
// rank 0 holds the run directory, and the records the other ranks finish travel to it, so
// its tables are those of one process. A process alone has no JobRanks.
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace attngeom {

class JobRanks {
 public:
  virtual ~JobRanks() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Every rank calls it once per sequence length, in the same order. `inputs` fingerprints
  // what shapes the records (flags, model, sequences): a rank whose fingerprint is not rank
  // 0's throws InputError. Rank 0 passes the sequences its run directory already holds (a
  // resumed run), and every rank gets them back.
  virtual std::vector<std::size_t> start_length(const std::string& inputs,
                                                const std::vector<std::size_t>& finished) = 0;

  // Ranks other than 0: a private folder where records are written before they are sent.
  virtual const std::filesystem::path& staging_dir() const = 0;
  // Ranks other than 0: sends the finished record file `path` of `sequence` to rank 0 and
  // removes the file; the transfer may complete later.
  virtual void send_record(std::size_t sequence, const std::filesystem::path& path) = 0;
  // Ranks other than 0: returns once every record sent has left.
  virtual void finish_sending() = 0;

  // Rank 0: writes each record that has arrived from another rank atomically into
  // `records_dir` and returns how many it wrote; with `wait`, waits for at least one.
  virtual std::size_t receive_records(const std::filesystem::path& records_dir, bool wait) = 0;
};

}  // namespace attngeom
