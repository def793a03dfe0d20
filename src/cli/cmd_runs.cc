// attngeom metrics (capture dumps -> run directory) and attngeom merge (shards -> run).
#include <cstdio>

#include "analysis/dump_input.h"
#include "analysis/merge.h"
#include "analysis/option_table.h"
#include "cli/commands.h"
#include "util/error.h"
#include "util/plural.h"

namespace attngeom::cli {
namespace {

struct MetricsFlags {
  DumpAnalysisSettings settings;
  std::vector<std::string> dumps;
  std::string out;
  bool overwrite = false;
};

struct MergeFlags {
  std::vector<std::string> shards;
  std::string out;
  bool per_sequence = false;
};

}  // namespace

void add_metrics_command(CLI::App& app) {
  auto f = std::make_shared<MetricsFlags>();
  CLI::App* cmd = app.add_subcommand("metrics", "Analyse capture dumps (ours or any tool's) into a run directory");
  cmd->add_option("--dump", f->dumps, "capture dump .safetensors (repeat for several sequences)")->required();
  cmd->add_option("--out", f->out, "run directory to create")->check(non_empty())->required();
  cmd->add_option("--label", f->settings.label, "run label in reports (default: the directory name)");
  cmd->add_flag("--overwrite", f->overwrite, "replace an existing run in --out");
  add_geometry_options(*cmd, f->settings.row, f->settings.aggregate, f->settings.per_sequence);
  cmd->callback([f] {
    DumpAnalysisSettings& s = f->settings;
    for (const auto& d : f->dumps) s.dumps.emplace_back(d);
    s.out = f->out;
    s.mode = f->overwrite ? RunDirMode::kOverwrite : RunDirMode::kCreate;
    run_dump_analysis(s, [](const std::string& warning) {
      std::fprintf(stderr, "attngeom metrics: warning: %s\n", warning.c_str());
    });
    write_run_report(s.out);
    std::printf("wrote %s (%s)\n", s.out.string().c_str(), count_of(s.dumps.size(), "dump").c_str());
  });
}

void add_merge_command(CLI::App& app) {
  auto f = std::make_shared<MergeFlags>();
  CLI::App* cmd = app.add_subcommand("merge", "Merge shard run directories (analyze --shard i/n) into one run");
  cmd->add_option("shards", f->shards, "shard run directories")->required();
  cmd->add_option("--out", f->out, "merged run directory to create")->check(non_empty())->required();
  cmd->add_flag(flag_of("per_sequence"), f->per_sequence, std::string(option_spec("per_sequence").help));
  cmd->callback([f] {
    std::vector<std::filesystem::path> shards(f->shards.begin(), f->shards.end());
    merge_runs(shards, f->out, f->per_sequence, write_run_report);
    std::printf("wrote %s (merged %s)\n", f->out.c_str(), count_of(shards.size(), "shard").c_str());
  });
}

}  // namespace attngeom::cli
