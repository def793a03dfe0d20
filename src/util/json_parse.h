#pragma once
// JSON from files we do not control (run.json, config.json, safetensors headers), parsed
// with a nesting limit: nlohmann's parser is iterative, but serialising and comparing
// recurse, so a file nested 100,000 deep would overflow the stack later (the report's
// dump of run.json, --resume's settings comparison).
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace attngeom {

inline constexpr int kMaxJsonDepth = 128;

// Parses `text` as nlohmann::json::parse does (its exceptions included), and throws
// InputError naming `source` for nesting deeper than kMaxJsonDepth.
nlohmann::json parse_json(std::string_view text, const std::string& source);

}  // namespace attngeom
