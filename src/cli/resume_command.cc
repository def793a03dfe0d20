#include "cli/resume_command.h"

#include <algorithm>
#include <string_view>

namespace attngeom::cli {

std::string shell_quoted(const std::string& word) {
  const auto safe = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("_@%+=:,./-").find(c) != std::string_view::npos;
  };
  if (!word.empty() && std::all_of(word.begin(), word.end(), safe)) return word;
  std::string quoted = "'";
  for (const char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string resume_command(const std::vector<std::string>& args) {
  std::string line;
  bool resumes = false;
  for (const std::string& arg : args) {
    if (arg == "--overwrite") continue;  // would discard the records --resume keeps
    resumes = resumes || arg == "--resume";
    line += (line.empty() ? "" : " ") + shell_quoted(arg);
  }
  return resumes ? line : line + " --resume";
}

}  // namespace attngeom::cli
