#pragma once
// The per-head scores of an analyze run that the pruning orders and the top-N rule
// read: heads.csv (docs/run_format.md) on the run's [layers, heads] grid.
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace attngeom::prune {

// A [layers, heads] grid of attention heads; flat index = layer * heads + head.
struct HeadGrid {
  int layers = 0;
  int heads = 0;
  int count() const { return layers * heads; }
  std::size_t index(int layer, int head) const { return static_cast<std::size_t>(layer) * heads + head; }
  std::string name(std::size_t index) const;  // "layer-head", e.g. "3-7"
};

// Means over the run's samples, each [layers, heads] (flat index).
struct HeadTable {
  HeadGrid grid;
  std::vector<double> entropy;
  std::vector<double> sink_mass;   // a_0
  std::vector<double> last_mass;   // a_L
  std::vector<double> f_small;     // mean F over N = 2..4
  std::vector<double> peak_f_n;    // the non-trivial N with the highest mean F
  std::vector<std::string> label;  // retriever, mixer, reset, unclassified
};

// Reads RUN_DIR/run.json (for the grid) and RUN_DIR/heads.csv, which must hold every
// (layer, head) exactly once. Throws InputError naming the file otherwise.
HeadTable read_head_table(const std::filesystem::path& run_dir);

}  // namespace attngeom::prune
