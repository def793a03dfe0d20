#include "analysis/pipeline.h"

#include <atomic>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analysis/device_observer.h"
#include "analysis/job_exchange.h"
#include "analysis/length_plan.h"
#include "analysis/length_sweep.h"
#include "analysis/outputs.h"
#include "analysis/overlapped_sequences.h"
#include "analysis/preflight.h"
#include "analysis/progress.h"
#include "analysis/record.h"
#include "analysis/record_writer.h"
#include "analysis/run_json.h"
#include "analysis/run_readback.h"
#include "io/checkpoint.h"
#include "io/tokenizer.h"
#include "model/engine.h"

namespace attngeom {
namespace {

namespace fs = std::filesystem;

// One length: this process's sequences not finished before, each written as a record the
// moment it is done. Under MPI rank r computes k mod K = r; rank 0 also writes the records
// the other ranks send, between its own sequences and after them.
AnalysisOutcome run_one_length(const AnalysisSettings& s, const RunInputs& in, const LengthPlan& plan, RunDirMode mode,
                               const RunControl& control) {
  const ModelConfig& c = in.checkpoint.config();
  JobRanks* const ranks = control.ranks;
  std::optional<RunDir> run_dir;
  if (writes_run_dir(control)) run_dir.emplace(plan.out, plan.settings, mode);
  std::vector<std::size_t> finished = run_dir ? run_dir->finished_sequences() : std::vector<std::size_t>{};
  if (ranks != nullptr) finished = ranks->start_length(job_fingerprint(in, plan), finished);

  Engine engine(c, in.checkpoint.weights(), {s.device, s.precision, s.fp32_matmul, false, s.gpu, false});
  const GpuAnalysisPlacement placement = fitted_placement(engine, c, s.row, {}, plan.seq_len, plan.rows.size());
  nlohmann::json run;
  if (run_dir) {
    run = run_json(s, in, plan, engine, control);
    run["sequences_done"] = finished.size();
    run_dir->write_json("run.json", run);
  }

  Transformer& model = engine.model();
  ForwardRequest request;
  for (int l = 0; l < c.layers; ++l) request.capture_layers.push_back(l);
  request.capture_rows = plan.rows;

  RankWork work = rank_work(plan.shard_sequences, finished, ranks);
  std::atomic<std::size_t> done = work.finished;  // read by the layers' progress on worker threads
  Progress progress(plan.shard_sequences.size(), static_cast<std::size_t>(plan.seq_len), control.progress);
  // On a GPU the host analyses each layer while the GPU computes the next ones, and the next
  // sequence; its workers report layers to `progress`, declared before it.
  OverlappedSequences sequences(c, plan.schema, s.row, overlapped_setup(engine, placement));
  sequences.on_layer_done([&](int layers_done) { progress.layer_done(done, layers_done, c.layers); });
  const auto receive = [&](bool wait) {
    for (std::size_t n = ranks->receive_records(run_dir->records_dir(), wait); n > 0; --n, --work.awaited_records) {
      progress.sequence_done(++done);
    }
  };
  // The disk works while the next sequence runs; after an error, the sequences analysed before
  // it still reach the disk (the writer's destructor finishes them) for --resume.
  RecordWriter writer(plan.schema);
  std::size_t reported = 0;  // of the writer's records, those progress has counted
  const auto report_written = [&] {
    for (const std::size_t n = writer.written(); reported < n; ++reported) progress.sequence_done(++done);
  };
  std::size_t computed = 0;
  const OverlappedSequences::Done deliver = [&](const SequenceAnalyzer& analyzed) {
    const SequenceRecord& record = analyzed.record();
    ++computed;
    if (!run_dir) {
      const fs::path staged = record_path(ranks->staging_dir(), record.sequence);
      write_record(staged, plan.schema, record);
      ranks->send_record(record.sequence, staged);
      return;
    }
    writer.write(record_path(run_dir->records_dir(), record.sequence), record);
    report_written();  // a sequence counts as done once its record is on disk
    if (work.awaited_records > 0) receive(false);
  };
  for (const std::size_t i : work.to_compute) {
    if (control.stop != nullptr && control.stop->load()) break;
    const std::vector<int>& tokens = plan.sequences.sequences[i].tokens;
    sequences.analyze(
        i, tokens, request.capture_rows,
        [&](ForwardObserver& observer) { model.forward(tokens, request, &observer, nullptr); }, deliver);
  }
  sequences.finish(deliver);
  writer.finish();
  report_written();
  if (!run_dir) {
    ranks->finish_sending();
    return {computed == work.to_compute.size(), computed, work.to_compute.size()};
  }
  while (work.awaited_records > 0) receive(true);

  AnalysisOutcome outcome{done == plan.shard_sequences.size(), done.load(), plan.shard_sequences.size()};
  run["sequences_done"] = done.load();
  if (outcome.complete) {
    run["taxonomy"] = taxonomy_json(finish_run_dir(plan.out, c.kv_heads, s.aggregate, s.per_sequence));
    run["complete"] = true;
  }
  run_dir->write_json("run.json", run);
  return outcome;
}

// The main length, then the sweep's lengths, each a run directory.
AnalysisOutcome run_lengths(const AnalysisSettings& s, const RunInputs& inputs, const std::vector<LengthPlan>& plans,
                            RunDirMode mode, const RunControl& control) {
  AnalysisOutcome outcome = run_one_length(s, inputs, plans.front(), mode, control);
  if (!outcome.complete) return outcome;
  if (s.lengths.empty()) return outcome;
  std::vector<std::pair<int, fs::path>> sweep = {{s.seq_len, s.out}};
  for (std::size_t p = 1; p < plans.size(); ++p) {
    const LengthPlan& plan = plans[p];
    // Decided now, after the main directory was created, resumed or emptied (--overwrite).
    const RunDirMode mode = is_run_dir(plan.out) ? RunDirMode::kResume : RunDirMode::kCreate;
    const AnalysisOutcome part = run_one_length(s, inputs, plan, mode, control);
    outcome.sequences_done += part.sequences_done;
    outcome.sequences_total += part.sequences_total;
    if (!part.complete) {
      outcome.complete = false;
      return outcome;
    }
    sweep.push_back({plan.seq_len, plan.out});
  }
  if (writes_run_dir(control)) write_length_sweep(s.out, s.aggregate, sweep, inputs.checkpoint.config().kv_heads);
  return outcome;
}

// What the first length computes, for the line a front end shows before the first sequence.
RunStart run_start(const AnalysisSettings& s, const RunInputs& in, const std::vector<LengthPlan>& plans) {
  const LengthPlan& plan = plans.front();
  std::set<std::size_t> documents;
  for (const std::size_t i : plan.shard_sequences) {
    const std::vector<std::size_t>& drawn = plan.sequences.sequences[i].documents;
    documents.insert(drawn.begin(), drawn.end());
  }
  const std::vector<std::size_t>& first = plan.sequences.sequences[plan.shard_sequences.front()].documents;
  std::string first_document;
  if (!first.empty()) {
    const Document& d = in.corpus.documents[first.front()];
    first_document = in.corpus.files[d.file].path.string() + ":" + std::to_string(d.line);
  }
  return {in.checkpoint.config().model_type,
          std::string(precision_name(s.precision)),
          std::string(device_name(s.device)),
          plan.shard_sequences.size(),
          plan.seq_len,
          plan.rows.size(),
          plans.size() - 1,
          documents.size(),
          first_document};
}

}  // namespace

nlohmann::json taxonomy_json(const RunAggregate& run) {
  const stats::ClusterCrossCheck& k = run.kmeans;
  return {{"kmeans_agreement", k.compared > 0 ? nlohmann::json(k.agreement) : nlohmann::json(nullptr)},
          {"kmeans_compared", k.compared}};
}

RunAggregate finish_run_dir(const fs::path& dir, int kv_heads, const AggregateOptions& options, bool per_sequence) {
  const std::vector<fs::path> records = list_records(dir / "records");
  RunAggregate run = aggregate_records(records, kv_heads, options);
  write_tables(run, dir);
  if (per_sequence) write_per_sequence_table(records, kv_heads, dir / "selection_per_seq.csv");
  write_routing_tables(records, dir);
  return run;
}

AnalysisOutcome run_analysis(const AnalysisSettings& given, const RunControl& control) {
  // Only this process (or rank 0 of an MPI job) sees the output directory.
  const bool writer = writes_run_dir(control);
  // The cheap checks first: a wrong output directory fails before the model or corpus is read.
  if (writer) check_run_dir(given.out, length_settings_json(given, given.seq_len), given.mode);
  AnalysisSettings s = given;
  if (writer) s.label = resumed_label(given);
  const Checkpoint checkpoint(s.model_dir);
  const Tokenizer tokenizer =
      Tokenizer::for_model(s.model_dir, checkpoint.config().vocab, checkpoint.config().bos_token_id);
  const Corpus corpus = read_corpus(s.data, s.corpus);
  if (writer && control.warn) {
    for (const std::string& warning : corpus_warning_lines(corpus)) control.warn(warning);
  }
  const RunInputs inputs{checkpoint, tokenizer, corpus};

  // Every length is planned (and every input error raised) before anything is written.
  std::vector<LengthPlan> plans;
  plans.push_back(plan_length(s, inputs, s.out, s.seq_len, control));
  for (const int length : s.lengths) {
    if (length == s.seq_len) continue;
    plans.push_back(plan_length(s, inputs, s.out / "lengths" / std::to_string(length), length, control));
  }
  if (s.check_resources) check_run_resources(s, inputs, plans, control);

  // A run that fails or stops before its first record (e.g. weights that overflow float32)
  // leaves the output directory as it was; once records exist they stay for --resume.
  std::vector<fs::path> input_paths = {s.model_dir};
  input_paths.insert(input_paths.end(), s.data.begin(), s.data.end());
  std::optional<RunDirGuard> guard;
  if (writer) {
    guard.emplace(s.out, s.mode, input_paths, [&control](const std::string& warning) {
      if (control.warn) control.warn(warning);
    });
  }
  if (writer && control.started) control.started(run_start(s, inputs, plans));
  return run_lengths(s, inputs, plans, guard ? guard->open_mode() : s.mode, control);
}

}  // namespace attngeom
