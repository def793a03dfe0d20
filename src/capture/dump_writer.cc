#include "capture/dump_writer.h"

#include "util/error.h"

namespace attngeom {
namespace {

std::vector<TensorSpec> dump_tensors(const ModelConfig& c, int seq, std::size_t rows, std::span<const int> layers,
                                     bool with_logits, Precision precision) {
  const std::int64_t t = seq;
  const auto q = static_cast<std::int64_t>(rows);
  std::vector<TensorSpec> specs = {{"tokens", DType::kI32, {t}}, {"query_positions", DType::kI32, {q}}};
  for (const int l : layers) {
    const std::string prefix = "layers." + std::to_string(l);
    specs.push_back({prefix + ".attn", DType::kF32, {c.heads, q, t}});
    specs.push_back({prefix + ".values", DType::kF32, {c.kv_heads, t, c.head_dim}});
    if (!c.recipe.layers[static_cast<std::size_t>(l)].sparse_mlp) continue;
    const MoeRecipe& moe = c.recipe.moe;
    specs.push_back({prefix + ".experts", DType::kI32, {t, moe.top_k}});
    specs.push_back({prefix + ".expert_weights", DType::kF32, {t, moe.top_k}});
    specs.push_back({prefix + ".expert_load", DType::kI32, {moe.experts}});
    if (precision != Precision::kFp32) specs.push_back({prefix + ".routing_flipped", DType::kI32, {t}});
  }
  if (with_logits) specs.push_back({"logits", DType::kF32, {t, c.vocab}});
  return specs;
}

}  // namespace

DumpWriter::DumpWriter(const std::filesystem::path& path, const ModelConfig& config, std::span<const int> tokens,
                       std::span<const int> query_rows, std::span<const int> layers, bool with_logits,
                       Precision precision, const std::map<std::string, std::string>& metadata)
    : config_(config),
      seq_(static_cast<int>(tokens.size())),
      rows_(query_rows.size()),
      writer_(path, dump_tensors(config, seq_, rows_, layers, with_logits, precision), metadata) {
  writer_.write("tokens", 0, tokens.data(), tokens.size_bytes());
  writer_.write("query_positions", 0, query_rows.data(), query_rows.size_bytes());
}

void DumpWriter::on_values(int layer, const ValueStates& values) {
  ATTNGEOM_CHECK(values.space == MemorySpace::kHost && values.seq == seq_);
  const std::size_t count = static_cast<std::size_t>(config_.kv_heads) * seq_ * config_.head_dim;
  writer_.write("layers." + std::to_string(layer) + ".values", 0, values.values, count * sizeof(float));
}

void DumpWriter::on_attention(int layer, const AttentionRows& rows) {
  ATTNGEOM_CHECK(rows.space == MemorySpace::kHost && rows.positions.size() == rows_ && rows.seq == seq_);
  const std::size_t head_bytes = rows_ * static_cast<std::size_t>(seq_) * sizeof(float);
  writer_.write("layers." + std::to_string(layer) + ".attn", static_cast<std::size_t>(rows.head_begin) * head_bytes,
                rows.probs, static_cast<std::size_t>(rows.heads()) * head_bytes);
}

void DumpWriter::on_routing(int layer, const ExpertRouting& routing) {
  ATTNGEOM_CHECK(routing.seq == seq_);
  const std::string prefix = "layers." + std::to_string(layer);
  writer_.write(prefix + ".experts", 0, routing.choices.data(), routing.choices.size_bytes());
  writer_.write(prefix + ".expert_weights", 0, routing.weights.data(), routing.weights.size_bytes());
  writer_.write(prefix + ".expert_load", 0, routing.load.data(), routing.load.size_bytes());
  routed_choices_ += seq_;
  if (routing.flips < 0) return;
  writer_.write(prefix + ".routing_flipped", 0, routing.flipped.data(), routing.flipped.size_bytes());
  routing_flips_ += routing.flips;
}

void DumpWriter::write_logits(const std::vector<float>& logits) {
  ATTNGEOM_CHECK(logits.size() == static_cast<std::size_t>(seq_) * config_.vocab);
  writer_.write("logits", 0, logits.data(), logits.size() * sizeof(float));
}

}  // namespace attngeom
