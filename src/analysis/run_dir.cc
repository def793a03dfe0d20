#include "analysis/run_dir.h"

#include <unistd.h>

#include <stdexcept>
#include <string>

#include "analysis/record.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/file_read.h"
#include "util/json_parse.h"

namespace attngeom {

namespace fs = std::filesystem;

std::string default_run_label(const fs::path& dir) {
  fs::path path = fs::absolute(dir).lexically_normal();
  if (path.filename().empty()) path = path.parent_path();  // a trailing separator
  return path.filename().string();
}

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
    return parse_json(text, path.string());
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path.string() + ": malformed JSON (" + std::string(e.what()) + ")");
  }
}

namespace {

// A problem with the output directory, named as the setting "out".
SettingError out_error(const fs::path& path, const std::string& what) {
  return SettingError({setting("out"), " " + path.string() + ": " + what});
}

bool is_temporary(const fs::path& file) { return file.filename().string().find(".tmp.") != std::string::npos; }

// Whether the directory holds nothing committed: empty, or only the temporaries of a run
// killed before it committed its marker (AtomicFile's `NAME.tmp.PID`).
bool holds_nothing_committed(const fs::path& dir, std::error_code& ec) {
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file(ec) || !is_temporary(entry.path())) return false;
  }
  return true;
}

// "seq_len: 64 then, 48 now; lengths: [32] then, [48] now": the top-level settings that differ.
std::string settings_difference(const nlohmann::json& before, const nlohmann::json& now) {
  if (!before.is_object()) return "run.json holds none";
  const auto shown = [](const nlohmann::json& v) {
    const std::string text = v.dump();
    return text.size() <= 80 ? text : text.substr(0, 77) + "...";
  };
  std::string out;
  for (const auto& [key, value] : now.items()) {
    const auto it = before.find(key);
    const nlohmann::json old_value = it == before.end() ? nlohmann::json() : *it;
    if (old_value == value) continue;
    if (!out.empty()) out += "; ";
    out += key + ": " + (it == before.end() ? std::string("absent") : shown(old_value)) + " then, " + shown(value) +
           " now";
  }
  for (const auto& [key, value] : before.items()) {
    if (!now.contains(key)) out += (out.empty() ? "" : "; ") + key + ": " + shown(value) + " then, absent now";
  }
  return out;
}

// Whether the constructor writes a new marker after the checks: a new run (also --resume of
// a directory that holds nothing committed), not a resumed one.
bool check_run_dir_and_plan(const fs::path& path, const nlohmann::json& settings, RunDirMode mode) {
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  if (ec) throw out_error(path, ec.message());
  if (exists && !fs::is_directory(path, ec)) throw out_error(path, "exists and is not a directory");
  const bool empty = exists && holds_nothing_committed(path, ec);
  if (ec) throw out_error(path, "cannot list: " + ec.message());
  const bool ours = exists && is_run_dir(path);

  if (mode == RunDirMode::kResume) {
    if (!ours) {
      // Killed before its marker was committed: nothing to continue, so the run starts.
      if (empty) return true;
      throw SettingError({setting("resume"), ": " + path.string() + " is not an attngeom run directory"});
    }
    const nlohmann::json previous = read_run_json(path);
    const nlohmann::json before =
        previous.is_object() ? previous.value("settings", nlohmann::json()) : nlohmann::json();
    if (before != settings) {
      throw SettingError({setting("resume"),
                          ": " + path.string() + " was started with different settings (" +
                              settings_difference(before, settings) + "); resume with the same ones, or use ",
                          setting("overwrite")});
    }
    return false;
  }
  if (exists && !empty) {
    if (!ours) {
      throw out_error(path, "exists, is not empty and is not an attngeom run directory; refusing to write into it");
    }
    if (mode != RunDirMode::kOverwrite) {
      throw SettingError({setting("out"), " " + path.string() + ": already holds a run; use ", setting("resume"),
                          " to continue it or ", setting("overwrite")});
    }
    return true;  // RunDirGuard sets the previous run aside before RunDir opens `path`
  }
  return true;
}

// Temporaries of a killed run were never committed: drop them.
void remove_temporaries(const fs::path& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (is_temporary(entry.path())) fs::remove(entry.path(), ec);
  }
}

// Whether the run at `dir` has written a record (a run worth keeping).
bool holds_a_record(const fs::path& dir) noexcept {
  try {
    std::error_code ec;
    return fs::is_directory(dir / "records", ec) && !list_records(dir / "records").empty();
  } catch (...) {
    return false;
  }
}

}  // namespace

RunDirGuard::RunDirGuard(const fs::path& out, RunDirMode mode, const std::vector<fs::path>& inputs,
                         std::function<void(const std::string&)> warn)
    : out_(out), warn_(std::move(warn)), open_mode_(mode) {
  std::error_code ec;
  created_ = mode != RunDirMode::kResume && !fs::exists(out, ec);
  if (mode != RunDirMode::kOverwrite || !is_run_dir(out)) return;
  for (const fs::path& input : inputs) {
    if (lies_within(input, out)) {
      throw SettingError({setting("overwrite"), " " + out.string() + ": the input " + input.string() +
                                                    " lies inside it and would be deleted with the previous run"});
    }
  }
  fs::path name = fs::absolute(out).lexically_normal();
  if (!name.has_filename()) name = name.parent_path();  // "runs/x/"
  aside_ = name.parent_path() / (name.filename().string() + ".previous." + std::to_string(::getpid()));
  fs::rename(out, aside_, ec);
  if (ec) {
    throw SettingError({setting("overwrite"), " " + out.string() + ": cannot set the previous run aside as " +
                                                  aside_.string() + ": " + ec.message()});
  }
  open_mode_ = RunDirMode::kCreate;
}

RunDirGuard::~RunDirGuard() {
  if (!created_ && aside_.empty()) return;
  std::error_code ec;
  if (holds_a_record(out_)) {
    if (!aside_.empty()) fs::remove_all(aside_, ec);
    return;
  }
  fs::remove_all(out_, ec);
  if (aside_.empty()) return;
  fs::rename(aside_, out_, ec);
  if (!ec || !warn_) return;
  try {
    warn_("could not restore the previous run " + out_.string() + " from " + aside_.string() + ": " + ec.message());
  } catch (...) {  // a warning raised as an error (Python's filter) cannot leave a destructor
  }
}

void check_run_dir(const fs::path& path, const nlohmann::json& settings, RunDirMode mode) {
  check_run_dir_and_plan(path, settings, mode);
}

RunDir::RunDir(const fs::path& path, const nlohmann::json& settings, RunDirMode mode) : path_(path) {
  if (mode == RunDirMode::kOverwrite && is_run_dir(path)) {
    throw std::logic_error("RunDir: " + path.string() + " still holds the previous run (open it through RunDirGuard)");
  }
  const bool write_marker = check_run_dir_and_plan(path, settings, mode);
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) throw out_error(path, "cannot create: " + ec.message());
  remove_temporaries(path);
  // The marker goes first, so a run killed at any later point is a resumable run directory.
  if (write_marker) write_json("run.json", {{"format", "attngeom-run-v1"}, {"settings", settings}});
  fs::create_directories(records_dir(), ec);
  if (ec) throw out_error(path, "cannot create: " + ec.message());
  remove_temporaries(records_dir());
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
