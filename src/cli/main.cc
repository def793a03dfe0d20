// attngeom: geometric analysis of token selection in attention heads.
// Exit codes: 0 success, 2 bad input or flags (one line on stderr), other: internal error.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <new>
#include <optional>
#include <string>

#include "cli/commands.h"
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
  } catch (const attngeom::cli::StoppedEarly&) {
    return 130;
  } catch (const attngeom::SettingError& e) {
    std::fprintf(stderr, "attngeom: error: %s\n",
                 attngeom::printable_message(attngeom::cli::spelled(e.message())).c_str());
    return 2;
  } catch (const attngeom::InputError& e) {
    std::fprintf(stderr, "attngeom: error: %s\n", e.what());
    return 2;
  } catch (const std::filesystem::filesystem_error& e) {
    // A file system refusal (permissions, a vanished path) the code did not anticipate.
    std::fprintf(stderr, "attngeom: error: %s\n", attngeom::printable_message(e.what()).c_str());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(
        stderr,
        "attngeom: error: out of memory (try a smaller input: a shorter sequence, fewer query rows or values)\n");
    return 2;
  } catch (const std::exception& e) {
    // A library's own failure (oneDNN's dnnl::error, say) that no check foresaw: one line and
    // the internal-error exit code, rather than std::terminate's abort.
    std::fprintf(stderr, "attngeom: internal error: %s\n", attngeom::printable_message(e.what()).c_str());
    return 1;
  }
  return 0;
}
