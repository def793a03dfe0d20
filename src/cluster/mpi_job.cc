#include "cluster/mpi_job.h"

#include <mpi.h>
#include <stdlib.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <list>
#include <string>
#include <thread>

#include "analysis/record.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/file_read.h"
#include "util/plural.h"

namespace attngeom::cluster {

namespace fs = std::filesystem;

namespace {

constexpr int kRecordTag = 1;
// A record's message: its sequence index (host order: every rank runs this same binary), then
// the bytes of its record file.
constexpr std::size_t kIndexBytes = sizeof(std::uint64_t);

// A folder of this process's own under the temporary directory (ranks share no file system).
fs::path make_staging_dir() {
  std::string pattern = (fs::temp_directory_path() / "attngeom-mpi-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw InputError(pattern +
                     ": cannot create a folder for records on their way to MPI rank 0: " + std::strerror(errno));
  }
  return pattern;
}

}  // namespace

struct MpiJob::Transfers {
  struct Transfer {
    MPI_Request request = MPI_REQUEST_NULL;
    int source = 0;
    std::string bytes;  // the message; stays put until the request completes
  };
  std::list<Transfer> sends;     // ranks other than 0
  std::list<Transfer> receives;  // rank 0
};

MpiJob::MpiJob(int launched_ranks) : transfers_(std::make_unique<Transfers>()) {
  if (const char* hook = std::getenv("ATTNGEOM_TEST_FAIL_RANK")) {
    char how[8] = {};
    if (std::sscanf(hook, "%d:%zu:%7s", &test_failure_.rank, &test_failure_.after, how) != 3 ||
        test_failure_.rank < 1 || test_failure_.after < 1 ||
        (std::strcmp(how, "kill") != 0 && std::strcmp(how, "error") != 0)) {
      throw InputError(std::string("ATTNGEOM_TEST_FAIL_RANK='") + hook +
                       "': expected RANK:N:kill or RANK:N:error with RANK, N >= 1 (a test hook)");
    }
    test_failure_.kill = std::strcmp(how, "kill") == 0;
  }
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);  // OpenMP threads never call MPI
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  if (size_ != launched_ranks) {
    const int size = size_;
    MPI_Finalize();
    throw InputError("MPI launch: the launcher started " + std::to_string(launched_ranks) + " ranks, but MPI sees " +
                     std::to_string(size) + " (is mpirun from the MPI attngeom was built with, Open MPI?)");
  }
  if (rank_ != 0) staging_ = make_staging_dir();
}

MpiJob::~MpiJob() {
  for (Transfers::Transfer& send : transfers_->sends) MPI_Wait(&send.request, MPI_STATUS_IGNORE);
  remove_staging_dir();
  MPI_Finalize();
}

std::vector<std::size_t> MpiJob::start_length(const std::string& inputs, const std::vector<std::size_t>& finished) {
  std::uint64_t count = inputs.size();
  MPI_Bcast(&count, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  std::string first(count, '\0');
  if (rank_ == 0) first = inputs;
  MPI_Bcast(first.data(), static_cast<int>(count), MPI_CHAR, 0, MPI_COMM_WORLD);
  if (first != inputs) {
    throw InputError(
        "its flags, model (config.json, weight headers) or corpus sequences differ from rank 0's; every rank must "
        "read the same model and corpus with the same flags");
  }
  std::vector<std::uint64_t> shared(finished.begin(), finished.end());
  count = shared.size();
  MPI_Bcast(&count, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  shared.resize(count);
  if (count > 0) MPI_Bcast(shared.data(), static_cast<int>(count), MPI_UINT64_T, 0, MPI_COMM_WORLD);
  return {shared.begin(), shared.end()};
}

void MpiJob::send_record(std::size_t sequence, const fs::path& path) {
  const std::uint64_t index = sequence;
  Transfers::Transfer& send = transfers_->sends.emplace_back();
  send.bytes.assign(kIndexBytes, '\0');
  std::memcpy(send.bytes.data(), &index, kIndexBytes);
  send.bytes += read_file_bytes(path, INT_MAX - kIndexBytes, "record within one MPI message");
  fs::remove(path);
  MPI_Isend(send.bytes.data(), static_cast<int>(send.bytes.size()), MPI_BYTE, 0, kRecordTag, MPI_COMM_WORLD,
            &send.request);
  // Moves the sends in flight along (MPI progresses only inside its calls) and frees those done.
  std::erase_if(transfers_->sends, [](Transfers::Transfer& t) {
    int done = 0;
    MPI_Test(&t.request, &done, MPI_STATUS_IGNORE);
    return done != 0;
  });
  ++sent_;
  maybe_fail_for_test();
}

void MpiJob::finish_sending() {
  for (Transfers::Transfer& send : transfers_->sends) MPI_Wait(&send.request, MPI_STATUS_IGNORE);
  transfers_->sends.clear();
}

std::size_t MpiJob::receive_records(const fs::path& records_dir, bool wait) {
  std::list<Transfers::Transfer>& receives = transfers_->receives;
  for (;;) {
    // A receive for every record that has arrived, without waiting for its data: rank 0 goes
    // back to its own sequences while the data comes in.
    for (;;) {
      int arrived = 0;
      MPI_Message message;
      MPI_Status status;
      MPI_Improbe(MPI_ANY_SOURCE, kRecordTag, MPI_COMM_WORLD, &arrived, &message, &status);
      if (arrived == 0) break;
      int bytes = 0;
      MPI_Get_count(&status, MPI_BYTE, &bytes);
      Transfers::Transfer& receive = receives.emplace_back();
      receive.source = status.MPI_SOURCE;
      receive.bytes.resize(static_cast<std::size_t>(bytes));
      MPI_Imrecv(receive.bytes.data(), bytes, MPI_BYTE, &message, &receive.request);
    }
    std::size_t written = 0;
    for (auto it = receives.begin(); it != receives.end();) {
      int done = 0;
      MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
      if (done == 0) {
        ++it;
        continue;
      }
      std::uint64_t sequence = 0;
      ATTNGEOM_CHECK(it->bytes.size() >= kIndexBytes);
      std::memcpy(&sequence, it->bytes.data(), kIndexBytes);
      ATTNGEOM_CHECK(sequence % static_cast<std::uint64_t>(size_) == static_cast<std::uint64_t>(it->source));
      AtomicFile record(record_path(records_dir, sequence));
      record.write_at(0, it->bytes.data() + kIndexBytes, it->bytes.size() - kIndexBytes);
      record.commit();
      it = receives.erase(it);
      ++written;
    }
    if (written > 0 || !wait) return written;
    // Polls with a pause rather than spinning in a blocking MPI call: rank 0 may share its
    // cores with other ranks.
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void MpiJob::remove_staging_dir() {
  if (staging_.empty()) return;
  std::error_code ec;
  fs::remove_all(staging_, ec);
}

void MpiJob::abort(int exit_code) {
  remove_staging_dir();
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);  // MPI_Abort does not return
}

void MpiJob::maybe_fail_for_test() {
  if (rank_ != test_failure_.rank || sent_ != test_failure_.after) return;
  finish_sending();  // the records before the failure have left this rank
  if (test_failure_.kill) std::raise(SIGKILL);
  throw InputError("ATTNGEOM_TEST_FAIL_RANK: rank " + std::to_string(rank_) + " fails after " +
                   count_of(sent_, "record") + " sent (a test hook)");
}

}  // namespace attngeom::cluster
