// attngeom: geometric analysis of token selection in attention heads.
// Exit codes: 0 success, 2 bad input or flags (one line on stderr), other: internal error.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "cli/failure.h"
#include "cli/resume_command.h"
#include "cli/unknown_args.h"
#include "util/error.h"
#include "util/version.h"

int main(int argc, char** argv) {
  // Past `ulimit -f` a write must fail with EFBIG (a clear error, earlier results kept)
  // instead of the default SIGXFSZ killing the process mid-file.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"attngeom: geometric analysis of token selection in multi-head attention"};
  app.set_version_flag("--version", std::string(attngeom::kVersion) + " (" + attngeom::kGitCommit + ")");
  app.require_subcommand(1);
  attngeom::cli::add_analyze_command(app);
  attngeom::cli::add_bench_command(app);
  attngeom::cli::add_capture_command(app);
  attngeom::cli::add_compare_command(app);
  attngeom::cli::add_demo_command(app);
  attngeom::cli::add_devices_command(app);
  attngeom::cli::add_export_command(app);
  attngeom::cli::add_metrics_command(app);
  attngeom::cli::add_merge_command(app);
  attngeom::cli::add_perplexity_command(app);
  attngeom::cli::add_prune_command(app);
  attngeom::cli::add_synth_command(app);
  attngeom::cli::add_tokenize_command(app);
  attngeom::cli::add_report_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const std::optional<std::string> unknown = attngeom::cli::unknown_argument(app, argc, argv);
    std::fprintf(stderr, "attngeom: error: %s\n",
                 attngeom::printable_message(unknown ? *unknown : std::string(e.what()) + " (see --help)").c_str());
    return 2;
  } catch (const attngeom::cli::StoppedEarly& stopped) {
    std::fprintf(stderr, "attngeom: %s; continue with: %s\n", stopped.progress.c_str(),
                 attngeom::cli::resume_command({argv, argv + argc}).c_str());
    return 130;
  } catch (const std::exception&) {
    const attngeom::cli::Failure failure = attngeom::cli::describe_failure(std::current_exception());
    std::fprintf(stderr, "attngeom: %s: %s\n", failure.internal ? "internal error" : "error", failure.message.c_str());
    return failure.exit_code;
  }
  return 0;
}
