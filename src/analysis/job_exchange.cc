#include "analysis/job_exchange.h"

#include <algorithm>
#include <cstdint>

#include "analysis/provenance.h"
#include "util/sha256.h"

namespace attngeom {

std::string job_fingerprint(const RunInputs& in, const LengthPlan& plan) {
  nlohmann::json settings = plan.settings;
  settings.erase("model_dir");
  settings.erase("data");
  const std::string text = settings.dump() + model_provenance(in.checkpoint).dump();
  std::vector<std::uint8_t> bytes(text.begin(), text.end());
  for (const auto& sequence : plan.sequences.sequences) {
    const auto* tokens = reinterpret_cast<const std::uint8_t*>(sequence.tokens.data());
    bytes.insert(bytes.end(), tokens, tokens + sequence.tokens.size() * sizeof(sequence.tokens[0]));
  }
  return sha256_hex(bytes);
}

RankWork rank_work(const std::vector<std::size_t>& shard_sequences, const std::vector<std::size_t>& finished,
                   const JobRanks* ranks) {
  const std::size_t rank = ranks != nullptr ? static_cast<std::size_t>(ranks->rank()) : 0;
  const std::size_t size = ranks != nullptr ? static_cast<std::size_t>(ranks->size()) : 1;
  RankWork work;
  for (const std::size_t i : shard_sequences) {
    if (std::binary_search(finished.begin(), finished.end(), i)) {
      ++work.finished;
    } else if (i % size == rank) {
      work.to_compute.push_back(i);
    } else {
      ++work.awaited_records;
    }
  }
  return work;
}

}  // namespace attngeom
