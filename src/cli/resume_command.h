#pragma once
// The command that continues a stopped analyze, as one line a shell can run: the arguments the
// run was started with, shell-quoted, with --resume in place of --overwrite.
#include <string>
#include <vector>

namespace attngeom::cli {

// `word` quoted for a POSIX shell: left as it is when it holds only safe characters.
std::string shell_quoted(const std::string& word);

// `args` is the whole command line (argv[0] first).
std::string resume_command(const std::vector<std::string>& args);

}  // namespace attngeom::cli
