// PLACEHOLDER: the geometry work replaces this file with the real `attngeom synth`.
#include "cli/commands.h"
namespace attngeom::cli {
void add_synth_command(CLI::App& app) { (void)app; }
}  // namespace attngeom::cli
