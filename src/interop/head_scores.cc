#include "interop/head_scores.h"

#include <algorithm>
#include <cmath>

#include "analysis/record.h"
#include "analysis/run_dir.h"
#include "util/error.h"

namespace attngeom::interop {

namespace fs = std::filesystem;

const std::vector<std::string>& score_names() {
  static const std::vector<std::string> names = {"f_small", "sink_mass", "last_mass", "entropy"};
  return names;
}

const std::vector<std::string>& type_names() {
  static const std::vector<std::string> names = {"retriever", "mixer", "reset"};
  return names;
}

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The mean of the finite values; NaN when there are none.
double finite_mean(const std::vector<double>& values) {
  double sum = 0;
  std::size_t count = 0;
  for (const double v : values) {
    if (std::isfinite(v)) sum += v, ++count;
  }
  return count ? sum / static_cast<double>(count) : NAN;
}

}  // namespace

const std::vector<double>& RunHeads::score(const std::string& name) const {
  if (name == "f_small") return table.f_small;
  if (name == "sink_mass") return table.sink_mass;
  if (name == "last_mass") return table.last_mass;
  if (name == "entropy") return table.entropy;
  throw SettingError({"unknown ", setting("score"), " '" + name + "' (expected " + joined(score_names()) + ")"});
}

std::vector<double> RunHeads::type_indicator(const std::string& type) const {
  if (std::find(type_names().begin(), type_names().end(), type) == type_names().end()) {
    throw SettingError({"unknown ", setting("type"), " '" + type + "' (expected " + joined(type_names()) + ")"});
  }
  std::vector<double> out(table.label.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = table.label[i] == type ? 1.0 : 0.0;
  return out;
}

std::vector<std::vector<double>> RunHeads::per_sequence(const std::string& name) const {
  (void)score(name);  // validates the name
  std::vector<std::vector<double>> out;
  const fs::path records = run_dir / "records";
  if (!fs::is_directory(records)) return out;
  const auto& grid = table.grid;
  for (const fs::path& path : list_records(records)) {
    const RecordReader record(path);
    if (record.layers() != grid.layers || record.heads() != grid.heads) {
      throw InputError(path.string() + ": record of " + std::to_string(record.layers()) + " x " +
                       std::to_string(record.heads()) + " heads in a run of " + std::to_string(grid.layers) + " x " +
                       std::to_string(grid.heads));
    }
    const RecordSchema& schema = record.schema();
    std::vector<double> scores(static_cast<std::size_t>(grid.count()));
    for (int l = 0; l < grid.layers; ++l) {
      for (int h = 0; h < grid.heads; ++h) {
        std::vector<double> values;
        if (name == "f_small") {
          // heads.csv's f_small: F over the grid's N = 2..4, here over this sequence's rows only.
          const std::span<const double> per_n = record.per_n(l, h);  // [Q, G, Kn]
          const std::size_t g_count = schema.n_grid.size(), kn = schema.per_n_fields.size(),
                            f = schema.per_n_index("f");
          for (std::size_t q = 0; q < record.rows(); ++q) {
            for (std::size_t g = 0; g < g_count; ++g) {
              if (schema.n_grid[g] >= 2 && schema.n_grid[g] <= 4) values.push_back(per_n[(q * g_count + g) * kn + f]);
            }
          }
        } else {
          const std::span<const double> per_row = record.per_row(l, h);  // [Q, Kr]
          const std::size_t kr = schema.per_row_fields.size(), field = schema.per_row_index(name);
          for (std::size_t q = 0; q < record.rows(); ++q) values.push_back(per_row[q * kr + field]);
        }
        scores[grid.index(l, h)] = finite_mean(values);
      }
    }
    out.push_back(std::move(scores));
  }
  return out;
}

RunHeads read_run_heads(const fs::path& run_dir) {
  RunHeads run;
  run.run_dir = run_dir;
  run.table = prune::read_head_table(run_dir);
  const nlohmann::json j = read_run_json(run_dir);
  const auto& model = j.at("model");
  const int heads = run.table.grid.heads;
  const auto kv = model.find("kv_heads");
  if (kv == model.end() || !kv->is_number_integer() || kv->get<int>() < 1 || heads % kv->get<int>() != 0) {
    throw InputError((run_dir / "run.json").string() + ": model.kv_heads must be a positive divisor of model.heads (" +
                     std::to_string(heads) + ")");
  }
  run.kv_heads = kv->get<int>();
  return run;
}

}  // namespace attngeom::interop
