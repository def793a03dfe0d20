#include "cli/unknown_args.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

namespace attngeom::cli {
namespace {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// " (did you mean X?)" for the closest name within a third of the word's edits (at most
// two, at least one), else "".
std::string suggestion(const std::string& given, const std::vector<std::string>& names) {
  std::string best;
  std::size_t best_distance = std::clamp<std::size_t>(given.size() / 3, 1, 2) + 1;
  for (const std::string& name : names) {
    const std::size_t d = edit_distance(given, name);
    if (d < best_distance) best_distance = d, best = name;
  }
  return best.empty() ? "" : " (did you mean " + best + "?)";
}

}  // namespace

std::optional<std::string> unknown_argument(const CLI::App& app, int argc, const char* const* argv) {
  if (argc < 2 || argv[1][0] == '-') return std::nullopt;
  const std::string command = argv[1];
  std::vector<std::string> commands;
  const CLI::App* chosen = nullptr;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    commands.push_back(sub->get_name());
    if (sub->get_name() == command) chosen = sub;
  }
  if (chosen == nullptr) {
    std::string list;
    for (const std::string& name : commands) list += (list.empty() ? "" : ", ") + name;
    return "unknown command '" + command + "'" + suggestion(command, commands) + "; commands: " + list;
  }
  std::vector<std::string> flags;
  for (const CLI::Option* option : chosen->get_options()) {
    for (const std::string& name : option->get_lnames()) flags.push_back("--" + name);
  }
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) break;  // positional arguments follow
    const std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) continue;
    const std::string flag = arg.substr(0, arg.find('='));
    if (std::find(flags.begin(), flags.end(), flag) == flags.end()) {
      return "unknown flag " + flag + " for " + command + suggestion(flag, flags) + " (see attngeom " + command +
             " --help)";
    }
  }
  return std::nullopt;
}

}  // namespace attngeom::cli
