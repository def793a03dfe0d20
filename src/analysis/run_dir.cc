#include "analysis/run_dir.h"


#include "analysis/record.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/file_read.h"

namespace attngeom {

namespace fs = std::filesystem;

bool is_run_dir(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / "run.json", ec)) return false;
  try {
    const nlohmann::json run = read_run_json(dir);
    const auto format = run.is_object() ? run.find("format") : run.end();
    return format != run.end() && format->is_string() && *format == "attngeom-run-v1";
  } catch (const InputError&) {
    return false;
  }
}

nlohmann::json read_run_json(const fs::path& dir) {
  const fs::path path = dir / "run.json";
  const std::string text = read_file_bytes(path, kMaxRunJsonBytes, "run.json (is it an attngeom run directory?)");
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path.string() + ": malformed JSON (" + std::string(e.what()) + ")");
  }
}

// Whether `path` would be emptied first (an existing, non-empty run directory under --overwrite).
bool check_run_dir_and_report(const fs::path& path, const nlohmann::json& settings, RunDirMode mode) {
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  if (ec) throw InputError("--out " + path.string() + ": " + ec.message());
  if (exists && !fs::is_directory(path, ec)) throw InputError("--out " + path.string() + ": exists and is not a directory");
  const bool empty = exists && fs::is_empty(path, ec);
  if (ec) throw InputError("--out " + path.string() + ": cannot list: " + ec.message());
  const bool ours = exists && is_run_dir(path);

  if (mode == RunDirMode::kResume) {
    if (!ours) throw InputError("--resume: " + path.string() + " is not an attngeom run directory");
    const nlohmann::json previous = read_run_json(path);
    if (!previous.is_object() || previous.value("settings", nlohmann::json()) != settings) {
      throw InputError("--resume: " + path.string() +
                       " was started with different settings (model, corpus selection, grid or options)");
    }
    return false;
  }
  if (exists && !empty) {
    if (!ours) {
      throw InputError("--out " + path.string() + ": exists, is not empty and is not an attngeom run directory; "
                       "refusing to write into it");
    }
    if (mode != RunDirMode::kOverwrite) {
      throw InputError("--out " + path.string() + ": already holds a run; use --resume to continue it or --overwrite");
    }
    return true;
  }
  return false;
}

void check_run_dir(const fs::path& path, const nlohmann::json& settings, RunDirMode mode) {
  check_run_dir_and_report(path, settings, mode);
}

RunDir::RunDir(const fs::path& path, const nlohmann::json& settings, RunDirMode mode) : path_(path) {
  std::error_code ec;
  if (check_run_dir_and_report(path, settings, mode)) {
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      fs::remove_all(entry.path(), ec);
      if (ec) break;
    }
    if (ec) throw InputError("--overwrite " + path.string() + ": cannot empty the previous run: " + ec.message());
  }
  fs::create_directories(path, ec);
  if (ec) throw InputError("--out " + path.string() + ": cannot create: " + ec.message());
  // The marker goes first, so a run killed at any later point is a resumable run directory.
  if (mode != RunDirMode::kResume) write_json("run.json", {{"format", "attngeom-run-v1"}, {"settings", settings}});
  fs::create_directories(records_dir(), ec);
  if (ec) throw InputError("--out " + path.string() + ": cannot create: " + ec.message());
  // Temporaries of a killed run were never committed: drop them.
  for (const auto& entry : fs::directory_iterator(records_dir(), ec)) {
    if (entry.path().filename().string().find(".tmp.") != std::string::npos) fs::remove(entry.path(), ec);
  }
}

bool RunDir::has_record(std::size_t sequence) const {
  std::error_code ec;
  return fs::is_regular_file(record_path(records_dir(), sequence), ec);
}

std::vector<std::size_t> RunDir::finished_sequences() const {
  std::vector<std::size_t> done;
  for (const fs::path& record : list_records(records_dir())) {
    std::size_t sequence = 0;
    if (std::sscanf(record.filename().c_str(), "seq-%zu.safetensors", &sequence) == 1) done.push_back(sequence);
  }
  std::sort(done.begin(), done.end());
  return done;
}

void RunDir::write_json(const std::string& name, const nlohmann::json& value) const {
  const std::string text = value.dump(2) + "\n";
  AtomicFile file(path_ / name);
  file.write_at(0, text.data(), text.size());
  file.commit();
}

}  // namespace attngeom
