// attngeom analyze: checkpoint + corpus -> run directory (tables, arrays, report).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <sstream>
#include <string_view>

#include "analysis/option_table.h"
#include "analysis/pipeline.h"
#include "cli/commands.h"
#include "cli/shard_option.h"
#if ATTNGEOM_WITH_MPI
#include "cli/mpi_analyze.h"
#endif
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
  bool resume = false, overwrite = false, no_resource_check = false;
  int threads = 0;
};

std::vector<int> parse_lengths(const std::string& text) {
  if (!text.empty() && text.back() == ',') throw InputError("--lengths '" + text + "': trailing comma");
  std::vector<int> lengths;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const long long value = parse_integer(item).value_or(0);
    if (value < 2 || value > (1 << 20)) {
      throw InputError("--lengths '" + text + "': expected comma-separated sequence lengths in [2, 2^20]");
    }
    if (std::find(lengths.begin(), lengths.end(), value) != lengths.end()) {
      throw InputError("--lengths '" + text + "': " + std::to_string(value) + " appears twice");
    }
    lengths.push_back(static_cast<int>(value));
  }
  std::sort(lengths.begin(), lengths.end());  // one order in run.json, whatever the flag's
  return lengths;
}

// The report and the summary line of a finished run, or how to continue a stopped one.
void finish_analysis(const AnalysisSettings& s, const AnalysisOutcome& outcome) {
  if (!outcome.complete) {
    throw StoppedEarly{"stopped after " + std::to_string(outcome.sequences_done) + "/" +
                       std::to_string(outcome.sequences_total) + " sequences"};
  }
  write_run_report(s.out);
  const std::string lengths = s.lengths.empty() ? "" : " over " + count_of(s.lengths.size() + 1, "length");
  std::printf("wrote %s (%s%s)\n", s.out.c_str(), count_of(outcome.sequences_done, "sequence").c_str(),
              lengths.c_str());
}

}  // namespace

void warn_analyze(const SettingMessage& message) {
  std::fprintf(stderr, "attngeom analyze: warning: %s\n", spelled(message).c_str());
}

void show_analyze_progress(const ProgressUpdate& update) {
  std::fputs(progress_text(update, ::isatty(STDERR_FILENO) != 0).c_str(), stderr);
}

void show_analyze_start(const RunStart& start) {
  std::fputs(run_start_text(start).c_str(), stderr);
  if (const auto warning = one_document_warning(start)) warn_analyze(*warning);
}

namespace {

// One command-line entry of the option table as its flag: a switch for a bool, else an option
// checked against the entry's range or names.
void add_table_option(CLI::App& cmd, const OptionSpec& spec, const OptionTarget& target) {
  const std::string name(spec.name), help(spec.help);
  CLI::Option* option = std::visit(
      [&](auto member) -> CLI::Option* {
        using T = std::remove_pointer_t<decltype(member)>;
        if constexpr (std::is_same_v<T, SeedMember>) {
          return cmd.add_option(flag_of(name), *member.value, help)->check(seed_value())->capture_default_str();
        } else if constexpr (std::is_same_v<T, OptionalSeedMember>) {
          return cmd
              .add_option_function<std::uint64_t>(
                  flag_of(name), [member](const std::uint64_t& seed) { *member.value = seed; }, help)
              ->check(seed_value());
        } else if constexpr (std::is_same_v<T, NamedBoolMember>) {
          return cmd
              .add_option_function<std::string>(
                  flag_of(name), [member](const std::string& v) { *member.value = v == member.if_true; }, help)
              ->check(CLI::IsMember({std::string(member.if_true), std::string(member.if_false)}))
              ->default_str(std::string(*member.value ? member.if_true : member.if_false));
        } else if constexpr (std::is_same_v<T, QuerySelection>) {
          return add_queries_option(cmd, *member);
        } else if constexpr (std::is_same_v<T, std::string>) {
          return cmd.add_option(flag_of(name), *member, help);
        } else if constexpr (std::is_same_v<T, int>) {
          return cmd.add_option(flag_of(name), *member, help)
              ->check(integer_in(static_cast<long long>(spec.lo), static_cast<long long>(spec.hi)))
              ->capture_default_str();
        } else if constexpr (std::is_same_v<T, bool>) {
          // A switch turns its default over: --every-n sets every_n, --no-bounds clears bounds.
          if (!*member) return cmd.add_flag(flag_of(name), *member, help);
          return cmd.add_flag_callback(
              flag_of("no_" + name), [member] { *member = false; }, help);
        } else if constexpr (std::is_same_v<T, geometry::R1Eta>) {
          return cmd
              .add_option_function<std::string>(
                  flag_of(name), [member](const std::string& v) { *member = parse_r1_eta(v); }, help)
              ->check(CLI::IsMember({"max", "mae"}))
              ->default_str(std::string(r1_eta_name(*member)));
        } else if constexpr (std::is_same_v<T, std::size_t>) {
          return cmd.add_option(flag_of(name), *member, help)
              ->check(integer_in(static_cast<long long>(spec.lo), static_cast<long long>(spec.hi)))
              ->capture_default_str();
        } else if constexpr (std::is_same_v<T, double>) {
          return cmd.add_option(flag_of(name), *member, help)
              ->check(number_in(spec.lo, spec.hi))
              ->capture_default_str();
        } else {
          throw std::logic_error("option " + name + ": no command-line form");
        }
      },
      spec.member(target));
  if (!spec.excluded_by.empty()) option->excludes(flag_of("no_" + std::string(spec.excluded_by)));
  if (!spec.needs.empty()) option->needs(flag_of(std::string(spec.needs)));
}

// The option table's entries `names`, in that order (the order of --help).
void add_table_options(CLI::App& cmd, const OptionTarget& target, std::initializer_list<std::string_view> names) {
  for (const std::string_view name : names) add_table_option(cmd, option_spec(name), target);
}

}  // namespace

// Flags shared by analyze, demo and metrics: the row geometry and the tables' statistics, one
// for each command-line entry of the option table.
void add_geometry_options(CLI::App& cmd, geometry::RowAnalysisOptions& row, AggregateOptions& aggregate,
                          bool& per_sequence) {
  const OptionTarget target{row, aggregate, nullptr, &per_sequence};
  for (const OptionSpec& spec : analysis_option_table()) {
    if (!spec.help.empty() && !is_run_level(spec.place)) add_table_option(cmd, spec, target);
  }
}

// Flags shared by analyze and demo: the sequences and rows, then the geometry.
void add_analysis_options(CLI::App& cmd, AnalysisSettings& s) {
  add_table_options(cmd, option_target(s), {"seq_len", "num_seqs", "queries"});
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
  const OptionTarget target = option_target(s);
  add_table_options(*cmd, target, {"skip", "seed", "pack", "pack_separator"});
  cmd->add_option("--lengths", f->lengths, "also run these sequence lengths (a length sweep), e.g. 128,256,512");
  add_table_options(*cmd, target, {"label"});
  cmd->add_flag("--resume", f->resume, "continue an interrupted run in --out");
  cmd->add_flag("--overwrite", f->overwrite, "replace an existing run in --out");
  cmd->add_option(
      "--shard", f->shard,
      "process only shard i of n (i/n, or auto: the Slurm array task or MPI rank); combine with attngeom merge");
  add_table_options(*cmd, target, {"force"});
  cmd->add_flag("--no-resource-check", f->no_resource_check,
                "skip the pre-flight check of memory and free disk against the run's estimate");
  cmd->add_option_function<std::string>(
         flag_of("memory_check"),
         [&s](const std::string& v) {
           s.memory_check = v == "strict" ? MemoryCheck::kStrict : v == "off" ? MemoryCheck::kOff : MemoryCheck::kWarn;
         },
         "mapped weights beyond the memory limit (the smaller of MemAvailable and the cgroup's): warn and stream "
         "them from storage, strict refuses, off checks no memory")
      ->check(CLI::IsMember({"strict", "warn", "off"}))
      ->default_str("warn");
  add_table_options(*cmd, target, {"max_document_bytes", "max_corpus_bytes"});
  cmd->add_option("--threads", f->threads, "worker threads (default: all cores)")->check(integer_in(1, 1024));
  add_precision_options(*cmd, f->precision);
  add_analysis_options(*cmd, s);
  cmd->callback([f, cmd] {
    AnalysisSettings& s = f->settings;
    if (f->resume && f->overwrite) throw InputError("--resume and --overwrite cannot be combined");
    s.model_dir = f->model_dir;
    s.out = f->out;
    s.corpus.format = resolve_corpus_format(*cmd, f->format, s.data);
    if (!f->lengths.empty()) s.lengths = parse_lengths(f->lengths);
    if (!f->shard.empty()) {
      const ShardChoice shard = parse_shard(f->shard, [](const char* name) { return std::getenv(name); });
      s.shard_index = shard.index;
      s.shard_count = shard.count;
    }
    s.check_resources = !f->no_resource_check;
    s.mode = f->resume ? RunDirMode::kResume : f->overwrite ? RunDirMode::kOverwrite : RunDirMode::kCreate;
    const EngineOptions compute = resolve_compute(f->precision);
    s.device = compute.device;
    s.gpu = compute.gpu;
    // Each process of a launch on one node takes its own GPU unless the user named one.
    if (s.device == Device::kCuda && !compute.gpu_named) {
      s.gpu = launched_gpu([](const char* name) -> const char* { return std::getenv(name); }, visible_gpus());
    }
    s.precision = compute.precision;
    s.fp32_matmul = compute.fp32_matmul;
    apply_thread_count(f->threads);  // per process: under mpirun, per rank
#if ATTNGEOM_WITH_MPI
    // Started by mpirun as one of several ranks, without --shard: one job, its records
    // gathered by rank 0 (with --shard each rank stays an independent shard, as before).
    if (f->shard.empty()) {
      const std::optional<ShardChoice> launch = mpi_launch([](const char* name) { return std::getenv(name); });
      if (launch && launch->count > 1) {
        analyze_as_mpi_rank(s, launch->count, [&s](const AnalysisOutcome& outcome) { finish_analysis(s, outcome); });
        return;
      }
    }
#endif

    std::signal(SIGINT, request_stop);
    std::signal(SIGTERM, request_stop);
    const RunControl control{&g_stop_requested, show_analyze_progress, warn_analyze, nullptr, show_analyze_start};
    finish_analysis(s, run_analysis(s, control));
  });
}

}  // namespace attngeom::cli
