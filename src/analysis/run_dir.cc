#include "analysis/run_dir.h"

#include <fstream>
#include <sstream>

#include "analysis/record.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace attngeom {

namespace fs = std::filesystem;

bool is_run_dir(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / "run.json", ec)) return false;
  try {
    return read_run_json(dir).value("format", "") == "attngeom-run-v1";
  } catch (const InputError&) {
    return false;
  }
}

nlohmann::json read_run_json(const fs::path& dir) {
  const fs::path path = dir / "run.json";
  std::ifstream in(path);
  if (!in) throw InputError(path.string() + ": cannot open (not an attngeom run directory?)");
  std::stringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path.string() + ": malformed JSON (" + std::string(e.what()) + ")");
  }
}

RunDir::RunDir(const fs::path& path, const nlohmann::json& settings, RunDirMode mode) : path_(path) {
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  if (exists && !fs::is_directory(path, ec)) throw InputError("--out " + path.string() + ": exists and is not a directory");
  const bool empty = exists && fs::is_empty(path, ec);
  const bool ours = exists && is_run_dir(path);

  if (mode == RunDirMode::kResume) {
    if (!ours) throw InputError("--resume: " + path.string() + " is not an attngeom run directory");
    const nlohmann::json previous = read_run_json(path);
    if (previous.value("settings", nlohmann::json()) != settings) {
      throw InputError("--resume: " + path.string() +
                       " was started with different settings (model, corpus selection, grid or options)");
    }
  } else if (exists && !empty) {
    if (!ours) {
      throw InputError("--out " + path.string() + ": exists, is not empty and is not an attngeom run directory; "
                       "refusing to write into it");
    }
    if (mode != RunDirMode::kOverwrite) {
      throw InputError("--out " + path.string() + ": already holds a run; use --resume to continue it or --overwrite");
    }
    for (const auto& entry : fs::directory_iterator(path)) fs::remove_all(entry.path());
  }
  fs::create_directories(path, ec);
  if (ec) throw InputError("--out " + path.string() + ": cannot create: " + ec.message());
  // The marker goes first, so a run killed at any later point is a resumable run directory.
  if (mode != RunDirMode::kResume) write_json("run.json", {{"format", "attngeom-run-v1"}, {"settings", settings}});
  fs::create_directories(records_dir(), ec);
  if (ec) throw InputError("--out " + path.string() + ": cannot create: " + ec.message());
  // Temporaries of a killed run were never committed: drop them.
  for (const auto& entry : fs::directory_iterator(records_dir())) {
    if (entry.path().filename().string().find(".tmp.") != std::string::npos) fs::remove(entry.path(), ec);
  }
}

bool RunDir::has_record(std::size_t sequence) const {
  std::error_code ec;
  return fs::is_regular_file(record_path(records_dir(), sequence), ec);
}

std::vector<std::size_t> RunDir::finished_sequences() const {
  std::vector<std::size_t> done;
  for (const auto& entry : fs::directory_iterator(records_dir())) {
    const std::string name = entry.path().filename().string();
    std::size_t sequence = 0;
    if (std::sscanf(name.c_str(), "seq-%zu.safetensors", &sequence) == 1 && name.size() == 22) done.push_back(sequence);
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
