#pragma once
// The synthetic-ablation section of a run (RUN_DIR/synth/summary.csv): the seed's four
// attention profiles analysed like captured rows, one row per (profile, N), so the
// report can set measured curves beside planted ones.
#include <cstdint>
#include <filesystem>

#include "synth/synth_sweep.h"

namespace attngeom {

void write_synth_section(const synth::SynthSweep& sweep, std::uint64_t seed, const std::filesystem::path& run_dir);

}  // namespace attngeom
