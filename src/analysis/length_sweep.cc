#include "analysis/length_sweep.h"

#include "analysis/record.h"
#include "util/csv.h"

namespace attngeom {

namespace fs = std::filesystem;

void write_length_sweep(const fs::path& out, const AggregateOptions& options,
                        const std::vector<std::pair<int, fs::path>>& runs, int kv_heads) {
  CsvWriter table(
      {"seq_len", "n", "heads", "precision_mean", "recall_mean", "f_mean", "margin_mean", "separated_mean"});
  for (const auto& [seq_len, dir] : runs) {
    const std::vector<fs::path> records = list_records(dir / "records");
    const RunAggregate run = aggregate_records(records, kv_heads, options);
    for (std::size_t g = 0; g < run.schema.n_grid.size(); ++g) {
      table.add(seq_len).add(run.schema.n_grid[g]).add(run.heads_table.size());
      for (const char* field : {"precision", "recall", "f", "margin", "separated"}) {
        double sum = 0;
        for (const HeadAggregate& h : run.heads_table) sum += run.n_stat(h, g, field).mean;
        table.add(sum / static_cast<double>(run.heads_table.size()));
      }
      table.end_row();
    }
  }
  table.write(out / "length_sweep.csv");
}

}  // namespace attngeom
