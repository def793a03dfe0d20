#pragma once
// CSV files of a synth sweep. Each file starts with one "# " line holding the caller's
// resolved settings; columns are documented in docs/geometry.md.
#include <array>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "synth/synth_sweep.h"

namespace attngeom {

// The files a sweep writes, in this order.
inline constexpr std::array<std::string_view, 5> kSynthCsvFiles = {"points.csv", "metrics.csv", "envelopes.csv",
                                                                   "separation.csv", "coverage.csv"};

// Writes points.csv, metrics.csv, envelopes.csv, separation.csv and coverage.csv into
// `directory` (created if missing) and returns their paths. InputError when a file cannot be
// written.
std::vector<std::filesystem::path> write_synth_csv(const std::filesystem::path& directory,
                                                   std::span<const synth::SynthPoint> points,
                                                   const std::string& settings);

}  // namespace attngeom
