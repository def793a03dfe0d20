#include "analysis/dump_input.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>

#include "analysis/provenance.h"
#include "analysis/record.h"
#include "analysis/row_fields.h"
#include "analysis/sequence_analyzer.h"
#include "geometry/head_row.h"
#include "io/safetensors.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/machine.h"
#include "util/mapped_file.h"
#include "util/sha256.h"

namespace attngeom {
namespace {

namespace fs = std::filesystem;

// One dump, checked and copied into aligned arrays.
struct Dump {
  ModelConfig shape;                       // layers, heads, kv_heads, head_dim: what the analyzer needs
  std::vector<int> tokens;                 // [T]
  std::vector<int> query_positions;        // [Q]
  std::vector<std::vector<float>> attn;    // [L][H, Q, T]
  std::vector<std::vector<float>> values;  // [L][H_kv, T, d]
  std::string precision;                   // the capture's metadata ("fp32", "bf16"); empty from other tools
};

template <typename T>
std::vector<T> copy_tensor(const SafetensorsEntry& e) {
  std::vector<T> out(e.data.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), e.data.data(), out.size() * sizeof(T));
  return out;
}

Dump read_dump(const fs::path& path) {
  const MappedFile file(path);
  const SafetensorsHeader header = parse_safetensors(file.bytes(), path.string());
  const auto need = [&](const std::string& name, DType dtype, std::size_t rank) -> const SafetensorsEntry& {
    const SafetensorsEntry* e = header.find(name);
    if (e == nullptr)
      throw InputError(path.string() + ": missing tensor '" + name + "' (see README: the capture dump)");
    if (e->dtype != dtype || e->shape.size() != rank) {
      throw InputError(path.string() + ": tensor '" + name + "' must be " + std::string(dtype_name(dtype)) +
                       " of rank " + std::to_string(rank));
    }
    return *e;
  };
  Dump d;
  if (const auto it = header.metadata.find("precision"); it != header.metadata.end()) d.precision = it->second;
  const auto& tokens = need("tokens", DType::kI32, 1);
  const auto& rows = need("query_positions", DType::kI32, 1);
  d.tokens = copy_tensor<int>(tokens);
  d.query_positions = copy_tensor<int>(rows);
  const auto seq = static_cast<std::int64_t>(d.tokens.size());
  const auto q = static_cast<std::int64_t>(d.query_positions.size());
  if (seq < 2 || q < 1) throw InputError(path.string() + ": needs at least 2 tokens and 1 query row");
  for (std::size_t i = 0; i < d.query_positions.size(); ++i) {
    if (d.query_positions[i] < 0 || d.query_positions[i] >= seq ||
        (i > 0 && d.query_positions[i] <= d.query_positions[i - 1])) {
      throw InputError(path.string() + ": query_positions must be ascending, in [0, T)");
    }
  }
  for (int l = 0; header.find("layers." + std::to_string(l) + ".attn") != nullptr; ++l) {
    const std::string prefix = "layers." + std::to_string(l);
    const auto& attn = need(prefix + ".attn", DType::kF32, 3);
    const auto& values = need(prefix + ".values", DType::kF32, 3);
    if (l == 0) {
      d.shape.heads = static_cast<int>(attn.shape[0]);
      d.shape.kv_heads = static_cast<int>(values.shape[0]);
      d.shape.head_dim = static_cast<int>(values.shape[2]);
    }
    if (attn.shape != std::vector<std::int64_t>{d.shape.heads, q, seq} ||
        values.shape != std::vector<std::int64_t>{d.shape.kv_heads, seq, d.shape.head_dim} || d.shape.heads < 1 ||
        d.shape.kv_heads < 1 || d.shape.heads % d.shape.kv_heads != 0 || d.shape.head_dim < 1) {
      throw InputError(path.string() + ": " + prefix +
                       ".attn must be [H, Q, T] and .values [H_kv, T, d] with H_kv dividing H, "
                       "the same in every layer");
    }
    d.attn.push_back(copy_tensor<float>(attn));
    d.values.push_back(copy_tensor<float>(values));
    check_attention_rows(d.attn.back(), d.query_positions, static_cast<std::size_t>(seq),
                         path.string() + ": tensor '" + prefix + ".attn'");
    if (const NonFiniteCount bad = count_nonfinite(DType::kF32, d.values.back().data(), d.values.back().size());
        bad.count) {
      throw InputError(path.string() + ": tensor '" + prefix + ".values' holds " + std::to_string(bad.count) +
                       " NaN/Inf value(s) (first at flat index " + std::to_string(bad.first) + ")");
    }
  }
  if (d.attn.empty()) throw InputError(path.string() + ": no layers.0.attn tensor (see README: the capture dump)");
  d.shape.layers = static_cast<int>(d.attn.size());
  // Layers are read 0, 1, 2, ... until one is missing: a later one would be dropped silently.
  for (const SafetensorsEntry& e : header.entries) {
    int layer = 0;
    char rest[8] = {};
    if (std::sscanf(e.name.c_str(), "layers.%d.%7s", &layer, rest) == 2 && layer >= d.shape.layers) {
      throw InputError(path.string() + ": tensor '" + e.name + "' but no layers." + std::to_string(d.shape.layers) +
                       ".attn (layers must be numbered 0, 1, 2, ... without gaps)");
    }
  }
  return d;
}

}  // namespace

void check_attention_rows(std::span<const float> attn, std::span<const int> query_positions, std::size_t seq,
                          const std::string& subject) {
  const std::size_t rows = query_positions.size();
  for (std::size_t hr = 0; hr < attn.size() / seq; ++hr) {
    const float* row = attn.data() + hr * seq;
    const auto q = static_cast<std::size_t>(query_positions[hr % rows]);
    const std::string where = subject + " head " + std::to_string(hr / rows) + ", query position " + std::to_string(q);
    double sum = 0.0;
    for (std::size_t k = 0; k < seq; ++k) {
      if (!(row[k] >= 0.0f && row[k] <= 1.001f)) {
        throw InputError(where + ": key " + std::to_string(k) + " holds " + std::to_string(row[k]) +
                         "; attention probabilities must lie in [0, 1]");
      }
      if (k > q && row[k] != 0.0f) {
        throw InputError(where + ": key " + std::to_string(k) + " after the query holds " + std::to_string(row[k]) +
                         "; causal rows must be 0 there");
      }
      sum += row[k];
    }
    if (std::abs(sum - 1.0) > geometry::kAlphaSumTolerance) {
      throw InputError(where + ": the row sums to " + std::to_string(sum) + ", expected 1");
    }
  }
}

void run_dump_analysis(const DumpAnalysisSettings& s, const std::function<void(const std::string&)>& warn) {
  if (s.dumps.empty()) throw SettingError({"metrics: at least one ", setting("dump"), " is required"});
  std::vector<Dump> dumps;
  nlohmann::json files = nlohmann::json::array();
  if (const auto twice = repeated_path(s.dumps)) {  // one sequence counted twice would bias every mean
    throw SettingError({setting("dump"), " " + s.dumps[twice->second].string() + ": given twice"});
  }
  for (const fs::path& path : s.dumps) {
    dumps.push_back(read_dump(path));
    files.push_back({{"path", fs::absolute(path).string()}, {"sha256", sha256_file(path)}});
    const ModelConfig& a = dumps.front().shape;
    const ModelConfig& b = dumps.back().shape;
    if (a.layers != b.layers || a.heads != b.heads || a.kv_heads != b.kv_heads || a.head_dim != b.head_dim ||
        dumps.back().tokens.size() != dumps.front().tokens.size()) {
      throw InputError(path.string() + ": shape differs from " + s.dumps.front().string() +
                       " (all dumps of one run need the same layers, heads, head_dim and length)");
    }
    files.back()["precision"] =
        dumps.back().precision.empty() ? nlohmann::json(nullptr) : nlohmann::json(dumps.back().precision);
  }
  // One precision per run, as in analyze: a bf16 dump beside an fp32 one would blend two models' numbers.
  std::string precision;
  for (std::size_t i = 0; i < dumps.size(); ++i) {
    if (dumps[i].precision.empty()) continue;
    if (!precision.empty() && dumps[i].precision != precision) {
      throw SettingError({setting("dump"), " " + s.dumps[i].string() + ": captured at precision " + dumps[i].precision +
                                               ", but an earlier dump at " + precision +
                                               "; one run holds one precision"});
    }
    precision = dumps[i].precision;
  }
  const ModelConfig& shape = dumps.front().shape;
  const std::size_t seq_len = dumps.front().tokens.size();
  const RecordSchema schema = make_record_schema(seq_len, s.row.every_n);
  nlohmann::json settings = {{"dumps", files}};
  settings.update(record_options_json(s.row, s.aggregate));
  check_run_dir(s.out, settings, s.mode);
  const RunDirGuard guard(s.out, s.mode, s.dumps, warn);
  const RunDir run_dir(s.out, settings, guard.open_mode());

  SequenceAnalyzer analyzer(shape, schema, s.row);
  for (std::size_t i = 0; i < dumps.size(); ++i) {
    if (run_dir.has_record(i)) continue;
    const Dump& d = dumps[i];
    analyzer.begin(i, d.tokens, d.query_positions);
    for (int l = 0; l < shape.layers; ++l) {
      const int seq = static_cast<int>(seq_len);
      analyzer.on_values(l, ValueStates{shape.kv_heads, seq, shape.head_dim,
                                        d.values[static_cast<std::size_t>(l)].data(), MemorySpace::kHost});
      analyzer.on_attention(l, AttentionRows{0, shape.heads, d.query_positions, seq,
                                             d.attn[static_cast<std::size_t>(l)].data(), MemorySpace::kHost});
    }
    write_record(record_path(run_dir.records_dir(), i), schema, analyzer.record());
  }
  const RunAggregate aggregate = finish_run_dir(s.out, shape.kv_heads, s.aggregate, s.per_sequence);
  const nlohmann::json run = {{"format", "attngeom-run-v1"},
                              {"label", s.label.empty() ? default_run_label(s.out) : s.label},
                              {"attngeom", tool_provenance()},
                              {"created", utc_timestamp()},
                              {"machine", machine_provenance()},
                              {"model",
                               {{"dir", "(from capture dumps)"},
                                {"layers", shape.layers},
                                {"heads", shape.heads},
                                {"kv_heads", shape.kv_heads},
                                {"head_dim", shape.head_dim}}},
                              {"precision", precision.empty() ? "unknown (not in the dumps' metadata)" : precision},
                              {"seq_len", seq_len},
                              {"n_grid", schema.n_grid},
                              {"queries", "from dumps"},
                              {"corpus", {{"files", files}}},
                              {"shard", {{"index", 0}, {"count", 1}}},
                              {"sequences_done", dumps.size()},
                              {"complete", true},
                              {"options", options_json(s.row, s.aggregate)},
                              {"settings", settings},
                              {"taxonomy", taxonomy_json(aggregate)}};
  run_dir.write_json("run.json", run);
}

}  // namespace attngeom
