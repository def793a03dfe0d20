#pragma once
// analyze under mpirun (docs/cluster.md "MPI"): this process as one rank of the job, and the
// JobRanks whose records travel to rank 0 as MPI messages (no shared file system needed).
// Built only with ATTNGEOM_MPI; only the CLI links it.
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "analysis/job_ranks.h"

namespace attngeom::cluster {

class MpiJob final : public JobRanks {
 public:
  // MPI_Init. `launched_ranks`: the size the launcher's environment announced; InputError when
  // MPI sees another (a launcher of another MPI than the one attngeom was built with).
  explicit MpiJob(int launched_ranks);
  ~MpiJob() override;  // waits for the records in flight, then MPI_Finalize
  MpiJob(const MpiJob&) = delete;
  MpiJob& operator=(const MpiJob&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::vector<std::size_t> start_length(const std::string& inputs, const std::vector<std::size_t>& finished) override;
  const std::filesystem::path& staging_dir() const override { return staging_; }
  void send_record(std::size_t sequence, const std::filesystem::path& path) override;
  void finish_sending() override;
  std::size_t receive_records(const std::filesystem::path& records_dir, bool wait) override;

  // Ends every rank of the job at once (MPI_Abort); the launcher exits with `exit_code`.
  [[noreturn]] void abort(int exit_code);

 private:
  struct Transfers;  // MPI requests in flight and their buffers
  // The test hook ATTNGEOM_TEST_FAIL_RANK=R:N:kill|error (docs/cluster.md): rank R > 0 dies
  // by SIGKILL, or throws, once its N-th record has left.
  struct TestFailure {
    int rank = -1;
    std::size_t after = 0;
    bool kill = false;
  };
  void maybe_fail_for_test();
  void remove_staging_dir();

  int rank_ = 0;
  int size_ = 1;
  std::filesystem::path staging_;  // made by ranks other than 0 (rank 0 writes its records in place)
  std::unique_ptr<Transfers> transfers_;
  TestFailure test_failure_;
  std::size_t sent_ = 0;
};

}  // namespace attngeom::cluster
