#pragma once
// The capture dump: a standard safetensors file, the project's interchange format.
//   tokens            I32 [T]
//   query_positions   I32 [Q]
//   layers.{l}.attn   F32 [H, Q, T]   zero outside the causal/window range
//   layers.{l}.values F32 [H_kv, T, head_dim]
//   layers.{l}.experts         I32 [T, top_k]  a mixture of experts' choice, largest weight first
//   layers.{l}.expert_weights  F32 [T, top_k]  their weights
//   layers.{l}.expert_load     I32 [E]         tokens routed to each expert
//   layers.{l}.routing_flipped I32 [T]         1 where fp32's router logits choose other experts
//                                              (bf16 dumps only)
//   logits            F32 [T, vocab]  (optional)
//   __metadata__      JSON strings: model, precision, settings
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "io/safetensors_writer.h"
#include "model/config.h"
#include "model/observer.h"

namespace attngeom {

class DumpWriter final : public ForwardObserver {
 public:
  DumpWriter(const std::filesystem::path& path, const ModelConfig& config, std::span<const int> tokens,
             std::span<const int> query_rows, std::span<const int> layers, bool with_logits, Precision precision,
             const std::map<std::string, std::string>& metadata);

  void on_values(int layer, const ValueStates& values) override;
  void on_attention(int layer, const AttentionRows& rows) override;
  void on_routing(int layer, const ExpertRouting& routing) override;
  void write_logits(const std::vector<float>& logits);  // [T, vocab]
  void commit() { writer_.commit(); }
  // Token choices routed (tokens x routed layers) and, on a fast path, how many flipped.
  std::int64_t routed_choices() const { return routed_choices_; }
  std::int64_t routing_flips() const { return routing_flips_; }

 private:
  const ModelConfig& config_;
  int seq_;
  std::size_t rows_;
  SafetensorsWriter writer_;
  std::int64_t routed_choices_ = 0;
  std::int64_t routing_flips_ = 0;
};

}  // namespace attngeom
