#include "report/run_data.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include "report/run_checks.h"
#include "util/error.h"
#include "util/json_parse.h"

namespace attngeom::report {

namespace fs = std::filesystem;

namespace {

constexpr const char* kRunFormat = "attngeom-run-v1";

// A JSON file of the run; `hint` follows the path when it cannot be read.
nlohmann::json read_json_file(const fs::path& path, const std::string& hint) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": missing or unreadable" + hint);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    return parse_json(text, path.string());
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(path.string() + ": invalid JSON: " + e.what());
  }
}

nlohmann::json read_run_json(const fs::path& path) {
  const nlohmann::json j = read_json_file(path, " (is this a run directory?)");
  if (!j.is_object()) throw InputError(path.string() + ": expected a JSON object");
  const auto format = j.find("format");
  if (format == j.end() || !format->is_string() || format->get<std::string>() != kRunFormat) {
    throw InputError(path.string() + ": 'format' must be \"" + std::string(kRunFormat) + "\"");
  }
  return j;
}

// The perplexity protocol behind pruning.csv / topn_budget.csv (docs/method.md section 7 asks for it
// beside the numbers): prune.json's "protocol" and "reference"; null without prune.json.
nlohmann::json read_prune_protocol(const fs::path& path) {
  if (!fs::exists(path)) return nullptr;
  const nlohmann::json j = read_json_file(path, "");
  const auto protocol = j.is_object() ? j.find("protocol") : j.end();
  const auto reference = j.is_object() ? j.find("reference") : j.end();
  if (protocol == j.end() || !protocol->is_object() || reference == j.end() || !reference->is_object()) {
    throw InputError(path.string() + ": expected an object with 'protocol' and 'reference' (attngeom prune's output)");
  }
  return {{"protocol", *protocol}, {"reference", *reference}};
}

CsvTable read_required(const fs::path& path, const std::vector<std::string>& columns) {
  CsvTable t = CsvTable::read(path);
  t.require_columns(columns);
  if (t.rows() == 0) throw InputError(path.string() + ": no data rows");
  return t;
}

std::optional<CsvTable> read_optional(const fs::path& path, const std::vector<std::string>& columns) {
  if (!fs::exists(path)) return std::nullopt;
  return read_required(path, columns);
}

// Columns the report reads; everything else in the file is ignored.
const std::vector<std::string> kHeadColumns = {"layer",
                                               "head",
                                               "kv_head",
                                               "label",
                                               "kmeans_label",
                                               "sink_mass",
                                               "last_mass",
                                               "entropy",
                                               "rho0",
                                               "cv",
                                               "lambda",
                                               "beta",
                                               "beta_mae",
                                               "f_small",
                                               "peak_f_n",
                                               "cos_sink_small",
                                               "cos_sink_large",
                                               "cos_last_small",
                                               "cos_last_large",
                                               "flag_negative_margin",
                                               "flag_flat_precision",
                                               "flag_no_sink"};
const std::vector<std::string> kSelectionColumns = {"layer",
                                                    "head",
                                                    "n",
                                                    "precision_mean",
                                                    "recall_mean",
                                                    "f_mean",
                                                    "margin_mean",
                                                    "separated",
                                                    "r1_precision_lo",
                                                    "r1_precision_hi",
                                                    "r1_recall_lo",
                                                    "r1_recall_hi",
                                                    "r1_f_lo",
                                                    "r1_f_hi",
                                                    "r1_inside",
                                                    "r2_separation_prob",
                                                    "r3_certified"};
const std::vector<std::string> kSinkRecallColumns = {"n",          "heads",    "pearson",     "pearson_lo",
                                                     "pearson_hi", "spearman", "spearman_lo", "spearman_hi"};
const std::vector<std::string> kLayerColumns = {"layer",       "heads",       "retriever_share",
                                                "mixer_share", "reset_share", "unclassified_share"};
const std::vector<std::string> kProfileColumns = {"layer", "position", "mean_alpha", "fitted"};
const std::vector<std::string> kLengthSweepColumns = {"seq_len",     "n",      "precision_mean",
                                                      "recall_mean", "f_mean", "separated_mean"};
const std::vector<std::string> kPruningColumns = {"strategy", "seed", "fraction", "ppl", "kl", "top1"};
const std::vector<std::string> kTopnBudgetColumns = {"policy", "budget", "kept_share", "ppl", "kl", "top1"};
const std::vector<std::string> kExpertsColumns = {"layer", "expert", "tokens", "share"};
const std::vector<std::string> kRoutingColumns = {"layer", "tokens", "routing_flips"};
const std::vector<std::string> kCompareColumns = {"file",        "format",     "ours",           "their_set",
                                                  "our_set",     "jaccard",    "precision_at_k", "spearman",
                                                  "spearman_lo", "spearman_hi"};

const std::vector<std::string> kLabels = {"retriever", "mixer", "reset", "unclassified"};

// Labels drive colours and shares: anything else is a corrupt file.
void check_labels(const CsvTable& heads) {
  for (const char* column : {"label", "kmeans_label"}) {
    const std::size_t c = heads.column(column);
    for (std::size_t i = 0; i < heads.rows(); ++i) {
      if (std::find(kLabels.begin(), kLabels.end(), heads.text(i, c)) == kLabels.end()) {
        throw InputError(heads.path().string() + ":" + std::to_string(heads.line_of(i)) + ": column '" + column +
                         "': unknown label '" + heads.text(i, c) +
                         "' (expected retriever, mixer, reset or unclassified)");
      }
    }
  }
}

}  // namespace

RunData load_run(const fs::path& dir) {
  if (!fs::is_directory(dir)) throw InputError(dir.string() + ": not a directory (expected a run directory)");
  RunData r{.dir = dir,
            .label = {},
            .run = read_run_json(dir / "run.json"),
            .heads = read_required(dir / "heads.csv", kHeadColumns),
            .selection = read_required(dir / "selection.csv", kSelectionColumns),
            .sink_recall = read_required(dir / "sink_recall.csv", kSinkRecallColumns),
            .layers = read_required(dir / "layers.csv", kLayerColumns),
            .profile_layers = read_required(dir / "profile_layers.csv", kProfileColumns),
            .length_sweep = read_optional(dir / "length_sweep.csv", kLengthSweepColumns),
            .pruning = read_optional(dir / "pruning.csv", kPruningColumns),
            .topn_budget = read_optional(dir / "topn_budget.csv", kTopnBudgetColumns),
            .compare = read_optional(dir / "compare.csv", kCompareColumns),
            .experts = read_optional(dir / "experts.csv", kExpertsColumns),
            .routing = read_optional(dir / "routing.csv", kRoutingColumns),
            .prune_protocol = read_prune_protocol(dir / "prune.json"),
            .synth = {}};
  check_labels(r.heads);
  check_run_tables(r);
  const auto label = r.run.find("label");
  if (label != r.run.end() && label->is_string() && !label->get<std::string>().empty()) {
    r.label = label->get<std::string>();
  } else {
    r.label = fs::absolute(dir).lexically_normal().filename().string();
    if (r.label.empty()) r.label = fs::absolute(dir).lexically_normal().parent_path().filename().string();
  }
  const fs::path synth = dir / "synth";
  if (fs::is_directory(synth)) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(synth)) {
      if (e.is_regular_file() && e.path().extension() == ".csv") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) r.synth.push_back({f.filename().string(), CsvTable::read(f)});
  }
  return r;
}

std::vector<RunData> load_runs(const std::vector<fs::path>& dirs) {
  if (dirs.empty()) throw InputError("report: at least one run directory is required");
  std::vector<RunData> runs;
  std::set<std::string> taken;
  for (const auto& d : dirs) {
    runs.push_back(load_run(d));
    std::string& label = runs.back().label;
    // The first free " (k)": a run may already be labelled "run (2)".
    const std::string base = label;
    for (int k = 2; !taken.insert(label).second; ++k) label = base + " (" + std::to_string(k) + ")";
  }
  return runs;
}

}  // namespace attngeom::report
