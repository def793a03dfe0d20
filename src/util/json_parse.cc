#include "util/json_parse.h"

#include "util/error.h"

namespace attngeom {

nlohmann::json parse_json(std::string_view text, const std::string& source) {
  const auto limit = [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth > kMaxJsonDepth) {
      throw InputError(source + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    }
    return true;
  };
  return nlohmann::json::parse(text, limit);
}

}  // namespace attngeom
