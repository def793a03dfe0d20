#include "analysis/pipeline.h"

#include <chrono>
#include <cstdio>

#include "analysis/csv.h"
#include "analysis/outputs.h"
#include "analysis/provenance.h"
#include "analysis/record.h"
#include "analysis/row_fields.h"
#include "analysis/sequence_analyzer.h"
#include "capture/query_rows.h"
#include "corpus/sequences.h"
#include "io/checkpoint.h"
#include "io/tokenizer.h"
#include "model/forward.h"
#include "report/report.h"
#include "util/error.h"
#include "util/machine.h"

namespace attngeom {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// What stays the same across the lengths of a sweep: model, tokenizer, corpus.
struct Inputs {
  const Checkpoint& checkpoint;
  const Tokenizer& tokenizer;
  const Corpus& corpus;
};

class Progress {
 public:
  Progress(std::size_t total, std::size_t seq_len, bool bar) : total_(total), seq_len_(seq_len), bar_(bar) {}
  void sequence_done(std::size_t done) {
    ++computed_;
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    const double per_seq = elapsed / static_cast<double>(computed_);
    const double tokens_per_s = static_cast<double>(computed_ * seq_len_) / std::max(elapsed, 1e-9);
    const double eta = per_seq * static_cast<double>(total_ - done);
    if (bar_) {
      const int width = 30;
      const int filled = static_cast<int>(width * done / std::max<std::size_t>(total_, 1));
      std::fprintf(stderr, "\r[%.*s%*s] %zu/%zu sequences  %.0f tok/s  ETA %.0f s   ", filled,
                   "##############################", width - filled, "", done, total_, tokens_per_s, eta);
      if (done == total_) std::fprintf(stderr, "\n");
    } else {
      std::fprintf(stderr, "attngeom: sequence %zu/%zu done, %.0f tok/s, ETA %.0f s\n", done, total_, tokens_per_s, eta);
    }
  }

 private:
  std::size_t total_, seq_len_, computed_ = 0;
  bool bar_;
  Clock::time_point start_ = Clock::now();
};

AnalysisOutcome run_one_length(const AnalysisSettings& s, const Inputs& in, const fs::path& out, int seq_len,
                               RunDirMode mode, const RunControl& control) {
  const ModelConfig& c = in.checkpoint.config();
  if (seq_len > c.max_positions && !s.force) {
    throw InputError("--seq-len " + std::to_string(seq_len) + " exceeds the model's max_position_embeddings " +
                     std::to_string(c.max_positions) + " (use --force to run anyway)");
  }
  AnalysisSettings length_settings = s;
  length_settings.seq_len = seq_len;
  length_settings.lengths.clear();
  const RunDir run_dir(out, settings_json(length_settings), mode);

  SequenceOptions seq_options{seq_len, s.pack, s.num_seqs, s.skip, s.shuffle_seed, c.bos_token_id};
  const SequenceSet sequences = make_sequences(
      in.corpus, [&](const std::string& text, const std::string& where) { return in.tokenizer.encode(text, where); },
      seq_options);
  const QuerySelection queries = parse_query_selection(s.queries, "--queries");
  const RecordSchema schema = make_record_schema(static_cast<std::size_t>(seq_len), s.every_n);

  nlohmann::json run = {{"format", "attngeom-run-v1"},
                        {"label", s.label.empty() ? fs::absolute(out).filename().string() : s.label},
                        {"attngeom", tool_provenance()},
                        {"created", utc_timestamp()},
                        {"machine", machine_provenance()},
                        {"model", model_provenance(in.checkpoint)},
                        {"precision", std::string(precision_name(s.precision))},
                        {"tokenizer", {{"file", "tokenizer.model"}, {"bos", true}, {"bos_token_id", c.bos_token_id}}},
                        {"seq_len", seq_len},
                        {"n_grid", schema.n_grid},
                        {"queries", s.queries},
                        {"corpus", corpus_provenance(in.corpus, sequences)},
                        {"shard", {{"index", s.shard_index}, {"count", s.shard_count}}},
                        {"settings", settings_json(length_settings)}};
  if (!s.lengths.empty() && out == s.out) run["lengths"] = s.lengths;
  run["sequences_done"] = run_dir.finished_sequences().size();
  run_dir.write_json("run.json", run);

  std::vector<std::size_t> mine;  // this shard's sequences
  for (std::size_t i = 0; i < sequences.sequences.size(); ++i) {
    if (static_cast<int>(i % static_cast<std::size_t>(s.shard_count)) == s.shard_index) mine.push_back(i);
  }
  auto backend = make_backend(s.precision);
  Transformer model(c, in.checkpoint.weights(), *backend);
  SequenceAnalyzer analyzer(c, schema, s.row);
  ForwardRequest request;
  for (int l = 0; l < c.layers; ++l) request.capture_layers.push_back(l);

  AnalysisOutcome outcome;
  outcome.sequences_total = mine.size();
  std::size_t done = 0;
  for (const std::size_t i : mine) done += run_dir.has_record(i) ? 1 : 0;
  Progress progress(mine.size(), static_cast<std::size_t>(seq_len), control.progress_bar);
  for (const std::size_t i : mine) {
    if (run_dir.has_record(i)) continue;  // finished before an interruption: never recomputed
    if (control.stop != nullptr && control.stop->load()) break;
    const std::vector<int>& tokens = sequences.sequences[i].tokens;
    request.capture_rows = resolve_query_rows(queries, seq_len, "--queries");
    analyzer.begin(i, tokens, request.capture_rows);
    model.forward(tokens, request, &analyzer, nullptr);
    write_record(record_path(run_dir.records_dir(), i), schema, analyzer.record());
    progress.sequence_done(++done);
  }
  outcome.sequences_done = done;
  outcome.complete = done == mine.size();
  run["sequences_done"] = done;
  if (outcome.complete) {
    finish_run_dir(out, c.kv_heads, s.aggregate, s.per_sequence);
    run["complete"] = true;
  }
  run_dir.write_json("run.json", run);
  return outcome;
}

void write_length_sweep(const AnalysisSettings& s, const std::vector<std::pair<int, fs::path>>& runs, int kv_heads) {
  CsvTable table({"seq_len", "n", "heads", "precision_mean", "recall_mean", "f_mean", "margin_mean", "separated_mean"});
  for (const auto& [seq_len, dir] : runs) {
    std::vector<fs::path> records;
    for (const auto& entry : fs::directory_iterator(dir / "records")) {
      if (entry.path().extension() == ".safetensors") records.push_back(entry.path());
    }
    const RunAggregate run = aggregate_records(records, kv_heads, s.aggregate);
    for (std::size_t g = 0; g < run.schema.n_grid.size(); ++g) {
      table.add(seq_len).add(run.schema.n_grid[g]).add(run.heads_table.size());
      for (const char* field : {"precision", "recall", "f", "margin", "separated"}) {
        double sum = 0;
        for (const HeadAggregate& h : run.heads_table) sum += run.n_stat(h, g, field).mean;
        table.add(sum / static_cast<double>(run.heads_table.size()));
      }
      table.end_row();
    }
  }
  table.write(s.out / "length_sweep.csv");
}

}  // namespace

void write_run_report(const fs::path& dir) {
  ReportOptions options;
  options.generator = std::string("attngeom ") + tool_provenance()["version"].get<std::string>() + " (" +
                      tool_provenance()["git_commit"].get<std::string>() + ")";
  write_report({dir}, dir / "report.html", options);
}

nlohmann::json settings_json(const AnalysisSettings& s) {
  const auto& r = s.row;
  return {{"model_dir", fs::absolute(s.model_dir).string()},
          {"data", s.data},
          {"format", s.corpus.format == CorpusFormat::kText ? "text" : s.corpus.format == CorpusFormat::kLines ? "lines" : "jsonl"},
          {"text_field", s.corpus.text_field},
          {"seq_len", s.seq_len},
          {"lengths", s.lengths},
          {"num_seqs", s.num_seqs},
          {"skip", s.skip},
          {"seed", s.shuffle_seed ? nlohmann::json(*s.shuffle_seed) : nlohmann::json(nullptr)},
          {"pack", s.pack},
          {"queries", s.queries},
          {"every_n", s.every_n},
          {"shard", {s.shard_index, s.shard_count}},
          {"precision", std::string(precision_name(s.precision))},
          {"recency_window", r.mass.recency_window},
          {"top_k", r.mass.top_k},
          {"normalised_radii", r.selection.normalised_radii},
          {"max_lag", r.lag.max_lag},
          {"bounds", r.bounds},
          {"r1_eta", r.r1_eta == geometry::R1Eta::kMaxDeviation ? "max" : "mae"},
          {"r2_delta", r.r2_delta},
          {"stats_seed", s.aggregate.seed},
          {"bootstrap", s.aggregate.bootstrap.resamples}};
}

RunAggregate finish_run_dir(const fs::path& dir, int kv_heads, const AggregateOptions& options, bool per_sequence) {
  std::vector<fs::path> records;
  for (const auto& entry : fs::directory_iterator(dir / "records")) {
    const std::string name = entry.path().filename().string();
    if (name.size() == 22 && name.rfind("seq-", 0) == 0) records.push_back(entry.path());
  }
  std::sort(records.begin(), records.end());
  RunAggregate run = aggregate_records(records, kv_heads, options);
  write_tables(run, dir);
  if (per_sequence) write_per_sequence_table(records, kv_heads, dir / "selection_per_seq.csv");
  return run;
}

AnalysisOutcome run_analysis(const AnalysisSettings& s, const RunControl& control) {
  const Checkpoint checkpoint(s.model_dir);
  const Tokenizer tokenizer(s.model_dir / "tokenizer.model", checkpoint.config().vocab);
  const Corpus corpus = read_corpus(s.data, s.corpus);
  const Inputs inputs{checkpoint, tokenizer, corpus};

  AnalysisOutcome outcome = run_one_length(s, inputs, s.out, s.seq_len, s.mode, control);
  if (!outcome.complete) return outcome;
  if (s.lengths.empty()) {
    write_run_report(s.out);
    return outcome;
  }
  std::vector<std::pair<int, fs::path>> sweep = {{s.seq_len, s.out}};
  for (const int length : s.lengths) {
    if (length == s.seq_len) continue;
    const fs::path dir = s.out / "lengths" / std::to_string(length);
    const RunDirMode mode = is_run_dir(dir) ? RunDirMode::kResume : RunDirMode::kCreate;
    const AnalysisOutcome part = run_one_length(s, inputs, dir, length, mode, control);
    outcome.sequences_done += part.sequences_done;
    outcome.sequences_total += part.sequences_total;
    if (!part.complete) {
      outcome.complete = false;
      return outcome;
    }
    sweep.push_back({length, dir});
  }
  write_length_sweep(s, sweep, checkpoint.config().kv_heads);
  write_run_report(s.out);
  return outcome;
}

}  // namespace attngeom
