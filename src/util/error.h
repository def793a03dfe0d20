#pragma once
// Two kinds of failure, kept apart:
//  - InputError: bad user input (files, flags, configs). Recoverable; the CLI prints
//    its one-line message and exits with code 2.
//  - ATTNGEOM_CHECK: a broken internal invariant. Prints and aborts.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace attngeom {

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
};

[[noreturn]] inline void check_failed(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "attngeom: internal error: check failed: %s at %s:%d\n", expr, file, line);
  std::abort();
}

}  // namespace attngeom

#define ATTNGEOM_CHECK(cond) \
  ((cond) ? static_cast<void>(0) : ::attngeom::check_failed(#cond, __FILE__, __LINE__))
