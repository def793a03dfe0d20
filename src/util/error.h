#pragma once
// Two kinds of failure, kept apart:
//  - InputError: bad user input (files, flags, configs). Recoverable; the CLI prints
//    its one-line message and exits with code 2. SettingError, an InputError about
//    settings, names them by setting ("out", "seq_len"); the CLI shows them as its flags.
//  - ATTNGEOM_CHECK: a broken internal invariant. Prints and aborts.
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

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

// Bad input that is a missing file or folder (Python front end: FileNotFoundError).
class MissingFileError : public InputError {
 public:
  using InputError::InputError;
};

// A setting named in a message, as the settings structs name it ("out", "seq_len").
struct SettingName {
  std::string name;
};
inline SettingName setting(std::string name) { return {std::move(name)}; }

// A message in text and setting names: library code names settings, and each front end spells
// them its own way (the CLI as flags: "out" as --out).
class SettingMessage {
 public:
  using Part = std::variant<std::string, SettingName>;
  SettingMessage(std::initializer_list<Part> parts) : parts_(parts) {}
  // NOLINTNEXTLINE: plain text is a message too
  SettingMessage(std::string text) : parts_{std::move(text)} {}
  SettingMessage(const char* text) : SettingMessage(std::string(text)) {}  // NOLINT
  SettingMessage& operator+=(const SettingMessage& more) {
    parts_.insert(parts_.end(), more.parts_.begin(), more.parts_.end());
    return *this;
  }
  std::string spelled(const std::function<std::string(const std::string&)>& spell) const {
    std::string out;
    for (const Part& part : parts_) {
      out += std::holds_alternative<std::string>(part) ? std::get<std::string>(part)
                                                       : spell(std::get<SettingName>(part).name);
    }
    return out;
  }
  std::string plain() const {
    return spelled([](const std::string& name) { return name; });
  }

 private:
  std::vector<Part> parts_;
};

inline SettingMessage operator+(SettingMessage a, const SettingMessage& b) { return a += b; }

// Bad input about settings: what() names them plainly; message() lets the CLI spell them as flags.
class SettingError : public InputError {
 public:
  explicit SettingError(SettingMessage message) : InputError(message.plain()), message_(std::move(message)) {}
  const SettingMessage& message() const { return message_; }

 private:
  SettingMessage message_;
};

[[noreturn]] inline void check_failed(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "attngeom: internal error: check failed: %s at %s:%d\n", expr, file, line);
  std::abort();
}

}  // namespace attngeom

#define ATTNGEOM_CHECK(cond) ((cond) ? static_cast<void>(0) : ::attngeom::check_failed(#cond, __FILE__, __LINE__))
