#include "analysis/merge.h"

#include <set>

#include "analysis/length_sweep.h"
#include "analysis/pipeline.h"
#include "analysis/record.h"
#include "analysis/run_dir.h"
#include "analysis/run_readback.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace attngeom {

namespace fs = std::filesystem;

namespace {

struct ShardOf {
  int index = 0;
  int count = 1;
};

// settings.shard [i, n] and model.kv_heads of a shard's run.json, checked (it may be hand-edited).
ShardOf shard_of(const nlohmann::json& run, const fs::path& dir) {
  const auto settings = run.find("settings");
  const auto model = run.find("model");
  const nlohmann::json* shard =
      settings != run.end() && settings->is_object() && settings->contains("shard") ? &(*settings)["shard"] : nullptr;
  const auto small_int = [](const nlohmann::json& v) {
    return v.is_number_integer() && v.get<std::int64_t>() >= 0 && v.get<std::int64_t>() < (1 << 30);
  };
  if (shard == nullptr || !shard->is_array() || shard->size() != 2 || !small_int((*shard)[0]) ||
      !small_int((*shard)[1]) || (*shard)[0].get<int>() >= (*shard)[1].get<int>() || model == run.end() ||
      !model->is_object() || !model->contains("kv_heads") || !small_int((*model)["kv_heads"]) ||
      (*model)["kv_heads"].get<int>() < 1 || !model->contains("heads") || !small_int((*model)["heads"]) ||
      (*model)["heads"].get<int>() % (*model)["kv_heads"].get<int>() != 0) {
    throw InputError(
        (dir / "run.json").string() +
        ": malformed run.json (expected settings.shard [i, n], model.heads and model.kv_heads dividing it)");
  }
  return {(*shard)[0].get<int>(), (*shard)[1].get<int>()};
}

// A complete shard i of n holds exactly the records of sequences k < total with k mod n = i,
// where total is the run's sequence count (corpus.sequences lists every shard's).
std::vector<fs::path> shard_records(const nlohmann::json& run, const fs::path& dir, const ShardOf& shard) {
  const auto corpus = run.find("corpus");
  if (corpus == run.end() || !corpus->is_object() || !corpus->contains("sequences") ||
      !(*corpus)["sequences"].is_array()) {
    throw InputError((dir / "run.json").string() + ": malformed run.json (expected corpus.sequences)");
  }
  const std::size_t total = (*corpus)["sequences"].size();
  std::vector<fs::path> records = list_records(dir / "records");
  std::set<fs::path> expected;
  for (std::size_t k = static_cast<std::size_t>(shard.index); k < total; k += static_cast<std::size_t>(shard.count)) {
    expected.insert(record_path(dir / "records", k));
  }
  for (const fs::path& record : records) {
    if (expected.erase(record) == 0) {
      throw InputError(record.string() + ": does not belong to shard " + std::to_string(shard.index) + "/" +
                       std::to_string(shard.count) + " of " + std::to_string(total) + " sequences");
    }
  }
  if (!expected.empty()) {
    throw InputError(expected.begin()->string() + ": missing, though " + (dir / "run.json").string() +
                     " says the shard is complete");
  }
  return records;
}

// One run directory from its shards; returns the merged run.json.
nlohmann::json merge_one(const std::vector<fs::path>& shards, const fs::path& out, bool per_sequence) {
  if (shards.empty()) throw InputError("merge: no shard directories given");
  nlohmann::json merged;
  nlohmann::json common;  // settings without the shard
  std::set<int> seen;
  int count = 0;
  std::vector<fs::path> records;  // listed and checked before anything is created
  for (const fs::path& dir : shards) {
    if (!is_run_dir(dir)) throw InputError(dir.string() + ": not an attngeom run directory");
    nlohmann::json run = read_run_json(dir);
    const auto complete = run.find("complete");
    if (complete == run.end() || *complete != true) {
      throw SettingError(
          {dir.string() + ": shard is not complete (finish it with analyze ", setting("resume"), " first)"});
    }
    if (run.value("queries", nlohmann::json()) == "from dumps") {
      throw SettingError(
          {dir.string() + ": is a metrics run (from capture dumps), not a shard; merge combines the runs of "
                          "analyze ",
           setting("shard"), " i/n (metrics takes several ", setting("dump"), " files at once instead)"});
    }
    const ShardOf shard = shard_of(run, dir);
    const int index = shard.index;
    const int n = shard.count;
    nlohmann::json settings = run["settings"];
    settings.erase("shard");
    if (merged.is_null()) {
      merged = run;
      common = settings;
      count = n;
    } else if (settings != common || n != count ||
               run.value("options", nlohmann::json()) != merged.value("options", nlohmann::json())) {
      throw InputError(dir.string() + ": settings or options differ from " + shards.front().string() +
                       " (not shards of one run)");
    }
    if (!seen.insert(index).second)
      throw InputError(dir.string() + ": shard " + std::to_string(index) + " given twice");
    for (fs::path& record : shard_records(run, dir, shard)) records.push_back(std::move(record));
  }
  if (static_cast<int>(seen.size()) != count) {
    throw InputError("merge: " + std::to_string(seen.size()) + " of " + std::to_string(count) + " shards given");
  }
  // The shards' own aggregation options (stats seed, bootstrap, taxonomy thresholds).
  const AggregateOptions options = aggregate_options_of_run(merged, shards.front());
  common["shard"] = {0, 1};
  const RunDir run_dir(out, common, RunDirMode::kCreate);
  for (const fs::path& record : records) copy_file_atomic(record, run_dir.records_dir() / record.filename());
  const int kv_heads = merged.at("model").at("kv_heads").get<int>();
  merged["taxonomy"] = taxonomy_json(finish_run_dir(out, kv_heads, options, per_sequence));
  merged["settings"] = common;
  merged["shard"] = {{"index", 0}, {"count", 1}};
  merged["merged_from"] = nlohmann::json::array();
  for (const fs::path& dir : shards) merged["merged_from"].push_back(fs::absolute(dir).string());
  merged["sequences_done"] = records.size();
  // A label the shards were given (--label) stays; their default, the shard folder's name, becomes out's.
  if (merged.value("label", "") == default_run_label(shards.front())) {
    merged["label"] = default_run_label(out);
  }
  run_dir.write_json("run.json", merged);
  return merged;
}

}  // namespace

void merge_runs(const std::vector<fs::path>& shards, const fs::path& out, bool per_sequence,
                const std::function<void(const fs::path&)>& finish) {
  check_run_dir(out, nlohmann::json::object(), RunDirMode::kCreate);
  std::error_code ec;
  const bool existed = fs::exists(out, ec);
  // `out` held nothing committed before this merge: a failure (e.g. a truncated record, or a
  // shard that is not one) leaves it as it was rather than a partial run.
  try {
    nlohmann::json merged = merge_one(shards, out, per_sequence);
    // A length sweep: each lengths/L folder is itself sharded; merged alike, then the sweep table.
    const nlohmann::json lengths = merged.value("lengths", nlohmann::json::array());
    if (lengths.is_array() && !lengths.empty()) {
      const int seq_len = merged.at("seq_len").get<int>();
      std::vector<std::pair<int, fs::path>> sweep = {{seq_len, out}};
      for (const nlohmann::json& length : lengths) {
        if (!length.is_number_integer()) throw InputError("merge: run.json 'lengths' must hold integers");
        const int l = length.get<int>();
        if (l == seq_len) continue;
        std::vector<fs::path> parts;
        for (const fs::path& dir : shards) parts.push_back(dir / "lengths" / std::to_string(l));
        merge_one(parts, out / "lengths" / std::to_string(l), per_sequence);
        sweep.push_back({l, out / "lengths" / std::to_string(l)});
      }
      write_length_sweep(out, aggregate_options_of_run(merged, shards.front()), sweep,
                         merged.at("model").at("kv_heads").get<int>());
    }
    finish(out);
  } catch (...) {
    if (existed) {
      for (const auto& entry : fs::directory_iterator(out, ec)) fs::remove_all(entry.path(), ec);
    } else {
      fs::remove_all(out, ec);
    }
    throw;
  }
}

}  // namespace attngeom
