#pragma once
// Pre-flight of analyze: the memory and disk a run will need, estimated from the model's
// shape, the sequence length, the captured rows and the record schema, and checked
// against what the machine has before anything is computed or written.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "analysis/record.h"
#include "model/config.h"
#include "util/error.h"
#include "util/memory_limit.h"

namespace attngeom {

struct ResourceEstimate {
  std::uint64_t weight_bytes = 0;   // the memory-mapped checkpoint files (read every sequence)
  std::uint64_t working_bytes = 0;  // the largest length's scratch, attention buffers, record, geometry
  std::uint64_t disk_bytes = 0;     // records still to write, plus tables and report
};

// One analysed sequence length: the shape of its work.
struct LengthWork {
  int seq_len = 0;
  std::size_t rows = 0;  // captured query rows per sequence
  const RecordSchema* schema = nullptr;
  std::size_t records_to_write = 0;
};

// Bytes of one record file (analysis/record.h): L x H x (Q x (G x Kn + Kr) + T) doubles.
std::uint64_t record_file_bytes(const RecordSchema& schema, int layers, int heads, std::size_t rows,
                                std::size_t seq_len);

// Heap of one sequence in flight: forward scratch T x (4 hidden + 2 q_dim + 3 kv_dim +
// 2 intermediate) floats, attention buffers threads x T x 128 floats and one block of heads'
// captured rows (capture_block_heads x rows x T floats), the record,
// and the geometry's per-thread row buffers. Saturates instead of overflowing.
std::uint64_t working_memory_bytes(const ModelConfig& config, const LengthWork& work, int threads);

// Disk for the records still to write, plus a fixed allowance for tables and report.
std::uint64_t output_disk_bytes(const ModelConfig& config, const LengthWork& work);

// What to do when the mapped weights and the working memory together exceed the limit.
// Working memory alone beyond the limit is refused unless the check is off.
enum class MemoryCheck {
  kStrict,  // refuse
  kWarn,    // go ahead: mapped weights page in from storage again as they are evicted
  kOff,     // check nothing about memory
};

// Throws SettingError (one line, with the numbers, the limit and its source, and what to
// change) when the working memory exceeds `memory`, when weights and working memory do and
// the check is strict, or when the records exceed the free space under `out`. Returns true
// when the run may go ahead but its weights will not stay resident (see streaming_warning).
// An unknown limit or free space passes.
bool check_resources(const ResourceEstimate& need, const std::optional<MemoryLimit>& memory,
                     std::optional<std::uint64_t> disk_free, const std::filesystem::path& out, MemoryCheck mode);

// The warning for weights that do not fit beside the working memory: the limit and its
// source, and the extra time per sequence of re-reading them at `read_rate` (bytes/s):
// at least the part that does not fit, at most all of them (a sequential pass over more
// pages than fit evicts each before its next use).
SettingMessage streaming_warning(const ResourceEstimate& need, const MemoryLimit& memory,
                                 std::optional<double> read_rate);

// "1.5 GiB", "320 MiB", "12 KiB": for messages.
std::string human_bytes(std::uint64_t bytes);

}  // namespace attngeom
