#include "analysis/merge.h"

#include <set>

#include "analysis/pipeline.h"
#include "analysis/record.h"
#include "analysis/run_dir.h"
#include "util/error.h"

namespace attngeom {

namespace fs = std::filesystem;

void merge_runs(const std::vector<fs::path>& shards, const fs::path& out, const AggregateOptions& options,
                bool per_sequence) {
  if (shards.empty()) throw InputError("merge: no shard directories given");
  nlohmann::json merged;
  nlohmann::json common;  // settings without the shard
  std::set<int> seen;
  int count = 0;
  for (const fs::path& dir : shards) {
    nlohmann::json run = read_run_json(dir);
    if (run.value("format", "") != "attngeom-run-v1") throw InputError(dir.string() + ": not an attngeom run directory");
    if (!run.value("complete", false)) {
      throw InputError(dir.string() + ": shard is not complete (finish it with analyze --resume first)");
    }
    nlohmann::json settings = run.at("settings");
    const int index = settings.at("shard")[0].get<int>();
    const int n = settings.at("shard")[1].get<int>();
    settings.erase("shard");
    if (merged.is_null()) {
      merged = run;
      common = settings;
      count = n;
    } else if (settings != common || n != count) {
      throw InputError(dir.string() + ": settings differ from " + shards.front().string() + " (not shards of one run)");
    }
    if (!seen.insert(index).second) throw InputError(dir.string() + ": shard " + std::to_string(index) + " given twice");
  }
  if (static_cast<int>(seen.size()) != count) {
    throw InputError("merge: " + std::to_string(seen.size()) + " of " + std::to_string(count) + " shards given");
  }
  common["shard"] = {0, 1};
  const RunDir run_dir(out, common, RunDirMode::kCreate);
  std::size_t sequences = 0;
  for (const fs::path& dir : shards) {
    for (const auto& entry : fs::directory_iterator(dir / "records")) {
      const std::string name = entry.path().filename().string();
      if (name.size() != 22 || name.rfind("seq-", 0) != 0) continue;
      fs::copy_file(entry.path(), run_dir.records_dir() / name);
      ++sequences;
    }
  }
  finish_run_dir(out, merged.at("model").at("kv_heads").get<int>(), options, per_sequence);
  merged["settings"] = common;
  merged["shard"] = {{"index", 0}, {"count", 1}};
  merged["merged_from"] = nlohmann::json::array();
  for (const fs::path& dir : shards) merged["merged_from"].push_back(fs::absolute(dir).string());
  merged["sequences_done"] = sequences;
  merged["label"] = fs::absolute(out).filename().string();
  run_dir.write_json("run.json", merged);
  write_run_report(out);
}

}  // namespace attngeom
