#pragma once
// The run directory of `analyze`: created fresh, resumed, or refused. A directory that
// exists and is not an attngeom run (no run.json of ours) is never written into.
#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

namespace attngeom {

enum class RunDirMode { kCreate, kResume, kOverwrite };

class RunDir {
 public:
  // kCreate: the path must not exist, or be a directory that holds nothing committed (empty,
  //          or only the temporaries of a run killed before it wrote its marker).
  // kResume: it must be a run directory whose settings equal `settings` (same model,
  //          corpus selection, N grid, ...); finished sequences are kept. A directory that
  //          holds nothing committed starts the run instead.
  // kOverwrite: like kCreate, but an existing *run* directory is emptied first.
  // Throws InputError with the path and the reason otherwise.
  RunDir(const std::filesystem::path& path, const nlohmann::json& settings, RunDirMode mode);

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path records_dir() const { return path_ / "records"; }
  bool has_record(std::size_t sequence) const;
  std::vector<std::size_t> finished_sequences() const;  // ascending
  void write_json(const std::string& name, const nlohmann::json& value) const;  // atomic

 private:
  std::filesystem::path path_;
};

// The checks of the constructor, without creating or changing anything.
void check_run_dir(const std::filesystem::path& path, const nlohmann::json& settings, RunDirMode mode);

// Largest run.json we read (real ones are a few kilobytes).
inline constexpr std::size_t kMaxRunJsonBytes = std::size_t{64} << 20;

// Whether `dir` holds an attngeom run.json.
bool is_run_dir(const std::filesystem::path& dir);
nlohmann::json read_run_json(const std::filesystem::path& dir);  // throws InputError

}  // namespace attngeom
