// attngeom demo: the embedded default. analyze on the bundled model organism and its
// held-out text, with a short length sweep and a synthetic-ablation section.
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "analysis/pipeline.h"
#include "analysis/run_dir.h"
#include "analysis/synth_section.h"
#include "cli/commands.h"
#include "util/error.h"
#include "util/version.h"

namespace attngeom::cli {
namespace {

namespace fs = std::filesystem;

struct DemoFlags {
  AnalysisSettings settings;
  std::string model_dir = (fs::path(kSourceDir) / "models" / "organism").string();
  std::string data = (fs::path(kSourceDir) / "models" / "organism" / "heldout.txt").string();
  std::string out = "demo-out";
  PrecisionFlags precision;
  int threads = 0;
};

}  // namespace

void add_demo_command(CLI::App& app) {
  auto f = std::make_shared<DemoFlags>();
  AnalysisSettings& s = f->settings;
  s.seq_len = 256;
  s.num_seqs = 24;
  s.lengths = {64, 128};
  CLI::App* cmd = app.add_subcommand("demo", "Analyse the bundled model organism end to end (the embedded default): --seq-len, a length sweep "
                                     "at 64 and 128 tokens, and the synthetic ablation");
  cmd->add_option("--model", f->model_dir, "model directory")->capture_default_str();
  cmd->add_option("--data", f->data, "held-out text")->capture_default_str();
  cmd->add_option("--out", f->out, "run directory (a previous demo run there is replaced)")->check(non_empty())->capture_default_str();
  cmd->add_option("--threads", f->threads, "worker threads (default: all cores)")->check(integer_in(1, 1024));
  add_precision_options(*cmd, f->precision);
  add_analysis_options(*cmd, s);
  cmd->callback([f] {
    AnalysisSettings& s = f->settings;
    s.model_dir = f->model_dir;
    s.data = {f->data};
    s.out = f->out;
    s.label = "organism";
    s.corpus.format = CorpusFormat::kText;
    s.mode = RunDirMode::kOverwrite;
    // Only an earlier demo run (label "organism" and a synth/ section, which analyze never
    // writes) may be replaced, not someone's analyze run.
    if (is_run_dir(s.out)) {
      const nlohmann::json previous = read_run_json(s.out);
      const auto label = previous.find("label");
      std::error_code ec;
      if (label == previous.end() || *label != s.label || !fs::exists(s.out / "synth" / "summary.csv", ec)) {
        throw InputError("--out " + s.out.string() + ": holds another run (not a demo run); choose another --out");
      }
    }
    const PrecisionChoice precision = resolve_precision(f->precision);
    s.precision = precision.precision;
    s.fp32_matmul = precision.fp32_matmul;
    apply_thread_count(f->threads);
    const RunControl control{nullptr, ::isatty(STDERR_FILENO) != 0, warn_analyze};
    run_analysis(s, control);  // no stop control: it always completes

    // The seed's ablation: four profiles at the organism's head size, every N.
    synth::SynthSweep sweep;
    sweep.dims = {64};
    sweep.lengths = {255};
    write_synth_section(sweep, s.aggregate.seed, s.out);
    write_run_report(s.out);
    std::printf("report: %s\n", fs::absolute(s.out / "report.html").string().c_str());
  });
}

}  // namespace attngeom::cli
