#pragma once
// The per-sequence record: every number analyze computed for one sequence, written
// atomically to RUN_DIR/records/seq-NNNNNN.safetensors when the sequence finishes.
// Final tables are aggregated from records in sequence order, so an interrupted run
// resumed later, or shards merged, give exactly the same outputs as one straight run.
//
//   tokens            I32 [T]
//   query_positions   I32 [Q]
//   per_n             F64 [L, H, Q, G, Kn]   metrics at each N of the grid
//   per_row           F64 [L, H, Q, Kr]      diagnostics of each captured row
//   profile           F64 [L, H, T]          attention of the last captured row (zero-padded)
//   expert_load       I32 [L, E]             a mixture of experts only: tokens routed to each expert
//   routing_flips     I32 [L]                and tokens whose fp32 routing differs (-1: not checked)
//   __metadata__      {"sequence": index, "n_grid": [...], "per_n_fields": [...], "per_row_fields": [...]}
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "util/mapped_file.h"

namespace attngeom {

struct RecordSchema {
  std::vector<std::string> per_n_fields;
  std::vector<std::string> per_row_fields;
  std::vector<std::size_t> n_grid;

  std::size_t per_n_index(const std::string& field) const;  // ATTNGEOM_CHECKs the name exists
  std::size_t per_row_index(const std::string& field) const;
  bool operator==(const RecordSchema&) const = default;
};

struct SequenceRecord {
  std::size_t sequence = 0;
  int layers = 0;
  int heads = 0;
  std::vector<std::int32_t> tokens;           // [T]
  std::vector<std::int32_t> query_positions;  // [Q]
  std::vector<double> per_n;                  // [L, H, Q, G, Kn]
  std::vector<double> per_row;                // [L, H, Q, Kr]
  std::vector<double> profile;                // [L, H, T]
  // A mixture of experts (else empty). Layers with a dense MLP keep zeros and -1.
  int experts = 0;
  std::vector<std::int32_t> expert_load;    // [L, E] tokens routed to each expert
  std::vector<std::int32_t> routing_flips;  // [L] tokens the fp32 router sends elsewhere; -1: not checked

  void resize(const RecordSchema& schema, int layers, int heads, std::size_t seq_len, std::size_t rows);
  void resize_routing(int experts_per_layer);
  std::size_t rows() const { return query_positions.size(); }
  std::size_t seq_len() const { return tokens.size(); }
};

std::filesystem::path record_path(const std::filesystem::path& records_dir, std::size_t sequence);
// The record files (seq-NNNNNN.safetensors) in `records_dir`, sorted; throws InputError if
// the folder cannot be listed. Temporaries and foreign files are ignored.
std::vector<std::filesystem::path> list_records(const std::filesystem::path& records_dir);
void write_record(const std::filesystem::path& path, const RecordSchema& schema, const SequenceRecord& record);

// A record file opened for reading (memory-mapped); spans stay valid while it lives.
class RecordReader {
 public:
  explicit RecordReader(const std::filesystem::path& path);  // throws InputError if malformed

  const RecordSchema& schema() const { return schema_; }
  const std::filesystem::path& path() const { return file_.path(); }
  std::size_t sequence() const { return sequence_; }
  int layers() const { return layers_; }
  int heads() const { return heads_; }
  std::size_t rows() const { return rows_; }
  std::size_t seq_len() const { return seq_len_; }
  std::span<const std::int32_t> query_positions() const;
  std::span<const double> per_n(int layer, int head) const;    // [Q, G, Kn]
  std::span<const double> per_row(int layer, int head) const;  // [Q, Kr]
  std::span<const double> profile(int layer, int head) const;  // [T]
  int experts() const { return experts_; }                     // 0: no routing recorded
  std::span<const std::int32_t> expert_load(int layer) const;  // [E]
  std::int32_t routing_flips(int layer) const;                 // -1: not checked

 private:
  std::span<const double> f64(const char* name) const;
  MappedFile file_;
  SafetensorsHeader header_;
  RecordSchema schema_;
  std::size_t sequence_ = 0;
  int layers_ = 0;
  int heads_ = 0;
  int experts_ = 0;
  std::size_t rows_ = 0;
  std::size_t seq_len_ = 0;
};

}  // namespace attngeom
