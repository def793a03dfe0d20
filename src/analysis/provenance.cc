#include "analysis/provenance.h"

#include <fstream>
#include <vector>

#include "util/error.h"
#include "util/machine.h"
#include "util/sha256.h"
#include "util/version.h"

namespace attngeom {

nlohmann::json model_provenance(const Checkpoint& checkpoint) {
  nlohmann::json headers = nlohmann::json::array();
  for (const ShardInfo& shard : checkpoint.shards()) {
    std::vector<std::uint8_t> bytes(shard.header_bytes);
    std::ifstream in(shard.path, std::ios::binary);
    in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!in) throw InputError(shard.path.string() + ": cannot re-read the header for hashing");
    headers.push_back({{"file", shard.path.filename().string()}, {"header_sha256", sha256_hex(bytes)}});
  }
  nlohmann::json model = model_shape(checkpoint);
  model["config_sha256"] = sha256_file(checkpoint.dir() / "config.json");
  model["weight_headers"] = headers;
  model["weight_bytes"] = checkpoint.weight_bytes();
  return model;
}

nlohmann::json model_shape(const Checkpoint& checkpoint) {
  const ModelConfig& c = checkpoint.config();
  return {{"dir", std::filesystem::absolute(checkpoint.dir()).string()},
          {"model_type", c.model_type},
          {"weights_dtype", dtype_name(checkpoint.dominant_dtype())},
          {"layers", c.layers},
          {"heads", c.heads},
          {"kv_heads", c.kv_heads},
          {"head_dim", c.head_dim},
          {"hidden", c.hidden},
          {"vocab", c.vocab},
          {"sliding_window", c.sliding_window}};
}

nlohmann::json tokenizer_provenance(const Tokenizer& tokenizer) {
  const std::optional<int> bos = tokenizer.bos_id();
  return {{"file", tokenizer.file().filename().string()},
          {"sha256", sha256_file(tokenizer.file())},
          {"bos", bos.has_value()},
          {"bos_token_id", bos ? nlohmann::json(*bos) : nlohmann::json(nullptr)},
          {"position0", bos ? "bos" : "text"}};
}

nlohmann::json corpus_provenance(const Corpus& corpus, const SequenceSet& sequences) {
  nlohmann::json files = nlohmann::json::array();
  for (const CorpusFile& f : corpus.files) {
    const char* compression = f.compression == Compression::kGzip   ? "gzip"
                              : f.compression == Compression::kZstd ? "zstd"
                                                                    : "none";
    files.push_back({{"path", std::filesystem::absolute(f.path).string()},
                     {"sha256", f.sha256},
                     {"compression", compression},
                     {"documents", f.documents}});
  }
  nlohmann::json used = nlohmann::json::array();
  for (std::size_t i = 0; i < sequences.sequences.size(); ++i) {
    used.push_back({{"index", i},
                    {"documents", sequences.sequences[i].documents},
                    {"first_token", sequences.sequences[i].first_token}});
  }
  return {{"files", files},
          {"warnings", corpus.warnings},
          {"warnings_dropped", corpus.warnings_dropped},
          {"candidates", sequences.candidates},
          {"short_documents", sequences.short_documents},
          {"sequences", used}};
}

nlohmann::json machine_provenance() {
  const MachineInfo m = machine_info();
  return {{"hostname", m.hostname},
          {"cpu_model", m.cpu_model},
          {"logical_cores", m.logical_cores},
          {"memory_bytes", m.memory_bytes},
          {"cpu_vendor", cpu_vendor()},
          {"has_amx", cpu_has_amx()},
          {"fast_bf16_matmul", cpu_has_fast_bf16_matmul()}};
}

nlohmann::json tool_provenance() { return {{"version", kVersion}, {"git_commit", kGitCommit}}; }

}  // namespace attngeom
