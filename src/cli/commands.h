#pragma once
// Each subcommand registers its flags (each declared once, with default and help)
// and its action on the root app.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "capture/query_rows.h"
#include "corpus/documents.h"
#include "model/engine.h"
#include "ops/gemm.h"
#include "util/error.h"

namespace attngeom {
struct AggregateOptions;
struct AnalysisSettings;
struct ProgressUpdate;
struct RunStart;
}  // namespace attngeom
namespace attngeom::geometry {
struct RowAnalysisOptions;
}

namespace attngeom::cli {

// --precision auto|fp32|bf16 and --fp32-matmul sgemm|bf16x3, shared by every
// command that runs the model.
// --device, --precision and --fp32-matmul.
struct PrecisionFlags {
  std::string precision = "auto";
  std::string fp32_matmul = "sgemm";
  std::string device = "cpu";
};
void add_precision_options(CLI::App& cmd, PrecisionFlags& flags);
// The flags as typed values (model/engine.h choose_compute): every command's one route to an
// Engine. A flag without effect here is warned about on stderr.
EngineOptions resolve_compute(const PrecisionFlags& flags);

// A setting's flag: "seq_len" is --seq-len. The library names settings; the CLI shows flags.
std::string flag_of(const std::string& setting);
std::string spelled(const SettingMessage& message);

// --queries, parsed into `queries` as it is read (errors name the flag).
CLI::Option* add_queries_option(CLI::App& cmd, QuerySelection& queries);

// The CLI's one parser of each kind of number: the whole text, or nothing.
std::optional<long long> parse_integer(std::string_view text);
std::optional<double> parse_number(const std::string& text);

// --format text|lines|jsonl and --text-field, shared by the commands that read a corpus;
// resolve_corpus_format takes --format when given, else jsonl where the names of the `data`
// files say so (.jsonl, .jsonl.gz, .jsonl.zst), else `format`'s default; it refuses
// --text-field beside another format.
void add_corpus_format_options(CLI::App& cmd, std::string& format, std::string& text_field);
CorpusFormat resolve_corpus_format(const CLI::App& cmd, const std::string& format,
                                   const std::vector<std::string>& data);

// Refuses an empty value (e.g. --out ''), which would otherwise read as "not given".
CLI::Validator non_empty();

// A seed: an integer in [0, 2^53), which run.json's readers (JavaScript too) hold exactly.
CLI::Validator seed_value();

// A number in [lo, hi], parsed whole. Unlike CLI::Range it refuses NaN and names its bounds
// exactly (CLI::Range prints them with %f: 1e-9 reads as 0.000000).
CLI::Validator number_in(double lo, double hi);
CLI::Validator integer_in(long long lo, long long hi);

// --threads N (0: all cores) for OpenMP and oneDNN.
void apply_thread_count(int threads);

// The geometry and statistics flags shared by analyze, demo and metrics, and (with them)
// the sequence and row flags shared by analyze and demo.
void add_geometry_options(CLI::App& cmd, geometry::RowAnalysisOptions& row, AggregateOptions& aggregate,
                          bool& per_sequence);
void add_analysis_options(CLI::App& cmd, attngeom::AnalysisSettings& settings);

// Writes RUN_DIR/report.html from the run's tables, once a command has finished them.
void write_run_report(const std::filesystem::path& dir);
// Prints a warning of analyze (or demo, which runs it).
void warn_analyze(const SettingMessage& message);
// Prints analyze's progress on stderr: a bar on a terminal, else a line per sequence.
void show_analyze_progress(const ProgressUpdate& update);
// Prints what analyze is about to compute on stderr, and warns when one document gives every sequence.
void show_analyze_start(const RunStart& start);

// Thrown when a run stops early on request (SIGINT/SIGTERM): exit code 130, resumable. main
// prints `progress` and the command that continues the run.
struct StoppedEarly {
  std::string progress;  // e.g. "stopped after 3/8 sequences"
};

void add_analyze_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_capture_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_demo_command(CLI::App& app);
void add_devices_command(CLI::App& app);
void add_export_command(CLI::App& app);
void add_merge_command(CLI::App& app);
void add_metrics_command(CLI::App& app);
void add_perplexity_command(CLI::App& app);
void add_prune_command(CLI::App& app);
void add_synth_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_report_command(CLI::App& app);

}  // namespace attngeom::cli
