// attngeom analyze: checkpoint + corpus -> run directory (tables, arrays, report).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <sstream>

#include "analysis/pipeline.h"
#include "cli/commands.h"
#include "util/error.h"
#include "util/plural.h"

namespace attngeom::cli {
namespace {

// Set by SIGINT/SIGTERM: the run finishes the sequence in flight, then stops resumably. A
// second signal (e.g. while the tables are aggregated) exits at once: every output is
// written atomically, so the records stay and --resume finishes the run.
std::atomic<bool> g_stop_requested{false};

extern "C" void request_stop(int) {
  if (g_stop_requested.exchange(true)) ::_exit(130);
  static const char kNote[] = "attngeom: stopping after the sequence in flight (signal again to stop now)\n";
  const ssize_t ignored = ::write(STDERR_FILENO, kNote, sizeof kNote - 1);  // async-signal-safe
  (void)ignored;
}

struct AnalyzeFlags {
  AnalysisSettings settings;
  std::string model_dir, out, format = "text", lengths, shard;
  PrecisionFlags precision;
  std::uint64_t seed = 0;
  bool resume = false, overwrite = false, no_resource_check = false;
  int threads = 0;
};

std::vector<int> parse_lengths(const std::string& text) {
  if (!text.empty() && text.back() == ',') throw InputError("--lengths '" + text + "': trailing comma");
  std::vector<int> lengths;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    int value = 0;
    try {
      std::size_t used = 0;
      value = std::stoi(item, &used);
      if (used != item.size()) value = 0;
    } catch (const std::exception&) {
    }
    if (value < 2 || value > (1 << 20)) {
      throw InputError("--lengths '" + text + "': expected comma-separated sequence lengths in [2, 2^20]");
    }
    if (std::find(lengths.begin(), lengths.end(), value) != lengths.end()) {
      throw InputError("--lengths '" + text + "': " + std::to_string(value) + " appears twice");
    }
    lengths.push_back(value);
  }
  std::sort(lengths.begin(), lengths.end());  // one order in run.json, whatever the flag's
  return lengths;
}

void parse_shard(const std::string& text, AnalysisSettings& s) {
  int index = -1, count = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%d/%d%c", &index, &count, &tail) != 2 || count < 1 || index < 0 || index >= count) {
    throw InputError("--shard '" + text + "': expected i/n with 0 <= i < n");
  }
  s.shard_index = index;
  s.shard_count = count;
}

}  // namespace

// Flags shared by analyze, demo and metrics: the row geometry and the tables' statistics.
void add_geometry_options(CLI::App& cmd, geometry::RowAnalysisOptions& row, AggregateOptions& aggregate,
                          bool& per_sequence) {
  cmd.add_flag("--every-n", row.every_n, "metrics at every N in 1..M-1 instead of the default grid");
  cmd.add_flag("--per-sequence", per_sequence, "also write selection_per_seq.csv");
  cmd.add_option("--recency-window", row.mass.recency_window, "keys counted in the recency mass")
      ->check(integer_in(1, 1LL << 20))->capture_default_str();
  cmd.add_option("--top-k", row.mass.top_k, "k of the top-k mass")->check(integer_in(1, 1LL << 20))->capture_default_str();
  cmd.add_option("--max-lag", row.lag.max_lag, "tau_max of the lag curve (0: min(64, L/4); at most L - 1 in each row)")
      ->check(integer_in(0, 1LL << 20))->capture_default_str();
  auto* no_bounds = cmd.add_flag_callback(
      "--no-bounds", [&row] { row.bounds = false; },
      "skip the reconstructed envelopes R1/R2 (their O(M^2 d) cosine Gram is most of the geometry's cost at "
      "large M); R3 and every metric remain");
  cmd.add_option_function<std::string>(
         "--r1-eta",
         [&row](const std::string& v) { row.r1_eta = v == "max" ? geometry::R1Eta::kMaxDeviation : geometry::R1Eta::kLagFitMae; },
         "R1's cosine-deviation bound: max (provable) or mae (typical)")
      ->check(CLI::IsMember({"max", "mae"}))->excludes(no_bounds)->default_str("max");
  cmd.add_option("--r2-delta", row.r2_delta, "stated violation probability of the R2 envelope")
      ->check(number_in(1e-9, 0.5))->excludes(no_bounds)->capture_default_str();
  cmd.add_option("--bootstrap", aggregate.bootstrap.resamples, "bootstrap resamples for correlation CIs")
      ->check(integer_in(10, 1000000))->capture_default_str();
  cmd.add_option("--stats-seed", aggregate.seed, "seed of the bootstrap and k-means")
      ->check(seed_value())
      ->capture_default_str();
  cmd.add_option("--retriever-min-cos-last", aggregate.taxonomy.retriever_min_cos_last,
                 "taxonomy: Retriever needs cos(s_N, v_L) at least this at small and large N")
      ->check(number_in(-1.0, 1.0))->capture_default_str();
  cmd.add_option("--reset-min-sink-share", aggregate.taxonomy.reset_min_sink_share,
                 "taxonomy: Reset needs this share of the magnitude on the sink")
      ->check(number_in(0.0, 1.0))->capture_default_str();
  cmd.add_option("--reset-max-small-cos-last", aggregate.taxonomy.reset_max_small_cos_last,
                 "taxonomy: Reset needs cos(s_N, v_L) at most this at small N")
      ->check(number_in(-1.0, 1.0))->capture_default_str();
  cmd.add_option("--mixer-min-small-cos-sink", aggregate.taxonomy.mixer_min_small_cos_sink,
                 "taxonomy: Mixer needs cos(s_N, v_0) at least this at small N")
      ->check(number_in(-1.0, 1.0))->capture_default_str();
  cmd.add_option("--mixer-min-sink-shift", aggregate.taxonomy.mixer_min_sink_shift,
                 "taxonomy: Mixer needs cos(s_N, v_0) to fall at least this much from small to large N")
      ->check(number_in(0.0, 2.0))->capture_default_str();
}

// Flags shared by analyze and demo: the sequences and rows, then the geometry.
void add_analysis_options(CLI::App& cmd, AnalysisSettings& s) {
  cmd.add_option("--seq-len", s.seq_len, "tokens per sequence, BOS included")->check(integer_in(2, 1LL << 20))->capture_default_str();
  cmd.add_option("--num-seqs", s.num_seqs, "number of sequences")->check(integer_in(1, 1LL << 24))->capture_default_str();
  cmd.add_option("--queries", s.queries, "query rows: last, all, stride:K, or positions i,j,k")->capture_default_str();
  add_geometry_options(cmd, s.row, s.aggregate, s.per_sequence);
}

void add_analyze_command(CLI::App& app) {
  auto f = std::make_shared<AnalyzeFlags>();
  AnalysisSettings& s = f->settings;
  CLI::App* cmd = app.add_subcommand("analyze", "Checkpoint + corpus -> tables, tensors and report in a run directory");
  cmd->add_option("--model", f->model_dir, "Hugging Face model directory")->required();
  cmd->add_option("--data", s.data, "corpus files or folders (text, gzip or zstd)")->required();
  cmd->add_option("--out", f->out, "run directory to create")->check(non_empty())->required();
  add_corpus_format_options(*cmd, f->format, s.corpus.text_field);
  cmd->add_option("--skip", s.skip, "skip this many candidate sequences first")
      ->check(integer_in(0, 1LL << 30))
      ->capture_default_str();
  auto* seed = cmd->add_option("--seed", f->seed, "shuffle candidate sequences with this seed (default: corpus order)")
                   ->check(seed_value());
  auto* pack = cmd->add_flag("--pack", s.pack, "concatenate all documents into one stream (short ones are no longer skipped)");
  cmd->add_option_function<std::string>(
         "--pack-separator", [&s](const std::string& v) { s.pack_bos = v == "bos"; },
         "with --pack: bos (each document after the first starts with BOS, as Hugging Face packs) or none")
      ->check(CLI::IsMember({"bos", "none"}))->needs(pack)->default_str("bos");
  cmd->add_option("--lengths", f->lengths, "also run these sequence lengths (a length sweep), e.g. 128,256,512");
  cmd->add_option("--label", s.label, "run label in reports (default: the directory name)");
  cmd->add_flag("--resume", f->resume, "continue an interrupted run in --out");
  cmd->add_flag("--overwrite", f->overwrite, "replace an existing run in --out");
  cmd->add_option("--shard", f->shard, "process only shard i of n (i/n); combine with attngeom merge");
  cmd->add_flag("--force", s.force, "allow sequences longer than max_position_embeddings");
  cmd->add_flag("--no-resource-check", f->no_resource_check,
                "skip the pre-flight check of memory (MemAvailable) and free disk against the run's estimate");
  cmd->add_option("--max-document-bytes", s.corpus.max_document_bytes, "skip (with a warning) longer documents")
      ->check(integer_in(1, 1LL << 40))->capture_default_str();
  cmd->add_option("--max-corpus-bytes", s.corpus.max_file_bytes, "refuse corpus files larger than this, decompressed")
      ->check(integer_in(1, 1LL << 50))->capture_default_str();
  cmd->add_option("--threads", f->threads, "worker threads (default: all cores)")->check(integer_in(1, 1024));
  add_precision_options(*cmd, f->precision);
  add_analysis_options(*cmd, s);
  cmd->callback([f, seed, cmd] {
    AnalysisSettings& s = f->settings;
    if (f->resume && f->overwrite) throw InputError("--resume and --overwrite cannot be combined");
    s.model_dir = f->model_dir;
    s.out = f->out;
    s.corpus.format = resolve_corpus_format(*cmd, f->format);
    if (seed->count() > 0) s.shuffle_seed = f->seed;
    if (!f->lengths.empty()) s.lengths = parse_lengths(f->lengths);
    if (!f->shard.empty()) parse_shard(f->shard, s);
    s.check_resources = !f->no_resource_check;
    s.mode = f->resume ? RunDirMode::kResume : f->overwrite ? RunDirMode::kOverwrite : RunDirMode::kCreate;
    s.precision = resolve_precision(f->precision.precision);
    s.fp32_matmul = resolve_fp32_matmul(f->precision, s.precision);
    apply_thread_count(f->threads);

    std::signal(SIGINT, request_stop);
    std::signal(SIGTERM, request_stop);
    const RunControl control{&g_stop_requested, ::isatty(STDERR_FILENO) != 0};
    const AnalysisOutcome outcome = run_analysis(s, control);
    if (!outcome.complete) {
      std::fprintf(stderr, "attngeom: stopped after %zu/%zu sequences; continue with: attngeom analyze ... --resume\n",
                   outcome.sequences_done, outcome.sequences_total);
      throw StoppedEarly();
    }
    write_run_report(s.out);
    const std::string lengths = s.lengths.empty() ? "" : " over " + count_of(s.lengths.size() + 1, "length");
    std::printf("wrote %s (%s%s)\n", s.out.c_str(), count_of(outcome.sequences_done, "sequence").c_str(), lengths.c_str());
  });
}

}  // namespace attngeom::cli
