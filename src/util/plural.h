#pragma once
// "1 sequence", "2 sequences": a count with its noun, for messages.
#include <cstddef>
#include <string>
#include <string_view>

namespace attngeom {

inline std::string count_of(std::size_t n, std::string_view noun) {
  return std::to_string(n) + " " + std::string(noun) + (n == 1 ? "" : "s");
}

}  // namespace attngeom
