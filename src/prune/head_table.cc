#include "prune/head_table.h"

#include <cmath>
#include <limits>

#include "analysis/run_dir.h"
#include "util/csv.h"
#include "util/error.h"

namespace attngeom::prune {

namespace fs = std::filesystem;

std::string HeadGrid::name(std::size_t index) const {
  const auto h = static_cast<std::size_t>(heads);
  return std::to_string(index / h) + "-" + std::to_string(index % h);
}

namespace {

int positive_model_field(const nlohmann::json& run, const char* field, const fs::path& path) {
  const auto model = run.find("model");
  if (model == run.end() || !model->is_object() || !model->contains(field) || !(*model)[field].is_number_integer() ||
      (*model)[field].get<int>() < 1) {
    throw InputError(path.string() + ": model." + field + " must be a positive integer");
  }
  return (*model)[field].get<int>();
}

}  // namespace

HeadTable read_head_table(const fs::path& run_dir) {
  const nlohmann::json run = read_run_json(run_dir);
  HeadTable t;
  t.grid.layers = positive_model_field(run, "layers", run_dir / "run.json");
  t.grid.heads = positive_model_field(run, "heads", run_dir / "run.json");
  const auto n = static_cast<std::size_t>(t.grid.count());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (auto* v : {&t.entropy, &t.sink_mass, &t.last_mass, &t.f_small, &t.peak_f_n}) v->assign(n, nan);
  t.label.assign(n, "");

  const CsvTable csv = CsvTable::read(run_dir / "heads.csv");
  csv.require_columns({"layer", "head", "entropy", "sink_mass", "last_mass", "f_small", "peak_f_n", "label"});
  const std::size_t layer_col = csv.column("layer"), head_col = csv.column("head"), label_col = csv.column("label");
  const std::pair<const char*, std::vector<double>*> numeric[] = {{"entropy", &t.entropy},
                                                                  {"sink_mass", &t.sink_mass},
                                                                  {"last_mass", &t.last_mass},
                                                                  {"f_small", &t.f_small},
                                                                  {"peak_f_n", &t.peak_f_n}};
  std::vector<bool> seen(n, false);
  for (std::size_t r = 0; r < csv.rows(); ++r) {
    const long layer = csv.integer(r, layer_col), head = csv.integer(r, head_col);
    const std::string where = csv.path().string() + ":" + std::to_string(r + 2) + ": ";
    if (layer < 0 || layer >= t.grid.layers || head < 0 || head >= t.grid.heads) {
      throw InputError(where + "head " + std::to_string(layer) + "-" + std::to_string(head) + " outside the run's " +
                       std::to_string(t.grid.layers) + " x " + std::to_string(t.grid.heads) + " heads");
    }
    const std::size_t i = t.grid.index(static_cast<int>(layer), static_cast<int>(head));
    if (seen[i]) throw InputError(where + "head " + t.grid.name(i) + " appears twice");
    seen[i] = true;
    for (const auto& [name, values] : numeric) (*values)[i] = csv.number(r, csv.column(name));
    t.label[i] = csv.text(r, label_col);
    if (t.label[i] != "retriever" && t.label[i] != "mixer" && t.label[i] != "reset" && t.label[i] != "unclassified") {
      throw InputError(where + "unknown label '" + t.label[i] + "' (expected retriever, mixer, reset or unclassified)");
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!seen[i]) throw InputError(csv.path().string() + ": no row for head " + t.grid.name(i));
  }
  return t;
}

}  // namespace attngeom::prune
