#pragma once
// [layers, heads] matrices on disk: head masks read from .npy or TSV, and head scores
// written as .npy, TSV and JSON so that other head-selection tools can read them.
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "prune/head_table.h"

namespace attngeom::prune {

// A [layers, heads] matrix, flat index = layer * heads + head. By extension:
//  - .npy: a 2-D array of shape (layers, heads), little-endian float (f4, f8), signed or
//    unsigned integer (1-8 bytes) or bool, C or Fortran order;
//  - anything else: text, one line per layer with `heads` numbers separated by tabs or
//    spaces; empty lines and lines starting with '#' are skipped (numpy.loadtxt reads it).
// Throws InputError naming the file: unreadable, malformed, or another shape.
std::vector<double> read_head_matrix(const std::filesystem::path& path, const HeadGrid& grid);

// DIR/NAME.npy (float64 [layers, heads]), DIR/NAME.tsv (one line per layer, tab-separated,
// %.17g, `nan`) and DIR/NAME.json ({"layer-head": value}, null for NaN), each atomic.
void write_head_scores(const std::filesystem::path& dir, const std::string& name, std::span<const double> values,
                       const HeadGrid& grid);

}  // namespace attngeom::prune
