// Per-run key numbers and the provenance table (parts of report_data.h).
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "report/report_data.h"

namespace attngeom::report {

namespace {

using nlohmann::json;

constexpr const char* kMissing = "\xe2\x80\x94";  // em dash

// The value at a '/'-separated path, or nullptr when any step is absent.
const json* find_path(const json& j, const std::string& path) {
  const json* cur = &j;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t slash = path.find('/', start);
    const std::string key = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (!cur->is_object()) return nullptr;
    const auto it = cur->find(key);
    if (it == cur->end()) return nullptr;
    cur = &*it;
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return cur;
}

std::string show(const json* v) {
  if (v == nullptr) return kMissing;
  if (v->is_string()) return v->get<std::string>();
  if (v->is_null()) return "none";
  if (v->is_boolean()) return v->get<bool>() ? "yes" : "no";
  if (v->is_array()) {
    std::string out;
    for (const auto& e : *v) out += (out.empty() ? "" : ", ") + show(&e);
    return out.empty() ? kMissing : out;
  }
  return v->dump();
}

std::string show(const json& run, const std::string& path) { return show(find_path(run, path)); }

// An object as "key: value" pairs, nested keys joined by '.', e.g. "bootstrap: 1000; row.topk: 5".
std::string key_values(const json& object, const std::string& prefix = "") {
  std::string out;
  for (const auto& [key, value] : object.items()) {
    const std::string text =
        value.is_object() ? key_values(value, prefix + key + ".") : prefix + key + ": " + show(&value);
    if (!text.empty()) out += (out.empty() ? "" : "; ") + text;
  }
  return out;
}

std::string gib(const json* bytes) {
  if (bytes == nullptr || !bytes->is_number()) return kMissing;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes->get<double>() / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

// "a (b)" from two fields, dropping what is missing.
std::string joined(const json& run, const std::string& a, const std::string& b) {
  const std::string first = show(run, a), second = show(run, b);
  if (second == kMissing) return first;
  return first + " (" + second + ")";
}

json json_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// Why corr(rho0, R) has no value at any N: a correlation across heads needs both to vary.
std::string correlation_undefined_reason(const CsvTable& heads) {
  const std::size_t rho0 = heads.column("rho0");
  std::set<double> values;
  for (std::size_t i = 0; i < heads.rows(); ++i) {
    if (std::isfinite(heads.number(i, rho0))) values.insert(heads.number(i, rho0));
  }
  if (heads.rows() < 3) return "undefined: fewer than 3 heads";
  if (values.empty()) return "undefined: \xcf\x81\xe2\x82\x80 is undefined for every head";
  if (values.size() == 1) return "undefined: \xcf\x81\xe2\x82\x80 is constant across heads";
  return "undefined: Recall is constant across heads at every N";
}

}  // namespace

json provenance_rows(const RunData& run) {
  const json& r = run.run;
  json rows = json::array();
  auto add = [&rows](const std::string& field, const std::string& value) { rows.push_back({field, value}); };
  add("Label", run.label);
  add("Run directory", std::filesystem::absolute(run.dir).lexically_normal().string());
  add("Created", show(r, "created"));
  add("attngeom", joined(r, "attngeom/version", "attngeom/git_commit"));
  add("Machine", show(r, "machine/hostname") + ": " + show(r, "machine/cpu_model") + ", " +
                     show(r, "machine/logical_cores") + " logical cores, " + gib(find_path(r, "machine/memory_bytes")) +
                     ", AMX " + show(r, "machine/has_amx") + ", fast bf16 matmul " +
                     show(r, "machine/fast_bf16_matmul"));
  add("Model", show(r, "model/dir"));
  add("Architecture", show(r, "model/model_type") + ": " + show(r, "model/layers") + " layers, " +
                          show(r, "model/heads") + " heads, " + show(r, "model/kv_heads") + " kv heads, head_dim " +
                          show(r, "model/head_dim") + ", hidden " + show(r, "model/hidden") + ", vocab " +
                          show(r, "model/vocab") + ", sliding window " + show(r, "model/sliding_window"));
  add("Weights dtype", show(r, "model/weights_dtype"));
  add("config.json sha256", show(r, "model/config_sha256"));
  if (const json* w = find_path(r, "model/weight_headers"); w != nullptr && w->is_array()) {
    for (const auto& e : *w) add("Weight header sha256", show(e, "file") + ": " + show(e, "header_sha256"));
  } else {
    add("Weight header sha256", kMissing);
  }
  add("Precision", show(r, "precision"));
  add("Tokenizer", show(r, "tokenizer/file") + ", sha256 " + show(r, "tokenizer/sha256") + ", BOS " +
                       show(r, "tokenizer/bos") + " (id " + show(r, "tokenizer/bos_token_id") + "), position 0 holds " +
                       show(r, "tokenizer/position0"));
  add("Sequence length", show(r, "seq_len"));
  if (find_path(r, "lengths") != nullptr) add("Length sweep", show(r, "lengths"));
  add("N grid", show(r, "n_grid"));
  add("Query rows", show(r, "queries"));
  add("Corpus selection", "format " + show(r, "corpus/format") + ", text field " + show(r, "corpus/text_field") +
                              ", pack " + show(r, "corpus/pack") + ", num_seqs " + show(r, "corpus/num_seqs") +
                              ", skip " + show(r, "corpus/skip") + ", seed " + show(r, "corpus/seed") +
                              ", candidates " + show(r, "corpus/candidates"));
  if (const json* f = find_path(r, "corpus/files"); f != nullptr && f->is_array()) {
    for (const auto& e : *f) {
      add("Corpus file", show(e, "path") + " (" + show(e, "compression") + ", " + show(e, "documents") +
                             " documents), sha256 " + show(e, "sha256"));
    }
  } else {
    add("Corpus file", kMissing);
  }
  if (const json* w = find_path(r, "corpus/warnings"); w != nullptr && w->is_array() && !w->empty()) {
    std::string text = std::to_string(w->size()) + ": ";
    for (std::size_t i = 0; i < w->size() && i < 3; ++i) text += (i ? "; " : "") + show(&(*w)[i]);
    if (w->size() > 3) text += "; ...";
    add("Corpus warnings", text);
  }
  const json* seqs = find_path(r, "corpus/sequences");
  const json* complete = find_path(r, "complete");
  add("Sequences", show(r, "sequences_done") + " done" +
                       (seqs != nullptr && seqs->is_array() ? ", " + std::to_string(seqs->size()) + " selected" : "") +
                       (complete != nullptr && *complete == true ? "" : " (run not complete: --resume finishes it)"));
  if (const json* s = find_path(r, "shard"); s != nullptr) {
    add("Shard", show(r, "shard/index") + " of " + show(r, "shard/count"));
  }
  const json* options = find_path(r, "options");
  add("Options", options == nullptr ? kMissing : options->is_object() ? key_values(*options) : show(options));
  return rows;
}

json run_summary(const RunData& run) {
  json out;
  // Heads, layers, type shares, flags: heads.csv.
  const CsvTable& h = run.heads;
  std::set<long> layers;
  std::map<std::string, double> shares = {{"retriever", 0}, {"mixer", 0}, {"reset", 0}, {"unclassified", 0}};
  std::map<std::string, long> flags = {{"flag_negative_margin", 0}, {"flag_flat_precision", 0}, {"flag_no_sink", 0}};
  const std::size_t layer = h.column("layer"), label = h.column("label"), f_small_col = h.column("f_small");
  long any_flag = 0;
  std::vector<double> f_small;
  for (std::size_t i = 0; i < h.rows(); ++i) {
    layers.insert(h.integer(i, layer));
    shares[h.text(i, label)] += 1.0 / static_cast<double>(h.rows());
    f_small.push_back(h.number(i, f_small_col));
    bool flagged = false;
    for (auto& [name, count] : flags) {
      if (h.integer(i, h.column(name)) != 0) {
        ++count;
        flagged = true;
      }
    }
    any_flag += flagged;
  }
  out["layers"] = layers.size();
  out["heads"] = h.rows();
  out["shares"] = shares;
  out["flags"] = flags;
  out["flagged_heads"] = any_flag;
  out["sequences"] = run.run.contains("sequences_done") ? run.run["sequences_done"] : json(nullptr);

  // Where the mean F over heads peaks (non-trivial N >= 2), and the envelope coverage.
  const json sel = selection_summary(run);
  double best_f = -1;
  json f_peak = nullptr;
  for (const auto& row : sel["rows"]) {
    const long n = row[1].get<long>();
    if (row[2] == "F" && n >= 2 && row[3].is_number() && row[3].get<double>() > best_f) {
      best_f = row[3].get<double>();
      f_peak = {{"n", n}, {"f", best_f}};
    }
  }
  out["f_peak"] = f_peak;
  const CsvTable& s = run.selection;
  const std::size_t n_col = s.column("n"), inside_col = s.column("r1_inside");
  std::vector<double> inside;
  for (std::size_t i = 0; i < s.rows(); ++i) {
    if (s.integer(i, n_col) >= 2) inside.push_back(s.number(i, inside_col));
  }
  out["r1_inside"] = json_or_null(finite_mean(inside).value_or(NAN));
  out["f_small"] = json_or_null(finite_mean(f_small).value_or(NAN));

  // Where corr(rho0, R) peaks, per method.
  const CsvTable& c = run.sink_recall;
  for (const std::string method : {"pearson", "spearman"}) {
    const std::size_t n = c.column("n"), r_col = c.column(method), lo = c.column(method + "_lo"),
                      hi = c.column(method + "_hi");
    json peak = nullptr;
    double best = -2;
    for (std::size_t i = 0; i < c.rows(); ++i) {
      const double r = c.number(i, r_col);
      if (std::isfinite(r) && r > best) {
        best = r;
        peak = {{"n", c.integer(i, n)},
                {"r", r},
                {"lo", json_or_null(c.number(i, lo))},
                {"hi", json_or_null(c.number(i, hi))}};
      }
    }
    out["corr_peak"][method] = peak;
  }
  out["corr_undefined"] = out["corr_peak"]["pearson"].is_null() && out["corr_peak"]["spearman"].is_null()
                              ? json(correlation_undefined_reason(h))
                              : json(nullptr);
  return out;
}

}  // namespace attngeom::report
