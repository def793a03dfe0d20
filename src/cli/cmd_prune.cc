// attngeom prune: head masking orders and token-level top-N budgets, judged by
// held-out perplexity, KL and top-1 agreement against the unedited model (docs/method.md section 7).
#include <algorithm>
#include <cstdio>
#include <limits>
#include <optional>
#include <sstream>

#include "analysis/run_dir.h"
#include "cli/commands.h"
#include "prune/prune_run.h"
#include "util/error.h"

namespace attngeom::cli {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : ",") + item;
  return text;
}

struct PruneFlags {
  prune::PruneSettings settings;
  std::string model_dir, scores, out, mask, dump_logits, format = "text";
  std::string strategies = "type,random,entropy,sink,last,fscore";
  std::string fractions = "0,0.05,0.1,0.2,0.3,0.4,0.5";
  std::string type_order = join(prune::default_type_order());
  std::string budgets = "1,2,4,8,16,32";
  std::string topn_rule = "tau";
  PrecisionFlags precision{"fp32"};
  bool no_bos = false, no_topn = false;
  int threads = 0;
};

template <typename T>
std::optional<T> parse_value(const std::string& item) {
  if constexpr (std::is_same_v<T, int>) {
    const std::optional<long long> x = parse_integer(item);
    if (!x || *x < std::numeric_limits<int>::min() || *x > std::numeric_limits<int>::max()) return std::nullopt;
    return static_cast<int>(*x);
  } else {
    return parse_number(item);
  }
}

template <typename T>
std::vector<T> parse_numbers(const std::string& flag, const std::string& text) {
  std::vector<T> values;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const std::optional<T> value = parse_value<T>(item);
    if (!value) throw InputError(flag + " '" + text + "': '" + item + "' is not a number");
    if (std::find(values.begin(), values.end(), *value) != values.end()) {
      throw InputError(flag + " '" + text + "': " + item + " appears twice");
    }
    values.push_back(*value);
  }
  if (values.empty() || text.back() == ',') throw InputError(flag + " '" + text + "': expected a comma-separated list");
  return values;
}

// Options of orders that will not run are refused rather than ignored.
void check_order_options(const CLI::App& cmd, const std::vector<prune::Strategy>& strategies) {
  const auto runs = [&](auto wanted) { return std::any_of(strategies.begin(), strategies.end(), wanted); };
  if (!runs([](const prune::Strategy& o) { return o.seeded(); })) {
    for (const char* flag : {"--seeds", "--seed"}) {
      if (cmd.get_option(flag)->count() > 0) {
        throw InputError(std::string(flag) + ": applies only to the seeded orders (random, type), and none runs");
      }
    }
  }
  if (strategies.empty() && cmd.get_option("--fractions")->count() > 0) {
    throw InputError("--fractions: applies only to the masking orders (--strategies), and none runs");
  }
  if (cmd.get_option("--type-order")->count() > 0 &&
      !runs([](const prune::Strategy& o) { return o.kind == prune::StrategyKind::kType; })) {
    throw InputError("--type-order: applies only to the type order, which does not run");
  }
}

}  // namespace

void add_prune_command(CLI::App& app) {
  auto f = std::make_shared<PruneFlags>();
  prune::PruneSettings& s = f->settings;
  CLI::App* cmd = app.add_subcommand(
      "prune", "Head masking orders and token-level top-N vs held-out perplexity, KL and top-1 (docs/prune.md)");
  cmd->add_option("--model", f->model_dir, "Hugging Face model directory")->required();
  cmd->add_option("--data", s.data, "held-out text: files or folders (text, gzip or zstd)")->required();
  add_corpus_format_options(*cmd, f->format, s.corpus.text_field);
  cmd->add_option("--scores", f->scores, "analyze run directory whose heads.csv / selection.csv rank the heads");
  cmd->add_option("--out", f->out, "output directory (default: the --scores run directory, whose report is rewritten)")
      ->check(non_empty());
  auto* strategies = cmd->add_option("--strategies", f->strategies,
                                     "masking orders: type, random, entropy, sink, last, fscore (-rev reverses one)")
                         ->capture_default_str();
  cmd->add_option("--fractions", f->fractions, "fractions of all heads to mask")->capture_default_str();
  cmd->add_option("--seeds", s.seeds, "seeded orders (random, type): number of seeds")
      ->check(integer_in(1, 1000))
      ->capture_default_str();
  cmd->add_option("--seed", s.seed, "seeded orders: the first seed (then seed+1, ...)")
      ->check(seed_value())
      ->capture_default_str();
  cmd->add_option("--type-order", f->type_order, "type strategy: head types in masking order")->capture_default_str();
  cmd->add_option("--context", s.context, "tokens per window, including BOS")
      ->check(integer_in(2, 1LL << 20))
      ->capture_default_str();
  cmd->add_option("--stride", s.stride, "tokens advanced per window (default: context - 1, no overlap)")
      ->check(integer_in(1, 1LL << 20));
  cmd->add_flag("--no-bos", f->no_bos, "do not start each window with BOS");
  cmd->add_option("--max-tokens", s.max_tokens, "score at most the first N tokens of the held-out text (default: all)")
      ->check(integer_in(1, 1LL << 30));
  cmd->add_option("--mask", f->mask,
                  "also evaluate this [layers, heads] gate matrix (.npy, or TSV: one line per layer)");
  auto* budgets = cmd->add_option("--topn-budgets", f->budgets,
                                  "token-level top-N: mean keys kept per head and query (default: those <= --context)")
                      ->capture_default_str();
  auto* no_topn = cmd->add_flag("--no-topn", f->no_topn, "skip the token-level top-N curve")->excludes(budgets);
  cmd->add_option("--topn-rule", f->topn_rule,
                  "geometric N per head: tau (smallest N with mean F >= tau) or peak (peak_f_n)")
      ->check(CLI::IsMember({"tau", "peak"}))
      ->excludes(no_topn)
      ->capture_default_str();
  cmd->add_option("--topn-tau", s.topn_rule.tau, "tau of the tau rule")
      ->check(number_in(0.0, 1.0))
      ->excludes(no_topn)
      ->capture_default_str();
  cmd->add_option("--dump-logits", f->dump_logits,
                  "write the first window's logits [tokens, vocab] under --mask (unedited without it) to this .npy");
  cmd->add_flag("--force", s.force, "allow --context beyond max_position_embeddings");
  cmd->add_option("--threads", f->threads, "worker threads (default: all cores)")->check(integer_in(1, 1024));
  add_precision_options(*cmd, f->precision);
  cmd->callback([f, cmd, strategies, budgets] {
    prune::PruneSettings& s = f->settings;
    s.model_dir = f->model_dir;
    s.scores_dir = f->scores;
    s.out = f->out;
    s.mask_file = f->mask;
    s.dump_logits = f->dump_logits;
    s.corpus.format = resolve_corpus_format(*cmd, f->format, s.data);
    s.bos = !f->no_bos;
    // Without an explicit --strategies, --mask alone (or no --scores) evaluates no order.
    if (strategies->count() > 0 || (!f->scores.empty() && f->mask.empty())) {
      s.strategies = prune::parse_strategies(f->strategies);
    }
    check_order_options(*cmd, s.strategies);
    if (f->topn_rule == "peak" && cmd->get_option("--topn-tau")->count() > 0) {
      throw InputError("--topn-tau: applies only to --topn-rule tau");
    }
    s.fractions = parse_numbers<double>("--fractions", f->fractions);
    s.type_order = prune::parse_type_order(f->type_order);
    const std::vector<int> all_budgets = parse_numbers<int>("--topn-budgets", f->budgets);
    if (budgets->count() > 0 && f->scores.empty()) {
      throw InputError("--topn-budgets: the geometric N per head comes from --scores RUN_DIR, which is missing");
    }
    if (!f->scores.empty() && !f->no_topn) {
      for (const int b : all_budgets) {
        if (budgets->count() > 0 || b <= s.context) s.topn_budgets.push_back(b);  // explicit ones are checked
      }
    }
    s.topn_rule.rule = f->topn_rule == "peak" ? prune::TopnRule::kPeak : prune::TopnRule::kTau;
    const EngineOptions compute = resolve_compute(f->precision);
    s.device = compute.device;
    s.gpu = compute.gpu;
    s.precision = compute.precision;
    s.fp32_matmul = compute.fp32_matmul;
    apply_thread_count(f->threads);
    const prune::PruneMessages messages{
        [](const std::string& note) { std::fprintf(stderr, "attngeom prune: %s\n", note.c_str()); },
        [](const std::string& warning) { std::fprintf(stderr, "attngeom prune: warning: %s\n", warning.c_str()); }};
    const std::filesystem::path out = prune::run_prune(s, messages);
    if (is_run_dir(out)) write_run_report(out);
  });
}

}  // namespace attngeom::cli
