// attngeom devices: where --device can run the forward pass on this machine.
#include <omp.h>

#include <cstdio>

#include "cli/commands.h"
#include "model/engine.h"

namespace attngeom::cli {

void add_devices_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("devices", "List the devices --device can name here (cpu, and each CUDA GPU)");
  cmd->callback([] {
    std::printf("cpu: %d threads\n", omp_get_max_threads());
    for (const std::string& line : describe_gpus()) std::printf("%s\n", line.c_str());
  });
}

}  // namespace attngeom::cli
