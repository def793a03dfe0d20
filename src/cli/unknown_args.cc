#include "cli/unknown_args.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "util/near_name.h"

namespace attngeom::cli {

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
    return "unknown command '" + command + "'" + near_name_suggestion(command, commands) + "; commands: " + list;
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
      return "unknown flag " + flag + " for " + command + near_name_suggestion(flag, flags) + " (see attngeom " +
             command + " --help)";
    }
  }
  return std::nullopt;
}

}  // namespace attngeom::cli
