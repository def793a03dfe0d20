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

// Messages quote names from untrusted files (tensor names, shard names, JSON keys): control
// characters are escaped (\n, \t, \xHH), so a message is always exactly one printable line
// and a NUL cannot cut it short.
inline std::string printable_message(const std::string& message) {
  std::string out;
  out.reserve(message.size());
  for (const char ch : message) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += ch;
    }
  }
  return out;
}

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(printable_message(message)) {}
};

[[noreturn]] inline void check_failed(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "attngeom: internal error: check failed: %s at %s:%d\n", expr, file, line);
  std::abort();
}

}  // namespace attngeom

#define ATTNGEOM_CHECK(cond) \
  ((cond) ? static_cast<void>(0) : ::attngeom::check_failed(#cond, __FILE__, __LINE__))
