// Fuzz target: the safetensors header parser (io/safetensors.h) and the shard index
// parser (io/checkpoint.h) on the same bytes. Anything but InputError (a crash, another
// exception, a sanitizer report) is a bug.
#include <cstdint>
#include <span>
#include <string>

#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  try {
    const attngeom::SafetensorsHeader header = attngeom::parse_safetensors(bytes, "fuzz.safetensors");
    // Every entry's bytes lie inside the input, in order, without overlap.
    const std::uint8_t* previous_end = nullptr;
    unsigned sum = 0;
    for (const auto& entry : header.entries) {
      ATTNGEOM_CHECK(entry.data.empty() ||
                     (entry.data.data() >= data && entry.data.data() + entry.data.size() <= data + size));
      ATTNGEOM_CHECK(entry.data.empty() || previous_end == nullptr || entry.data.data() >= previous_end);
      if (!entry.data.empty()) {
        sum += entry.data.front() + entry.data.back();
        previous_end = entry.data.data() + entry.data.size();
      }
      ATTNGEOM_CHECK(header.find(entry.name) != nullptr);
    }
    (void)sum;
  } catch (const attngeom::InputError&) {
  }
  try {
    const attngeom::ShardIndex index =
        attngeom::parse_shard_index(std::string(reinterpret_cast<const char*>(data), size), "fuzz.index.json");
    for (const auto& [tensor, shard] : index.tensor_to_shard) {
      ATTNGEOM_CHECK(!shard.empty() && shard.find('/') == std::string::npos && shard != "." && shard != "..");
    }
  } catch (const attngeom::InputError&) {
  }
  return 0;
}
