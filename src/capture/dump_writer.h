#pragma once
// The capture dump: a standard safetensors file, the project's interchange format.
//   tokens            I32 [T]
//   query_positions   I32 [Q]
//   layers.{l}.attn   F32 [H, Q, T]   zero outside the causal/window range
//   layers.{l}.values F32 [H_kv, T, head_dim]
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
             std::span<const int> query_rows, std::span<const int> layers, bool with_logits,
             const std::map<std::string, std::string>& metadata);

  void on_values(int layer, const ValueStates& values) override;
  void on_attention(int layer, const AttentionRows& rows) override;
  void write_logits(const std::vector<float>& logits);  // [T, vocab]
  void commit() { writer_.commit(); }

 private:
  const ModelConfig& config_;
  int seq_;
  std::size_t rows_;
  SafetensorsWriter writer_;
};

}  // namespace attngeom
