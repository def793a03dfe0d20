#pragma once
// attngeom prune, as a library call: head masking orders and token-level top-N budgets
// evaluated on held-out text against the unedited model (docs/method.md section 7). The CLI only
// fills PruneSettings, and writes report.html when the output is a run directory. Outputs
// (docs/prune.md): pruning.csv, topn_budget.csv, head_scores/, prune.json.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "corpus/documents.h"
#include "model/engine.h"
#include "ops/gemm.h"
#include "prune/strategy.h"
#include "prune/topn_policy.h"

namespace attngeom::prune {

struct PruneSettings {
  std::filesystem::path model_dir;
  std::vector<std::string> data;  // held-out text: files or folders
  CorpusOptions corpus;
  std::filesystem::path scores_dir;  // an analyze run; empty: only `mask_file` is evaluated
  std::filesystem::path out;         // empty: scores_dir
  std::vector<Strategy> strategies;  // empty: no head-pruning curves
  std::vector<double> fractions = {0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5};
  int seeds = 3;  // random orders: seeds seed, seed + 1, ...
  std::uint64_t seed = 0;
  std::vector<std::string> type_order = default_type_order();
  int context = 256;  // tokens per window, BOS included
  int stride = 0;     // 0: context - 1 (no overlap)
  bool bos = true;
  std::size_t max_tokens = 0;       // 0: every token of the held-out text
  std::filesystem::path mask_file;  // a [layers, heads] gate matrix evaluated as strategy "mask"
  std::vector<int> topn_budgets;    // empty: no top-N curve
  TopnRuleOptions topn_rule;
  std::filesystem::path dump_logits;  // .npy of the first window's logits under mask_file
  Device device = Device::kCpu;
  int gpu = 0;  // kCuda: the GPU's ordinal
  Precision precision = Precision::kFp32;
  Fp32Matmul fp32_matmul = Fp32Matmul::kSgemm;
  bool force = false;  // allow context beyond max_position_embeddings
};

// What a prune reports while it runs, for the front end to show (the CLI on stderr): notes on
// its progress (the held-out text, the unedited model, each evaluation) and warnings (e.g. a
// skipped document). Both are called, so both must be set.
struct PruneMessages {
  std::function<void(const std::string&)> note;
  std::function<void(const std::string&)> warn;
};

// Returns the output directory (`out`, or `scores_dir` when that is empty).
std::filesystem::path run_prune(const PruneSettings& settings, const PruneMessages& messages);

}  // namespace attngeom::prune
