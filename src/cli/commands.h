#pragma once
// Each subcommand registers its flags (each declared once, with default and help)
// and its action on the root app.
#include <string>

#include <CLI/CLI.hpp>

#include "ops/gemm.h"

namespace attngeom::cli {

// --precision auto|fp32|bf16, shared by every command that runs the model.
void add_precision_option(CLI::App& cmd, std::string& value);
// auto: bf16 when oneDNN can use AMX on this CPU, else fp32.
Precision resolve_precision(const std::string& value);

void add_capture_command(CLI::App& app);
void add_synth_command(CLI::App& app);
void add_report_command(CLI::App& app);

}  // namespace attngeom::cli
