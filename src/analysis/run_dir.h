#pragma once
// The run directory of `analyze`: created fresh, resumed, or refused. A directory that
// exists and is not an attngeom run (no run.json of ours) is never written into.
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attngeom {

enum class RunDirMode { kCreate, kResume, kOverwrite };

class RunDir {
 public:
  // kCreate: the path must not exist, or be a directory that holds nothing committed (empty,
  //          or only the temporaries of a run killed before it wrote its marker).
  // kResume: it must be a run directory whose settings equal `settings` (same model,
  //          corpus selection, N grid, ...); finished sequences are kept. A directory that
  //          holds nothing committed starts the run instead.
  // kOverwrite: passes check_run_dir where a previous *run* is there; RunDir itself opens
  //             only what RunDirGuard::open_mode() gives, after the previous run went aside.
  // Throws InputError with the path and the reason otherwise.
  RunDir(const std::filesystem::path& path, const nlohmann::json& settings, RunDirMode mode);

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path records_dir() const { return path_ / "records"; }
  bool has_record(std::size_t sequence) const;
  std::vector<std::size_t> finished_sequences() const;                          // ascending
  void write_json(const std::string& name, const nlohmann::json& value) const;  // atomic

 private:
  std::filesystem::path path_;
};

// Makes a run all-or-nothing up to its first record: a run that ends (fails, or is stopped)
// before `out/records` holds a record leaves `out` as it was found. A new `out` is removed;
// under kOverwrite the previous run is renamed aside (the sibling `NAME.previous.PID`) and
// removed only once the new run has a record, else it is renamed back. kResume is left alone.
class RunDirGuard {
 public:
  // Call after check_run_dir. Under kOverwrite an input (model, corpus, dump) inside `out`
  // would be deleted with the previous run: InputError. A previous run that cannot be
  // renamed back is reported to `warn` (null: not reported), since a destructor cannot throw.
  RunDirGuard(const std::filesystem::path& out, RunDirMode mode, const std::vector<std::filesystem::path>& inputs,
              std::function<void(const std::string&)> warn = {});
  ~RunDirGuard();
  RunDirGuard(const RunDirGuard&) = delete;
  RunDirGuard& operator=(const RunDirGuard&) = delete;

  RunDirMode open_mode() const { return open_mode_; }  // kCreate once a previous run went aside

 private:
  std::filesystem::path out_, aside_;  // aside_: empty unless a previous run was set aside
  std::function<void(const std::string&)> warn_;
  RunDirMode open_mode_;
  bool created_ = false;  // `out` did not exist
};

// The checks of the constructor, without creating or changing anything.
void check_run_dir(const std::filesystem::path& path, const nlohmann::json& settings, RunDirMode mode);

// Largest run.json we read (real ones are a few kilobytes).
inline constexpr std::size_t kMaxRunJsonBytes = std::size_t{64} << 20;

// A run's label when none is given: its directory's name ("runs/x/" and "runs/./x" are "x").
std::string default_run_label(const std::filesystem::path& dir);

// Whether `dir` holds an attngeom run.json.
bool is_run_dir(const std::filesystem::path& dir);
nlohmann::json read_run_json(const std::filesystem::path& dir);  // throws InputError

}  // namespace attngeom
