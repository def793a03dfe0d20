// attngeom demo: the embedded default. analyze on the bundled model organism and on the
// planted model (head types known by construction), on the organism's held-out text, with a
// short length sweep, the synthetic ablation, and one report showing both side by side.
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "analysis/pipeline.h"
#include "analysis/run_dir.h"
#include "analysis/synth_section.h"
#include "cli/commands.h"
#include "report/report.h"
#include "util/error.h"
#include "util/version.h"

namespace attngeom::cli {
namespace {

namespace fs = std::filesystem;

const fs::path kModels = fs::path(kSourceDir) / "models";

const std::string kDefaultOrganism = (kModels / "organism").string();
const std::string kDefaultPlanted = (kModels / "planted").string();

struct DemoFlags {
  AnalysisSettings settings;
  std::string organism = kDefaultOrganism;
  std::string planted = kDefaultPlanted;
  std::string data = (kModels / "organism" / "heldout.txt").string();
  std::string out = "demo-out";
  PrecisionFlags precision;
  int threads = 0;
};

// The two runs, as OUT/LABEL; the side-by-side report is OUT/report.html.
constexpr const char* kOrganism = "organism";
constexpr const char* kPlanted = "planted";

const char* const kOrganismNote =
    "A 4-layer, 4-head LLaMA trained for this project on 14M tokens of English (models/organism/MODEL_CARD.md), "
    "small and on little data. As the literature predicts for such models, its attention sink is only starting "
    "to grow: one layer-2 head gives BOS about a fifth of its attention, the rest little more than the uniform "
    "share, so no head is yet a Reset or a Mixer. All heads are unclassified.";
const char* const kPlantedNote =
    "A LLaMA checkpoint with no training, every weight written from a formula (models/planted/MODEL_CARD.md). "
    "Its 16 heads are built to be 4 Retriever, 4 Reset and 4 Mixer heads and 4 controls, so the taxonomy must "
    "show every type, each in its planted place (planted_types.csv). It checks the pipeline against ground "
    "truth; it is not a language model.";

bool is_demo_run(const fs::path& dir, const std::string& label) {
  if (!is_run_dir(dir)) return false;
  const nlohmann::json run = read_run_json(dir);
  const auto found = run.find("label");
  return found != run.end() && *found == label;
}

// Only an earlier demo output may be replaced: OUT holding nothing but organism/ (a run
// labelled organism with a synth/ section, which analyze never writes), planted/ and
// report.html. Never someone's analyze run or other files.
void check_demo_out(const fs::path& out) {
  std::error_code ec;
  if (!fs::exists(out, ec)) return;
  const std::string refused = "--out " + out.string() + ": ";
  if (is_run_dir(out)) {
    if (is_demo_run(out, kOrganism) && fs::exists(out / "synth" / "summary.csv", ec)) {
      throw InputError(refused + "holds a demo run of the earlier one-model layout; remove it or choose another --out");
    }
    throw InputError(refused + "holds another run (not a demo run); choose another --out");
  }
  if (!fs::is_directory(out, ec)) throw InputError(refused + "is not a directory; choose another --out");
  bool empty = true;
  for (const auto& entry : fs::directory_iterator(out, ec)) {
    empty = false;
    const std::string name = entry.path().filename().string();
    if (name != kOrganism && name != kPlanted && name != "report.html") {
      throw InputError(refused + "holds " + name + ", which a demo does not write; choose another --out");
    }
  }
  if (ec) throw InputError(refused + "cannot list: " + ec.message());
  if (empty) return;
  if (!is_demo_run(out / kOrganism, kOrganism) || !fs::exists(out / kOrganism / "synth" / "summary.csv", ec) ||
      (fs::exists(out / kPlanted, ec) && !is_demo_run(out / kPlanted, kPlanted))) {
    throw InputError(refused + "holds another run (not a demo run); choose another --out");
  }
}

void analyze_model(AnalysisSettings s, const std::string& model_dir, const fs::path& out, const char* label) {
  s.model_dir = model_dir;
  s.out = out / label;
  s.label = label;
  // The demo's one held-out document is its choice, so only the line is shown, not the warning.
  const RunControl control{nullptr, show_analyze_progress, warn_analyze, nullptr,
                           [](const RunStart& start) { std::fputs(run_start_text(start).c_str(), stderr); }};
  run_analysis(s, control);  // no stop control: it always completes
}

}  // namespace

void add_demo_command(CLI::App& app) {
  auto f = std::make_shared<DemoFlags>();
  AnalysisSettings& s = f->settings;
  s.seq_len = 256;
  s.num_seqs = 24;
  s.lengths = {64, 128};
  CLI::App* cmd =
      app.add_subcommand("demo",
                         "Analyse the bundled model organism and the planted model end to end (the embedded "
                         "default): --seq-len, a length sweep at 64 and 128 tokens, the synthetic ablation, and "
                         "one report of both side by side");
  cmd->add_option("--model", f->organism, "the trained model (run OUT/organism)")->capture_default_str();
  cmd->add_option("--planted", f->planted, "the planted model (run OUT/planted)")->capture_default_str();
  cmd->add_option("--data", f->data, "held-out text, for both models")->capture_default_str();
  cmd->add_option(
         "--out", f->out,
         "output directory: OUT/organism, OUT/planted, OUT/report.html (an earlier demo output there is replaced)")
      ->check(non_empty())
      ->capture_default_str();
  cmd->add_option("--threads", f->threads, "worker threads (default: all cores)")->check(integer_in(1, 1024));
  add_precision_options(*cmd, f->precision);
  add_analysis_options(*cmd, s);
  cmd->callback([f] {
    AnalysisSettings s = f->settings;
    const fs::path out = f->out;
    check_demo_out(out);
    s.data = {f->data};
    s.corpus.format = CorpusFormat::kText;
    s.mode = RunDirMode::kOverwrite;
    const EngineOptions compute = resolve_compute(f->precision);
    s.device = compute.device;
    s.gpu = compute.gpu;
    s.precision = compute.precision;
    s.fp32_matmul = compute.fp32_matmul;
    apply_thread_count(f->threads);

    analyze_model(s, f->organism, out, kOrganism);
    // The seed's ablation: four profiles at the organism's head size, every N.
    synth::SynthSweep sweep;
    sweep.dims = {64};
    sweep.lengths = {255};
    write_synth_section(sweep, s.aggregate.seed, out / kOrganism);
    write_run_report(out / kOrganism);

    analyze_model(s, f->planted, out, kPlanted);
    write_run_report(out / kPlanted);

    ReportOptions options;
    options.title = "attngeom demo: the trained organism and the planted model";
    options.generator = std::string("attngeom ") + kVersion + " (" + kGitCommit + ")";
    // The notes describe the bundled models, not ones given with --model or --planted.
    options.run_notes = {f->organism == kDefaultOrganism ? kOrganismNote : "",
                         f->planted == kDefaultPlanted ? kPlantedNote : ""};
    write_report({out / kOrganism, out / kPlanted}, out / "report.html", options);
    std::printf("report: %s\n", fs::absolute(out / "report.html").string().c_str());
  });
}

}  // namespace attngeom::cli
