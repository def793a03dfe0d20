#pragma once
// Suggestions for a mistyped name (a command, a flag, a keyword argument).
#include <string>
#include <vector>

namespace attngeom {

// " (did you mean X?)" for the closest of `names` within a third of the word's edits (at most
// two, at least one), else "".
std::string near_name_suggestion(const std::string& given, const std::vector<std::string>& names);

}  // namespace attngeom
