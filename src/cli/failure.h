#pragma once
// What an exception thrown by a command becomes: one line on stderr after "attngeom: ", and
// the exit code (2: bad input or flags, 1: an internal error).
#include <exception>
#include <string>

namespace attngeom::cli {

struct Failure {
  bool internal = false;  // printed as "internal error: ...", else "error: ..."
  std::string message;
  int exit_code = 1;
};

// Rethrows `error` (a std::exception) to describe it.
Failure describe_failure(const std::exception_ptr& error);

}  // namespace attngeom::cli
