#include "analysis/pipeline.h"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <optional>

#include "analysis/option_table.h"
#include "analysis/outputs.h"
#include "analysis/progress.h"
#include "analysis/provenance.h"
#include "analysis/record.h"
#include "analysis/resources.h"
#include "analysis/row_fields.h"
#include "analysis/sequence_analyzer.h"
#include "capture/query_rows.h"
#include "corpus/sequences.h"
#include "io/checkpoint.h"
#include "io/tokenizer.h"
#include "model/engine.h"
#include "util/csv.h"
#include "util/error.h"
#include "util/machine.h"
#include "util/memory_limit.h"
#include "util/plural.h"
#include "util/sha256.h"

namespace attngeom {
namespace {

namespace fs = std::filesystem;

}  // namespace

namespace {

// The entries of the option table at `places`, each under its run.json key.
nlohmann::json options_at(const geometry::RowAnalysisOptions& row, const AggregateOptions& aggregate,
                          std::initializer_list<OptionPlace> places) {
  geometry::RowAnalysisOptions row_copy = row;  // the table's members are writable; these copies are only read
  AggregateOptions aggregate_copy = aggregate;
  const OptionTarget target{row_copy, aggregate_copy};
  nlohmann::json out = nlohmann::json::object();
  for (const OptionSpec& spec : analysis_option_table()) {
    if (std::find(places.begin(), places.end(), spec.place) != places.end()) {
      out[std::string(spec.name)] = option_json(spec, target);
    }
  }
  return out;
}

}  // namespace

nlohmann::json record_options_json(const geometry::RowAnalysisOptions& row, const AggregateOptions& aggregate) {
  return options_at(row, aggregate, {OptionPlace::kRecord, OptionPlace::kStats});
}

nlohmann::json options_json(const geometry::RowAnalysisOptions& row, const AggregateOptions& aggregate) {
  nlohmann::json options =
      options_at(row, aggregate, {OptionPlace::kRecord, OptionPlace::kStats, OptionPlace::kTables});
  options["taxonomy"] = options_at(row, aggregate, {OptionPlace::kTaxonomy});
  return options;
}

namespace {

// What stays the same across the lengths of a sweep: model, tokenizer, corpus.
struct Inputs {
  const Checkpoint& checkpoint;
  const Tokenizer& tokenizer;
  const Corpus& corpus;
};

// Whether this process writes the run directory: a process alone, or rank 0 of an MPI job.
bool writes_run_dir(const RunControl& control) { return control.ranks == nullptr || control.ranks->rank() == 0; }

// The settings of one length's run directory: the run's, with that seq_len. Only the main
// directory keeps the sweep's lengths, so that resuming with other lengths is refused.
nlohmann::json length_settings_json(const AnalysisSettings& s, int seq_len) {
  AnalysisSettings length_settings = s;
  length_settings.seq_len = seq_len;
  if (seq_len != s.seq_len) length_settings.lengths.clear();
  return settings_json(length_settings);
}

// One sequence length of a run, planned before anything is written: the sequences, the
// captured rows and the record schema. Every input error (length beyond the model,
// no sequence available, a query row beyond the length) surfaces here, before the run directory exists.
struct LengthPlan {
  int seq_len = 0;
  fs::path out;
  SequenceSet sequences;
  std::vector<int> rows;  // captured query positions of every sequence
  RecordSchema schema;
  std::vector<std::size_t> mine;  // this shard's sequences
  nlohmann::json settings;        // settings_json with this seq_len
};

LengthPlan plan_length(const AnalysisSettings& s, const Inputs& in, const fs::path& out, int seq_len,
                       const RunControl& control) {
  const ModelConfig& c = in.checkpoint.config();
  const bool main_length = seq_len == s.seq_len;
  if (seq_len > c.max_positions && !s.force) {
    throw SettingError({setting(main_length ? "seq_len" : "lengths"),
                        (main_length ? " " : ": ") + std::to_string(seq_len) +
                            " exceeds the model's max_position_embeddings " + std::to_string(c.max_positions) +
                            " (use ",
                        setting("force"), " to run anyway)"});
  }
  LengthPlan plan;
  plan.seq_len = seq_len;
  plan.out = out;
  plan.settings = length_settings_json(s, seq_len);
  const SequenceOptions seq_options{seq_len,   s.pack, s.num_seqs, s.skip, s.shuffle_seed, in.tokenizer.bos_id(),
                                    s.pack_bos};
  plan.sequences = make_sequences(
      in.corpus,
      [&](const std::string& text, const std::string& where) { return in.tokenizer.encode_document(text, where); },
      seq_options);
  const std::size_t made = plan.sequences.sequences.size();
  if (made < static_cast<std::size_t>(s.num_seqs) && control.warn) {
    control.warn({setting("num_seqs"),
                  " " + std::to_string(s.num_seqs) + ", but the corpus gives " + count_of(made, "sequence") + " of " +
                      std::to_string(seq_len) + " tokens (" + count_of(plan.sequences.candidates, "window") + ", ",
                  setting("skip"),
                  " " + std::to_string(s.skip) + "; " + count_of(plan.sequences.short_documents, "document") +
                      " shorter than one window)"});
  }
  const SettingMessage subject = main_length ? SettingMessage{setting("queries")}
                                             : SettingMessage{setting("queries"), " (at ", setting("lengths"),
                                                              " " + std::to_string(seq_len) + ")"};
  plan.rows = resolve_query_rows(s.queries, seq_len, subject);
  plan.schema = make_record_schema(static_cast<std::size_t>(seq_len), s.row.every_n);
  for (std::size_t i = 0; i < plan.sequences.sequences.size(); ++i) {
    if (static_cast<int>(i % static_cast<std::size_t>(s.shard_count)) == s.shard_index) plan.mine.push_back(i);
  }
  if (plan.mine.empty()) {  // an empty shard could never be aggregated, nor merged
    throw SettingError({setting("shard"),
                        " " + std::to_string(s.shard_index) + "/" + std::to_string(s.shard_count) +
                            ": no sequence falls to this shard (the corpus gives " + std::to_string(made) + " at ",
                        setting("seq_len"),
                        " " + std::to_string(seq_len) + "); use at most " + count_of(made, "shard")});
  }
  return plan;
}

// Records a length still has to write: all of them, less those a resumed run holds.
std::size_t records_to_write(const LengthPlan& plan, bool resuming) {
  if (!resuming || !is_run_dir(plan.out)) return plan.mine.size();
  std::size_t done = 0;
  std::error_code ec;
  for (const std::size_t i : plan.mine) done += fs::is_regular_file(record_path(plan.out / "records", i), ec) ? 1 : 0;
  return plan.mine.size() - done;
}

// Enough to time storage, small enough to cost a fraction of a second.
constexpr std::uint64_t kReadRateSample = std::uint64_t{16} << 20;

const fs::path& largest_shard(const Checkpoint& checkpoint) {
  const auto& shards = checkpoint.shards();
  ATTNGEOM_CHECK(!shards.empty());
  std::error_code ec;
  return std::max_element(shards.begin(), shards.end(),
                          [&ec](const ShardInfo& a, const ShardInfo& b) {
                            return fs::file_size(a.path, ec) < fs::file_size(b.path, ec);
                          })
      ->path;
}

// Memory for the largest length in flight (against the tighter of MemAvailable and the
// cgroup's limit), disk for every record still to write.
void preflight(const AnalysisSettings& s, const Inputs& in, const std::vector<LengthPlan>& plans,
               const RunControl& control) {
  const ModelConfig& c = in.checkpoint.config();
  ResourceEstimate need;
  need.weight_bytes = in.checkpoint.weight_bytes();
  for (const LengthPlan& plan : plans) {
    const LengthWork work{plan.seq_len, plan.rows.size(), &plan.schema,
                          records_to_write(plan, s.mode == RunDirMode::kResume)};
    need.working_bytes = std::max(need.working_bytes, working_memory_bytes(c, work, omp_get_max_threads()));
    need.disk_bytes =
        std::min(need.disk_bytes + output_disk_bytes(c, work), std::numeric_limits<std::uint64_t>::max() / 2);
  }
  const std::optional<MemoryLimit> memory = process_memory_limit();
  // The other ranks of an MPI job write no run directory: only their memory is checked.
  const std::optional<std::uint64_t> disk = writes_run_dir(control) ? free_disk_bytes(s.out) : std::nullopt;
  if (check_resources(need, memory, disk, s.out, s.memory_check) && control.warn) {
    control.warn(streaming_warning(need, *memory, measured_read_rate(largest_shard(in.checkpoint), kReadRateSample)));
  }
}

// run.json of one length's run directory, before its sequences are computed.
nlohmann::json run_json(const AnalysisSettings& s, const Inputs& in, const LengthPlan& plan, const Engine& engine,
                        const RunControl& control) {
  nlohmann::json run = {{"format", "attngeom-run-v1"},
                        {"label", s.label.empty() ? default_run_label(plan.out) : s.label},
                        {"attngeom", tool_provenance()},
                        {"created", utc_timestamp()},
                        {"machine", machine_provenance()},
                        {"model", model_provenance(in.checkpoint)},
                        {"precision", std::string(precision_name(s.precision))},
                        {"matmul", std::string(engine.backend().kernel())},
                        {"device", std::string(device_name(engine.device()))},
                        {"tokenizer", tokenizer_provenance(in.tokenizer)},
                        {"seq_len", plan.seq_len},
                        {"n_grid", plan.schema.n_grid},
                        {"queries", plan.settings["queries"]},
                        {"corpus", corpus_provenance(in.corpus, plan.sequences)},
                        {"options", options_json(s.row, s.aggregate)},
                        {"shard", {{"index", s.shard_index}, {"count", s.shard_count}}},
                        {"settings", plan.settings}};
  if (!s.lengths.empty() && plan.out == s.out) run["lengths"] = s.lengths;
  for (const char* key : {"format", "text_field", "pack", "pack_separator", "num_seqs", "skip", "seed"}) {
    if (plan.settings.contains(key)) run["corpus"][key] = plan.settings[key];
  }
  if (control.ranks != nullptr) run["mpi_ranks"] = control.ranks->size();
  return run;
}

// What every rank of an MPI job must share for its records to belong to one run: the settings
// but the paths (a node may hold its copy elsewhere), the model's config and weight headers, and
// the sequences' tokens.
std::string job_fingerprint(const Inputs& in, const LengthPlan& plan) {
  nlohmann::json settings = plan.settings;
  settings.erase("model_dir");
  settings.erase("data");
  const std::string text = settings.dump() + model_provenance(in.checkpoint).dump();
  std::vector<std::uint8_t> bytes(text.begin(), text.end());
  for (const auto& sequence : plan.sequences.sequences) {
    const auto* tokens = reinterpret_cast<const std::uint8_t*>(sequence.tokens.data());
    bytes.insert(bytes.end(), tokens, tokens + sequence.tokens.size() * sizeof(sequence.tokens[0]));
  }
  return sha256_hex(bytes);
}

// One length: this process's sequences not finished before, each written as a record the
// moment it is done. Under MPI rank r computes k mod K = r; rank 0 also writes the records
// the other ranks send, between its own sequences and after them.
AnalysisOutcome run_one_length(const AnalysisSettings& s, const Inputs& in, const LengthPlan& plan, RunDirMode mode,
                               const RunControl& control) {
  const ModelConfig& c = in.checkpoint.config();
  JobRanks* const ranks = control.ranks;
  std::optional<RunDir> run_dir;
  if (writes_run_dir(control)) run_dir.emplace(plan.out, plan.settings, mode);
  std::vector<std::size_t> finished = run_dir ? run_dir->finished_sequences() : std::vector<std::size_t>{};
  if (ranks != nullptr) finished = ranks->start_length(job_fingerprint(in, plan), finished);

  Engine engine(c, in.checkpoint.weights(), {Device::kCpu, s.precision, s.fp32_matmul});
  nlohmann::json run;
  if (run_dir) {
    run = run_json(s, in, plan, engine, control);
    run["sequences_done"] = finished.size();
    run_dir->write_json("run.json", run);
  }

  Transformer& model = engine.model();
  SequenceAnalyzer analyzer(c, plan.schema, s.row);
  ForwardRequest request;
  for (int l = 0; l < c.layers; ++l) request.capture_layers.push_back(l);
  request.capture_rows = plan.rows;

  const std::size_t rank = ranks != nullptr ? static_cast<std::size_t>(ranks->rank()) : 0;
  const std::size_t size = ranks != nullptr ? static_cast<std::size_t>(ranks->size()) : 1;
  std::size_t done = 0, owed = 0;  // owed: records the other ranks have still to send
  std::vector<std::size_t> todo;   // this rank's, never recomputed once finished
  for (const std::size_t i : plan.mine) {
    if (std::binary_search(finished.begin(), finished.end(), i)) {
      ++done;
    } else if (i % size == rank) {
      todo.push_back(i);
    } else {
      ++owed;
    }
  }
  Progress progress(plan.mine.size(), static_cast<std::size_t>(plan.seq_len), control.progress_bar);
  const auto receive = [&](bool wait) {
    for (std::size_t n = ranks->receive_records(run_dir->records_dir(), wait); n > 0; --n, --owed) {
      progress.sequence_done(++done);
    }
  };
  std::size_t computed = 0;
  for (const std::size_t i : todo) {
    if (control.stop != nullptr && control.stop->load()) break;
    const std::vector<int>& tokens = plan.sequences.sequences[i].tokens;
    analyzer.begin(i, tokens, request.capture_rows);
    model.forward(tokens, request, &analyzer, nullptr);
    ++computed;
    if (!run_dir) {
      const fs::path staged = record_path(ranks->staging_dir(), i);
      write_record(staged, plan.schema, analyzer.record());
      ranks->send_record(i, staged);
      continue;
    }
    write_record(record_path(run_dir->records_dir(), i), plan.schema, analyzer.record());
    progress.sequence_done(++done);
    if (owed > 0) receive(false);
  }
  if (!run_dir) {
    ranks->finish_sending();
    return {computed == todo.size(), computed, todo.size()};
  }
  while (owed > 0) receive(true);

  AnalysisOutcome outcome{done == plan.mine.size(), done, plan.mine.size()};
  run["sequences_done"] = done;
  if (outcome.complete) {
    run["taxonomy"] = taxonomy_json(finish_run_dir(plan.out, c.kv_heads, s.aggregate, s.per_sequence));
    run["complete"] = true;
  }
  run_dir->write_json("run.json", run);
  return outcome;
}

// The main length, then the sweep's lengths, each a run directory.
AnalysisOutcome run_lengths(const AnalysisSettings& s, const Inputs& inputs, const std::vector<LengthPlan>& plans,
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

}  // namespace

nlohmann::json settings_json(const AnalysisSettings& s) {
  nlohmann::json settings = {{"model_dir", fs::absolute(s.model_dir).string()},
                             {"data", s.data},
                             {"format", s.corpus.format == CorpusFormat::kText    ? "text"
                                        : s.corpus.format == CorpusFormat::kLines ? "lines"
                                                                                  : "jsonl"},
                             {"text_field", s.corpus.text_field},
                             {"max_document_bytes", s.corpus.max_document_bytes},
                             {"seq_len", s.seq_len},
                             {"lengths", s.lengths},
                             {"num_seqs", s.num_seqs},
                             {"skip", s.skip},
                             {"seed", s.shuffle_seed ? nlohmann::json(*s.shuffle_seed) : nlohmann::json(nullptr)},
                             {"pack", s.pack},
                             {"queries", s.queries.text},
                             {"shard", {s.shard_index, s.shard_count}},
                             {"precision", std::string(precision_name(s.precision))}};
  // Only bf16x3 runs name their fp32 kernel, and only packed runs their separator (so other
  // runs keep resuming from older run.json).
  if (s.precision == Precision::kFp32 && s.fp32_matmul == Fp32Matmul::kBf16x3) settings["fp32_matmul"] = "bf16x3";
  if (s.pack) settings["pack_separator"] = s.pack_bos ? "bos" : "none";
  settings.update(record_options_json(s.row, s.aggregate));
  return settings;
}

void write_length_sweep(const fs::path& out, const AggregateOptions& options,
                        const std::vector<std::pair<int, fs::path>>& runs, int kv_heads) {
  CsvWriter table(
      {"seq_len", "n", "heads", "precision_mean", "recall_mean", "f_mean", "margin_mean", "separated_mean"});
  for (const auto& [seq_len, dir] : runs) {
    const std::vector<fs::path> records = list_records(dir / "records");
    const RunAggregate run = aggregate_records(records, kv_heads, options);
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
  table.write(out / "length_sweep.csv");
}

AggregateOptions aggregate_options_of_run(const nlohmann::json& run, const fs::path& dir) {
  const auto section = [](const nlohmann::json& object, const char* key) {
    return object.is_object() ? object.value(key, nlohmann::json::object()) : nlohmann::json::object();
  };
  const nlohmann::json settings = section(run, "settings");
  const nlohmann::json options = section(run, "options");
  const nlohmann::json taxonomy = section(options, "taxonomy");
  geometry::RowAnalysisOptions row;  // held by the records, not read back
  AggregateOptions o;
  const OptionTarget target{row, o};
  for (const OptionSpec& spec : analysis_option_table()) {
    if (spec.place == OptionPlace::kRecord) continue;
    const auto& [object, where] = spec.place == OptionPlace::kStats      ? std::pair(&settings, "settings.")
                                  : spec.place == OptionPlace::kTaxonomy ? std::pair(&taxonomy, "options.taxonomy.")
                                                                         : std::pair(&options, "options.");
    const std::string key(spec.name);
    if (!object->is_object() || !object->contains(key)) continue;  // an older run: the default
    const nlohmann::json& value = (*object)[key];
    if (!value.is_number()) throw InputError((dir / "run.json").string() + ": '" + where + key + "' must be a number");
    std::visit(
        [&](auto member) {
          if constexpr (std::is_same_v<decltype(member), SeedMember>) {
            *member.value = value.get<std::uint64_t>();
          } else if constexpr (std::is_arithmetic_v<std::remove_pointer_t<decltype(member)>>) {
            *member = value.get<std::remove_pointer_t<decltype(member)>>();
          }
        },
        spec.member(target));
  }
  return o;
}

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
  return run;
}

// The label a resumed run keeps: the one it was started with. A different --label is refused
// (a run relabelled halfway would name one set of tables two ways); without --label, a label
// given at the start stays, and a default (the directory's name) stays the default.
std::string resumed_label(const AnalysisSettings& s) {
  if (s.mode != RunDirMode::kResume || !is_run_dir(s.out)) return s.label;
  const nlohmann::json run = read_run_json(s.out);
  const auto stored = run.find("label");
  if (stored == run.end() || !stored->is_string()) return s.label;
  const std::string label = stored->get<std::string>();
  if (!s.label.empty() && s.label != label) {
    throw SettingError(
        {setting("label"),
         " " + s.label + ": the run in " + s.out.string() + " is labelled '" + label + "'; resume it without ",
         setting("label"), " (it keeps its label) or with ", setting("label"), " " + label});
  }
  return label == default_run_label(s.out) ? s.label : label;
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
  if (writer) print_corpus_warnings(corpus, "attngeom analyze");
  const Inputs inputs{checkpoint, tokenizer, corpus};

  // Every length is planned (and every input error raised) before anything is written.
  std::vector<LengthPlan> plans;
  plans.push_back(plan_length(s, inputs, s.out, s.seq_len, control));
  for (const int length : s.lengths) {
    if (length == s.seq_len) continue;
    plans.push_back(plan_length(s, inputs, s.out / "lengths" / std::to_string(length), length, control));
  }
  if (s.check_resources) preflight(s, inputs, plans, control);

  // A run that fails or stops before its first record (e.g. weights that overflow float32)
  // leaves the output directory as it was; once records exist they stay for --resume.
  std::vector<fs::path> input_paths = {s.model_dir};
  input_paths.insert(input_paths.end(), s.data.begin(), s.data.end());
  std::optional<RunDirGuard> guard;
  if (writer) guard.emplace(s.out, s.mode, input_paths);
  return run_lengths(s, inputs, plans, guard ? guard->open_mode() : s.mode, control);
}

}  // namespace attngeom
