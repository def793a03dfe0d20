#include "analysis/synth_section.h"

#include "util/csv.h"
#include "util/error.h"

namespace attngeom {

void write_synth_section(const synth::SynthSweep& sweep, std::uint64_t seed, const std::filesystem::path& run_dir) {
  const auto points = synth::run_synth_sweep(sweep, seed);
  CsvWriter t({"profile", "d", "L", "n", "precision", "recall", "f", "margin", "separated", "r1_f_lo", "r1_f_hi",
               "r2_separation_prob"});
  for (const synth::SynthPoint& p : points) {
    const geometry::RowAnalysis& a = p.analysis;
    for (std::size_t g = 0; g < a.selection.size(); ++g) {
      const auto& m = a.selection[g];
      t.add(std::string(synth::profile_name(p.profile))).add(p.values.dim).add(p.length).add(m.n);
      t.add(m.precision).add(m.recall).add(m.f_score).add(m.margin).add(m.margin > 0 ? 1.0 : 0.0);
      t.add(a.r1[g].f_score.lower).add(a.r1[g].f_score.upper).add(a.r2.separation[g].separation_probability);
      t.end_row();
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(run_dir / "synth", ec);
  if (ec) throw InputError((run_dir / "synth").string() + ": cannot create: " + ec.message());
  t.write(run_dir / "synth" / "summary.csv");
}

}  // namespace attngeom
