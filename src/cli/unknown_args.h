#pragma once
// A clearer message for a mistyped command or flag. CLI11 reports what it checks first: a
// misspelt `analyse` reads as "A subcommand is required", and `--modle x` as "--model is
// required", neither naming the word at fault.
#include <CLI/CLI.hpp>
#include <optional>
#include <string>

namespace attngeom::cli {

// "unknown command 'analyse' (did you mean analyze?); commands: ..." or "unknown flag
// --modle for analyze (did you mean --model?) ...", when argv holds such a word.
std::optional<std::string> unknown_argument(const CLI::App& app, int argc, const char* const* argv);

}  // namespace attngeom::cli
