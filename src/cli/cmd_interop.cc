// attngeom export (a run's head scores in a neighbouring tool's format) and attngeom compare
// (other tools' head sets against a run's types and scores): docs/method.md section 6.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "cli/commands.h"
#include "interop/compare.h"
#include "interop/head_scores.h"
#include "interop/head_set_files.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/plural.h"

namespace attngeom::cli {
namespace {

namespace fs = std::filesystem;
using interop::HeadSetFormat;

struct ExportFlags {
  std::string run_dir;
  std::string format;
  std::string score;
  std::string type;
  int top = 0;
  std::string out;
};

struct CompareFlags {
  std::string run_dir;
  std::vector<std::string> heads;
  std::string out;
  std::uint64_t seed = 1234;
  std::size_t bootstrap = 2000;
};

interop::FileGrid file_grid(const interop::RunHeads& run) {
  return {run.table.grid.layers, run.table.grid.heads, run.kv_heads};
}

// Every exported value must be defined: a NaN would be no gate and no score to the neighbour.
void require_defined(const std::vector<double>& values, const interop::RunHeads& run, const std::string& score) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      throw InputError((run.run_dir / "heads.csv").string() + ": " + score + " is undefined for head " +
                       run.table.grid.name(i) + " (export another --score)");
    }
  }
}

void run_export(const ExportFlags& f) {
  const HeadSetFormat format = interop::parse_format(f.format);
  if (f.score.empty() == f.type.empty())
    throw SettingError({"give one of ", setting("score"), " or ", setting("type")});
  if (f.top > 0 && (format != HeadSetFormat::kQrheadYaml || f.score.empty())) {
    throw SettingError(
        {setting("top"), " selects heads by ", setting("score"), " for ", setting("format"), " qrhead-yaml only"});
  }
  check_output_path(f.out, {setting("out"), " " + f.out}, "a file path", {f.run_dir});
  const interop::RunHeads run = interop::read_run_heads(f.run_dir);
  const interop::FileGrid grid = file_grid(run);
  const std::vector<double> per_head = f.score.empty() ? run.type_indicator(f.type) : run.score(f.score);
  require_defined(per_head, run, f.score);
  if (format == HeadSetFormat::kDuo) {
    interop::write_duo_tsv(f.out, grid, per_head);
  } else if (format == HeadSetFormat::kRetrievalJson) {
    std::vector<std::vector<double>> lists(per_head.size());
    const auto sequences = f.score.empty() ? decltype(run.per_sequence("")){} : run.per_sequence(f.score);
    for (const auto& seq : sequences) require_defined(seq, run, f.score + " (per sequence, records/)");
    for (std::size_t i = 0; i < per_head.size(); ++i) {
      if (sequences.empty()) lists[i] = {per_head[i]};
      for (const auto& seq : sequences) lists[i].push_back(seq[i]);
    }
    interop::write_retrieval_json(f.out, grid, lists);
  } else {
    std::vector<bool> member(per_head.size());
    if (f.top > 0) {
      std::vector<std::size_t> order(per_head.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(),
                       [&](std::size_t a, std::size_t b) { return per_head[a] > per_head[b]; });
      for (std::size_t r = 0; r < order.size() && r < static_cast<std::size_t>(f.top); ++r) member[order[r]] = true;
    } else {
      for (std::size_t i = 0; i < member.size(); ++i) member[i] = per_head[i] >= 0.5;
    }
    interop::write_qrhead_yaml(f.out, grid, member);
  }
  std::printf("wrote %s (%s, %s)\n", f.out.c_str(), interop::format_name(format),
              (f.score.empty() ? "type " + f.type : "score " + f.score).c_str());
}

void run_compare(const CompareFlags& f) {
  const fs::path out = f.out.empty() ? fs::path(f.run_dir) / "compare.csv" : fs::path(f.out);
  for (const std::string& spec : f.heads) {
    if (spec.find_first_of(",\n") != std::string::npos) {
      throw SettingError(
          {setting("heads"), " " + spec + ": a file name with a comma or newline cannot go into the CSV"});
    }
  }
  check_output_path(out, {setting("out"), " " + out.string()}, "a .csv file path");
  const interop::RunHeads run = interop::read_run_heads(f.run_dir);
  std::vector<interop::ImportedHeadSet> sets;
  for (const std::string& spec : f.heads) sets.push_back(interop::read_head_set(spec, file_grid(run)));
  stats::BootstrapOptions bootstrap;
  bootstrap.resamples = f.bootstrap;
  const auto rows = interop::compare_head_sets(run, f.heads, sets, bootstrap, f.seed);
  interop::write_comparison_csv(out, rows);
  // One note per file and reason, naming the rows it holds for.
  std::map<std::pair<std::string, std::string>, std::string> notes;
  for (const interop::ComparisonRow& row : rows) {
    if (row.caveat.empty()) continue;
    std::string& names = notes[{row.file, row.caveat}];
    names += (names.empty() ? "" : ", ") + row.ours;
  }
  for (const auto& [where, names] : notes) {
    std::fprintf(stderr, "attngeom compare: note: %s vs %s: %s\n", where.first.c_str(), names.c_str(),
                 where.second.c_str());
  }
  // The run's report shows the comparison when it lies in the run directory.
  if (fs::equivalent(out.parent_path().empty() ? fs::path(".") : out.parent_path(), f.run_dir))
    write_run_report(f.run_dir);
  std::printf("wrote %s (%s)\n", out.string().c_str(), count_of(sets.size(), "head-set file").c_str());
}

}  // namespace

void add_export_command(CLI::App& app) {
  auto f = std::make_shared<ExportFlags>();
  CLI::App* cmd =
      app.add_subcommand("export", "Write a run's head scores as DuoAttention, Retrieval-Head or QRHead files");
  cmd->add_option("run_dir", f->run_dir, "run directory written by `attngeom analyze`")->required();
  cmd->add_option("--format", f->format, "duo (full_attention_heads.tsv), retrieval-json or qrhead-yaml")->required();
  cmd->add_option("--score", f->score, "per-head score: f_small, sink_mass, last_mass or entropy");
  cmd->add_option("--type", f->type, "heads of one type instead of a score: retriever, mixer or reset");
  cmd->add_option("--top", f->top, "qrhead-yaml with --score: the K highest-scoring heads (default: score >= 0.5)")
      ->check(integer_in(1, 1 << 30));
  cmd->add_option("--out", f->out, "output file")->check(non_empty())->required();
  cmd->callback([f] { run_export(*f); });
}

void add_compare_command(CLI::App& app) {
  auto f = std::make_shared<CompareFlags>();
  CLI::App* cmd = app.add_subcommand("compare", "Compare other tools' head sets with a run's types and scores");
  cmd->add_option("run_dir", f->run_dir, "run directory written by `attngeom analyze`")->required();
  cmd->add_option("--heads", f->heads,
                  "head-set file: .tsv (DuoAttention), .json (Retrieval Head), .yaml (QRHead), or FORMAT:FILE")
      ->required();
  cmd->add_option("--out", f->out, "output CSV (default: RUN_DIR/compare.csv, shown in the run's report)")
      ->check(non_empty());
  cmd->add_option("--seed", f->seed, "bootstrap seed")->check(seed_value());
  cmd->add_option("--bootstrap", f->bootstrap, "bootstrap resamples of the Spearman CI")->check(integer_in(2, 1000000));
  cmd->callback([f] { run_compare(*f); });
}

}  // namespace attngeom::cli
