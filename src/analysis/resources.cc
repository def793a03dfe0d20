#include "analysis/resources.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "ops/attention_shape.h"
#include "util/error.h"

namespace attngeom {
namespace {

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint64_t kTablesAndReport = std::uint64_t{64} << 20;   // CSVs, npy, report.html, run.json
constexpr std::uint64_t kProcessOverhead = std::uint64_t{256} << 20;  // code, oneDNN, OpenMP stacks, corpus slack

// Saturating products and sums: absurd flags must give a huge estimate, not a wrapped one.
std::uint64_t mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t out;
  return __builtin_mul_overflow(a, b, &out) ? kMax : out;
}
std::uint64_t add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t out;
  return __builtin_add_overflow(a, b, &out) ? kMax : out;
}

}  // namespace

std::string human_bytes(std::uint64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 6) {
    value /= 1024;
    ++unit;
  }
  char text[48];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return text;
}

std::uint64_t record_file_bytes(const RecordSchema& schema, int layers, int heads, std::size_t rows,
                                std::size_t seq_len) {
  const std::uint64_t per_row =
      add(mul(schema.n_grid.size(), schema.per_n_fields.size()), schema.per_row_fields.size());
  const std::uint64_t per_head = add(mul(rows, per_row), seq_len);
  const std::uint64_t doubles =
      mul(mul(static_cast<std::uint64_t>(layers), static_cast<std::uint64_t>(heads)), per_head);
  return add(mul(doubles, sizeof(double)), add(mul(add(seq_len, rows), sizeof(std::int32_t)), 4096));  // + header
}

std::uint64_t working_memory_bytes(const ModelConfig& c, const LengthWork& w, int threads) {
  const std::uint64_t t = static_cast<std::uint64_t>(w.seq_len);
  const std::uint64_t per_token = 4ull * c.hidden + 2ull * static_cast<std::uint64_t>(c.q_dim()) +
                                  3ull * static_cast<std::uint64_t>(c.kv_dim()) + 2ull * c.intermediate;
  const std::uint64_t scratch = mul(mul(t, per_token), sizeof(float));
  // Each thread's block of scores, and one block of heads' captured rows (capture_block_heads).
  const AttentionShape shape{w.seq_len, c.heads, c.kv_heads, c.head_dim};
  const std::uint64_t captured = mul(mul(static_cast<std::uint64_t>(capture_block_heads(shape, w.rows)), t), w.rows);
  const std::uint64_t attention = mul(
      add(mul(mul(static_cast<std::uint64_t>(std::max(threads, 1)), t), kAttentionBlockRows), captured), sizeof(float));
  // bf16 runs: q, k, v rounded head-major, and each thread's block of probabilities in bf16.
  const std::uint64_t attention_bf16 =
      mul(add(mul(t, static_cast<std::uint64_t>(c.q_dim()) + 2ull * static_cast<std::uint64_t>(c.kv_dim())),
              mul(mul(static_cast<std::uint64_t>(std::max(threads, 1)), kAttentionBlockRows), t)),
          sizeof(std::uint16_t));
  const std::uint64_t record = record_file_bytes(*w.schema, c.layers, c.heads, w.rows, w.seq_len);
  // The analyser's copy of one layer's values, and each thread's geometry buffers for one
  // row (keys x (head_dim + a few per-key arrays) doubles).
  const std::uint64_t values = mul(mul(t, static_cast<std::uint64_t>(c.kv_dim())), sizeof(float));
  const std::uint64_t geometry = mul(
      mul(mul(static_cast<std::uint64_t>(std::max(threads, 1)), t), add(static_cast<std::uint64_t>(c.head_dim), 16)),
      sizeof(double));
  return add(add(add(scratch, add(attention, attention_bf16)), add(record, values)), add(geometry, kProcessOverhead));
}

std::uint64_t output_disk_bytes(const ModelConfig& c, const LengthWork& w) {
  return add(mul(w.records_to_write, record_file_bytes(*w.schema, c.layers, c.heads, w.rows, w.seq_len)),
             kTablesAndReport);
}

bool check_resources(const ResourceEstimate& need, const std::optional<MemoryLimit>& memory,
                     std::optional<std::uint64_t> disk_free, const std::filesystem::path& out, MemoryCheck mode) {
  const std::uint64_t total = add(need.weight_bytes, need.working_bytes);
  const bool checked = memory && mode != MemoryCheck::kOff;
  const bool working_fits = !checked || need.working_bytes <= memory->bytes;
  if (!working_fits || (checked && mode == MemoryCheck::kStrict && total > memory->bytes)) {
    const std::string what =
        working_fits ? human_bytes(total) + " of memory (" + human_bytes(need.weight_bytes) + " mapped weights + " +
                           human_bytes(need.working_bytes) + " for one sequence in flight)"
                     : human_bytes(need.working_bytes) + " of memory for one sequence in flight (besides " +
                           human_bytes(need.weight_bytes) + " of mapped weights)";
    SettingMessage message{"analyze: needs about " + what + " but only " + human_bytes(memory->bytes) +
                           " is available (" + memory->source + "); "};
    message += working_fits
                   ? SettingMessage{setting("memory_check"), " warn lets the mapped weights stream from storage"}
                   : SettingMessage{"use a shorter ", setting("seq_len"), ", fewer ", setting("queries"),
                                    " rows or no ",   setting("every_n"), " (or ",    setting("no_resource_check"),
                                    " to try anyway)"};
    throw SettingError(message);
  }
  if (disk_free && need.disk_bytes > *disk_free) {
    throw SettingError({"analyze: records and tables need about " + human_bytes(need.disk_bytes) +
                            " on the file system of " + out.string() + " but only " + human_bytes(*disk_free) +
                            " is free; free space, use fewer ",
                        setting("num_seqs"), " or ", setting("queries"), " rows (or ", setting("no_resource_check"),
                        " to try anyway)"});
  }
  return checked && total > memory->bytes;
}

SettingMessage streaming_warning(const ResourceEstimate& need, const MemoryLimit& memory,
                                 std::optional<double> read_rate) {
  const std::uint64_t total = add(need.weight_bytes, need.working_bytes);
  const std::uint64_t excess = std::min(need.weight_bytes, total - std::min(total, memory.bytes));
  std::string cost = "the read rate of the weights could not be measured";
  if (read_rate && *read_rate > 0) {
    char text[160];
    std::snprintf(text, sizeof text, "at the measured %s/s, about %.1f to %.1f s more per sequence",
                  human_bytes(static_cast<std::uint64_t>(*read_rate)).c_str(), static_cast<double>(excess) / *read_rate,
                  static_cast<double>(need.weight_bytes) / *read_rate);
    cost = text;
  }
  return SettingMessage{
      "the " + human_bytes(need.weight_bytes) + " of mapped weights and " + human_bytes(need.working_bytes) +
          " for one sequence in flight exceed the memory limit of " + human_bytes(memory.bytes) + " (" + memory.source +
          "); weights will be read again from storage as they are evicted: " + cost + " (",
      setting("memory_check"), " strict refuses instead)"};
}

}  // namespace attngeom
