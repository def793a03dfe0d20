#pragma once
// Each subcommand registers its flags (each declared once, with default and help)
// and its action on the root app.
#include <CLI/CLI.hpp>

namespace attngeom::cli {

void add_capture_command(CLI::App& app);
void add_synth_command(CLI::App& app);

}  // namespace attngeom::cli
