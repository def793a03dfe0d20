#include "prune/prune_run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>

#include "analysis/pipeline.h"
#include "analysis/provenance.h"
#include "analysis/run_dir.h"
#include "io/checkpoint.h"
#include "io/tokenizer.h"
#include "model/engine.h"
#include "prune/head_matrix.h"
#include "prune/held_out.h"
#include "util/atomic_file.h"
#include "util/csv.h"
#include "util/error.h"
#include "util/machine.h"
#include "util/npy.h"
#include "util/plural.h"

namespace attngeom::prune {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

// The held-out text as token streams, one per document, at most `max_tokens` in all.
std::vector<std::vector<int>> held_out_documents(const PruneSettings& s, const Tokenizer& tokenizer, Corpus& corpus,
                                                 const PruneMessages& messages) {
  corpus = read_corpus(s.data, s.corpus);
  for (const std::string& w : corpus_warning_lines(corpus)) messages.warn(w);
  std::vector<std::vector<int>> documents;
  std::size_t total = 0;
  for (const Document& d : corpus.documents) {
    if (s.max_tokens > 0 && total >= s.max_tokens) break;
    std::vector<int> ids = tokenizer.encode(d.text, corpus.files[d.file].path.string() + ":" + std::to_string(d.line));
    if (s.max_tokens > 0 && total + ids.size() > s.max_tokens) ids.resize(s.max_tokens - total);
    total += ids.size();
    if (!ids.empty()) documents.push_back(std::move(ids));
  }
  return documents;
}

std::vector<std::string> masked_names(std::span<const float> gates, const HeadGrid& grid) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < gates.size(); ++i) {
    if (gates[i] == 0.0f) names.push_back(grid.name(i));
  }
  return names;
}

json score_json(const HeldOutScore& r) {
  return {{"ppl", r.ppl}, {"mean_nll", r.mean_nll}, {"kl", r.kl}, {"top1", r.top1}};
}

void write_text(const fs::path& path, const std::string& text) {
  AtomicFile file(path);
  file.write_at(0, text.data(), text.size());
  file.commit();
}

// Evaluations keyed by their edits: equal masks (e.g. fraction 0 of every order) run once.
class CachedEvaluator {
 public:
  explicit CachedEvaluator(HeldOutEvaluator& evaluator) : evaluator_(evaluator) {}
  HeldOutScore operator()(const std::vector<float>& gates, const std::vector<int>& topn) {
    const auto key = std::make_pair(gates, topn);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    ++runs_;
    return cache_[key] = evaluator_.evaluate({gates, topn});
  }
  int runs() const { return runs_; }

 private:
  HeldOutEvaluator& evaluator_;
  std::map<std::pair<std::vector<float>, std::vector<int>>, HeldOutScore> cache_;
  int runs_ = 0;
};

std::string score_note(const std::string& what, const HeldOutScore& r) {
  char note[256];
  std::snprintf(note, sizeof note, "%-40s ppl %.6g  kl %.4g  top1 %.4f", what.c_str(), r.ppl, r.kl, r.top1);
  return note;
}

// BOS per window when --bos asks for it and the tokenizer has one.
PerplexityProtocol protocol_of(const PruneSettings& s, std::optional<int> bos_id) {
  return {s.context, s.stride, s.bos && bos_id.has_value(), bos_id.value_or(0)};
}

// The files and folders prune reads: the model, the mask, the held-out text.
std::vector<fs::path> prune_inputs(const PruneSettings& s) {
  std::vector<fs::path> inputs = {s.model_dir, s.mask_file};
  inputs.insert(inputs.end(), s.data.begin(), s.data.end());
  return inputs;
}

// The output directory is new, empty, the scores run or a previous prune output, and outside
// every input: prune never mixes its files into a foreign folder.
void check_out_dir(const PruneSettings& s) {
  const auto bad = [&](const SettingMessage& what) {
    return SettingError(SettingMessage{setting("out"), " " + s.out.string() + ": "} + what);
  };
  std::error_code ec;
  for (const fs::path& input : prune_inputs(s)) {
    if (!input.empty() && fs::exists(input, ec) && (lies_within(s.out, input) || lies_within(input, s.out))) {
      throw bad("overlaps the input " + input.string() + "; expected a directory of its own");
    }
  }
  const fs::file_status status = fs::symlink_status(s.out, ec);
  if (!fs::exists(status)) return;
  if (!fs::is_directory(status)) throw bad("exists and is not a directory");
  // Prune rewrites a run's report: only the scores run's, whose heads ranked the masks.
  if (is_run_dir(s.out) && (s.scores_dir.empty() || !fs::equivalent(s.out, s.scores_dir, ec))) {
    throw bad({"is an attngeom run other than ", setting("scores"), "; prune writes into a run only when it is the ",
               setting("scores"), " run (whose report is rewritten); expected that run, or a new or empty directory"});
  }
  if (!fs::is_empty(s.out, ec) && !is_run_dir(s.out) && !fs::exists(s.out / "prune.json", ec)) {
    throw bad(
        "is not empty and holds neither an attngeom run nor a previous prune output; expected a new or empty "
        "directory");
  }
}

void check_settings(const PruneSettings& s, const ModelConfig& c) {
  if (s.context < 2) throw SettingError({setting("context"), " must be at least 2"});
  if (s.context > c.max_positions && !s.force) {
    throw SettingError(
        {setting("context"),
         " " + std::to_string(s.context) + " exceeds max_position_embeddings " + std::to_string(c.max_positions) + " (",
         setting("force"), " allows it)"});
  }
  check_stride(protocol_of(s, c.bos_token_id));
  for (const double f : s.fractions) {
    if (!(f >= 0 && f <= 1)) throw SettingError({setting("fractions"), ": each fraction must lie in [0, 1]"});
  }
  for (const int b : s.topn_budgets) {
    if (b < 1 || b > s.context) {
      throw SettingError({setting("topn_budgets"), ": each budget (mean keys kept per head and query) must lie in [1, ",
                          setting("context"), " " + std::to_string(s.context) + "]"});
    }
  }
  if (s.scores_dir.empty() && (!s.strategies.empty() || !s.topn_budgets.empty())) {
    throw SettingError(
        {setting("scores"), " RUN_DIR is required for ", setting("strategies"), " and ", setting("topn_budgets")});
  }
  if (s.scores_dir.empty() && s.mask_file.empty()) {
    throw SettingError({"nothing to evaluate: give ", setting("scores"), " or ", setting("mask")});
  }
  if (s.out.empty() && s.scores_dir.empty())
    throw SettingError({setting("out"), " is required without ", setting("scores")});
  // Checked before any forward pass: the logits are written after the model has run.
  if (!s.dump_logits.empty()) {
    std::vector<fs::path> inputs = prune_inputs(s);
    if (!s.scores_dir.empty()) inputs.push_back(s.scores_dir / "heads.csv");
    check_output_path(s.dump_logits, {setting("dump_logits"), " ", s.dump_logits.string()}, "an .npy file path",
                      inputs);
  }
  if (!s.out.empty()) check_out_dir(s);
}

// The protocol's first window of the first document, every position's logits
// [tokens, vocab] under `gates`, as .npy (for cross-checks with other implementations).
void dump_first_window_logits(Transformer& model, const std::vector<int>& document, const PruneSettings& s,
                              const PerplexityProtocol& protocol, const std::vector<float>& gates) {
  const ModelConfig& c = model.config();
  std::vector<int> tokens;
  if (protocol.bos) tokens.push_back(protocol.bos_token_id);
  const auto content = std::min(protocol.content(), document.size());
  tokens.insert(tokens.end(), document.begin(), document.begin() + static_cast<long>(content));
  ForwardRequest request;
  request.head_gates = gates;
  for (std::size_t i = 0; i < tokens.size(); ++i) request.logit_rows.push_back(static_cast<int>(i));
  std::vector<float> logits;
  model.forward(tokens, request, nullptr, &logits);
  write_npy(s.dump_logits, std::span<const float>(logits), {static_cast<std::int64_t>(tokens.size()), c.vocab});
}

struct Curve {
  CsvWriter table;
  json rows = json::array();
  std::vector<std::pair<std::string, std::vector<double>>> head_scores;  // (file name, [layers * heads])
};

// Head masking: one row per (strategy, seed, fraction), then the --mask file's row, and
// each order's importance.
Curve pruning_curves(const PruneSettings& s, const HeadTable* table, const std::vector<float>& mask,
                     const HeadGrid& grid, CachedEvaluator& evaluate, const PruneMessages& messages) {
  Curve curve{CsvWriter({"strategy", "seed", "fraction", "heads_masked", "ppl", "kl", "top1"}), json::array(), {}};
  const auto add_row = [&](const std::string& strategy, std::uint64_t seed, double fraction,
                           const std::vector<float>& gates) {
    const HeldOutScore r = evaluate(gates, {});
    const std::vector<std::string> masked = masked_names(gates, grid);
    curve.table.add(strategy).add(static_cast<std::size_t>(seed)).add(fraction).add(masked.size());
    curve.table.add(r.ppl).add(r.kl).add(r.top1).end_row();
    json row = {{"strategy", strategy}, {"seed", seed}, {"fraction", fraction}, {"heads_masked", masked.size()}};
    row.update(score_json(r));
    row["masked"] = masked;
    curve.rows.push_back(std::move(row));
    char what[160];
    std::snprintf(what, sizeof what, "%s seed %llu fraction %g (%s)", strategy.c_str(),
                  static_cast<unsigned long long>(seed), fraction, count_of(masked.size(), "head").c_str());
    messages.note(score_note(what, r));
  };
  for (const Strategy& strategy : s.strategies) {
    std::vector<std::uint64_t> seeds = {0};
    if (strategy.seeded()) {
      seeds.clear();
      for (int i = 0; i < s.seeds; ++i) seeds.push_back(s.seed + static_cast<std::uint64_t>(i));
    }
    for (const std::uint64_t seed : seeds) {
      const std::vector<double> score = importance(strategy, *table, s.type_order, seed);
      const std::string file = strategy.seeded() ? strategy.name() + "-seed" + std::to_string(seed) : strategy.name();
      const std::vector<int> order = masking_order(score);
      curve.head_scores.emplace_back(file, score);
      for (const double fraction : s.fractions) {
        add_row(strategy.name(), seed, fraction,
                gates_masking_first(order, heads_for_fraction(fraction, grid.count())));
      }
    }
  }
  if (!mask.empty()) {
    const auto zeros = static_cast<double>(std::count(mask.begin(), mask.end(), 0.0f));
    add_row("mask", 0, zeros / grid.count(), mask);
  }
  return curve;
}

// Token-level top-N: geometric vs uniform N per head at equal kept (query, key) pairs, per budget.
Curve topn_curve(const PruneSettings& s, const std::vector<double>& base, const HeadGrid& grid,
                 CachedEvaluator& evaluate, const HeldOutEvaluator& evaluator, int sliding_window,
                 const PruneMessages& messages) {
  Curve curve{CsvWriter({"policy", "budget", "mean_n", "kept_share", "ppl", "kl", "top1"}), json::array(), {}};
  const KeptKeys kept_keys(evaluator.window_lengths(), sliding_window);
  for (const int b : s.topn_budgets) {
    const std::vector<int> geometric = allocate_topn(base, b, kept_keys);
    const std::vector<int> uniform(static_cast<std::size_t>(grid.count()), b);
    json entry = {{"budget", b}};
    for (const auto& [policy, n] : {std::pair{"geometric", &geometric}, std::pair{"uniform", &uniform}}) {
      const HeldOutScore r = evaluate({}, *n);
      const double mean_n = std::accumulate(n->begin(), n->end(), 0.0) / grid.count();
      const double kept = kept_keys.share(*n);
      curve.table.add(std::string(policy)).add(b).add(mean_n).add(kept).add(r.ppl).add(r.kl).add(r.top1).end_row();
      json p = {{"mean_n", mean_n}, {"kept_share", kept}};
      p.update(score_json(r));
      p["n"] = *n;
      entry[policy] = std::move(p);
      messages.note(score_note(std::string("top-N ") + policy + " budget " + std::to_string(b), r));
    }
    curve.rows.push_back(std::move(entry));
  }
  return curve;
}

void make_directory(const fs::path& dir, const SettingMessage& subject) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw SettingError(subject + SettingMessage(dir.string() + ": cannot create the directory"));
}

}  // namespace

fs::path run_prune(const PruneSettings& s, const PruneMessages& messages) {
  const Checkpoint checkpoint(s.model_dir);
  const ModelConfig& c = checkpoint.config();
  check_settings(s, c);
  const HeadGrid grid{c.layers, c.heads};
  const fs::path out = s.out.empty() ? s.scores_dir : s.out;

  // Inputs: the run's head scores, the mask, the held-out text.
  std::optional<HeadTable> table;
  if (!s.scores_dir.empty()) {
    table = read_head_table(s.scores_dir);
    if (table->grid.layers != grid.layers || table->grid.heads != grid.heads) {
      throw InputError(s.scores_dir.string() + ": scores for " + std::to_string(table->grid.layers) + " x " +
                       std::to_string(table->grid.heads) + " heads, but " + s.model_dir.string() + " has " +
                       std::to_string(grid.layers) + " x " + std::to_string(grid.heads));
    }
    for (const Strategy& strategy : s.strategies) {
      const std::vector<double> score = importance(strategy, *table, s.type_order, s.seed);
      if (std::none_of(score.begin(), score.end(), [](double x) { return std::isfinite(x); })) {
        throw SettingError({s.scores_dir.string() + "/heads.csv: no head has a finite score for ",
                            setting("strategies"), " " + strategy.name() + "; that order is undefined"});
      }
    }
  }
  std::vector<float> mask;
  if (!s.mask_file.empty()) {
    for (const double g : read_head_matrix(s.mask_file, grid)) {
      const auto gate = static_cast<float>(g);  // a double beyond float32 would become inf here
      if (!std::isfinite(gate)) throw InputError(s.mask_file.string() + ": every gate must be a finite float32 number");
      mask.push_back(gate);
    }
  }
  const std::vector<double> topn_base =
      s.topn_budgets.empty() ? std::vector<double>() : geometric_base_n(s.scores_dir, *table, s.topn_rule);
  const Tokenizer tokenizer = Tokenizer::for_model(s.model_dir, c.vocab, c.bos_token_id);
  const PerplexityProtocol protocol = protocol_of(s, tokenizer.bos_id());
  Corpus corpus;
  std::vector<std::vector<int>> documents = held_out_documents(s, tokenizer, corpus, messages);
  if (documents.empty()) throw InputError("the held-out text has no token");
  std::size_t tokens = 0;
  for (const auto& d : documents) tokens += d.size();
  // The unedited model's log-probabilities stay in memory for every KL: checked up front.
  check_reference_fits(tokens, c.vocab, available_memory_bytes());

  // The unedited model first: the reference of every evaluation.
  Engine engine(c, checkpoint.weights(), {s.device, s.precision, s.fp32_matmul, false, s.gpu, false});
  Transformer& model = engine.model();
  if (!s.dump_logits.empty()) dump_first_window_logits(model, documents.front(), s, protocol, mask);
  char note[256];
  std::snprintf(note, sizeof note, "%s held-out tokens in %s; the unedited distributions take %.1f MiB",
                std::to_string(tokens).c_str(), count_of(documents.size(), "document").c_str(),
                static_cast<double>(reference_distribution_bytes(tokens, c.vocab)) / (1 << 20));
  messages.note(note);
  HeldOutEvaluator evaluator(model, std::move(documents), protocol);
  const HeldOutScore& ref = evaluator.reference();
  const std::size_t stride = protocol.effective_stride();
  std::snprintf(note, sizeof note, "unedited model: ppl %.6g over %zu tokens (context %d, stride %zu, %s)", ref.ppl,
                ref.tokens, s.context, stride, protocol.bos ? "BOS per window" : "no BOS");
  messages.note(note);
  CachedEvaluator evaluate(evaluator);

  Curve pruning = pruning_curves(s, table ? &*table : nullptr, mask, grid, evaluate, messages);
  Curve topn = topn_curve(s, topn_base, grid, evaluate, evaluator, c.sliding_window, messages);

  // Outputs, only once every evaluation is done: a failed or stopped prune writes nothing.
  make_directory(out, {setting(s.out.empty() ? "scores" : "out"), " "});
  if (!topn.rows.empty()) pruning.head_scores.emplace_back("topn_base_n", topn_base);
  if (!pruning.head_scores.empty()) {
    const fs::path scores_out = out / "head_scores";
    make_directory(scores_out, std::string());
    for (const auto& [name, score] : pruning.head_scores) write_head_scores(scores_out, name, score, grid);
  }
  if (!pruning.rows.empty()) pruning.table.write(out / "pruning.csv");
  if (!topn.rows.empty()) topn.table.write(out / "topn_budget.csv");
  json files = json::array();
  for (const CorpusFile& f : corpus.files) {
    files.push_back({{"path", fs::absolute(f.path).string()}, {"sha256", f.sha256}, {"documents", f.documents}});
  }
  const json record = {
      {"format", "attngeom-prune-v1"},
      {"attngeom", tool_provenance()},
      {"model", model_provenance(checkpoint)},
      {"precision", std::string(precision_name(engine.backend().precision()))},
      {"matmul", std::string(engine.backend().kernel())},
      {"data", {{"files", files}, {"documents", evaluator.documents().size()}, {"max_tokens", s.max_tokens}}},
      {"protocol",
       {{"context", s.context},
        {"stride", stride},
        {"bos", protocol.bos},
        {"bos_token_id", protocol.bos ? json(protocol.bos_token_id) : json(nullptr)},
        {"windows", evaluator.window_lengths().size()}}},
      {"scores", s.scores_dir.empty() ? json(nullptr) : json(fs::absolute(s.scores_dir).string())},
      {"mask", s.mask_file.empty() ? json(nullptr) : json(fs::absolute(s.mask_file).string())},
      {"type_order", s.type_order},
      {"reference", {{"tokens", ref.tokens}, {"ppl", ref.ppl}, {"mean_nll", ref.mean_nll}}},
      {"pruning", std::move(pruning.rows)},
      {"topn", topn.rows.empty() ? json::object()
                                 : json{{"rule", s.topn_rule.rule == TopnRule::kTau ? "tau" : "peak"},
                                        {"tau", s.topn_rule.tau},
                                        {"base_n", topn_base},
                                        {"budgets", std::move(topn.rows)}}},
      {"evaluations", evaluate.runs()}};
  write_text(out / "prune.json", record.dump(1) + "\n");
  std::printf("prune: %s over %s (unedited ppl %.6g) -> %s\n",
              count_of(static_cast<std::size_t>(evaluate.runs()), "evaluation").c_str(),
              count_of(ref.tokens, "token").c_str(), ref.ppl, out.string().c_str());
  return out;
}

}  // namespace attngeom::prune
