#pragma once
// A config.json object read field by field: each bad field becomes one InputError that names it
// (with a nested object's path) and says what was expected. Shared by config_json.cc and the
// readers of a config's parts (config_rope.cc, config_layers.cc).
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "util/error.h"

namespace attngeom {

class FieldReader {
 public:
  using json = nlohmann::json;

  // prefix names a nested object's keys in messages ("rope_parameters.").
  FieldReader(const json& root, const std::string& source, std::string prefix = "")
      : root_(root), source_(source), prefix_(std::move(prefix)) {}

  int positive_int(const char* key) const {
    const json* v = find(key);
    if (v == nullptr) throw error(key, "is missing");
    return checked_int(key, *v, 1);
  }
  // fallback 0: the key is required.
  int positive_int_or(const char* key, int fallback) const {
    const json* v = find(key);
    return (v == nullptr && fallback > 0) ? fallback : positive_int(key);
  }
  // A reader of the nested object `value`, naming its keys with `prefix` in messages.
  FieldReader nested(const json& value, const std::string& prefix) const {
    return FieldReader(value, source_, prefix_ + prefix);
  }
  int int_or(const char* key, int fallback, int min_value) const {
    const json* v = find(key);
    return (v == nullptr || v->is_null()) ? fallback : checked_int(key, *v, min_value);
  }
  float positive_float_or(const char* key, float fallback) const {
    const json* v = find(key);
    if (v == nullptr || v->is_null()) return fallback;
    // Checked as a double first: converting one beyond float's range is undefined.
    if (!v->is_number() || !(v->get<double>() > 0) || !(v->get<double>() <= std::numeric_limits<float>::max()) ||
        !(static_cast<float>(v->get<double>()) > 0)) {
      throw error(key, "must be a positive number within float range");
    }
    return static_cast<float>(v->get<double>());
  }
  bool bool_or(const char* key, bool fallback) const {
    const json* v = find(key);
    if (v == nullptr || v->is_null()) return fallback;
    if (!v->is_boolean()) throw error(key, "must be true or false");
    return v->get<bool>();
  }
  std::string string_or(const char* key, const std::string& fallback) const {
    const json* v = find(key);
    if (v == nullptr || v->is_null()) return fallback;
    if (!v->is_string()) throw error(key, "must be a string");
    return v->get<std::string>();
  }
  const json* find(const char* key) const {
    const auto it = root_.find(key);
    return it == root_.end() ? nullptr : &*it;
  }
  InputError error(const char* key, const std::string& what) const {
    return InputError(source_ + ": field '" + prefix_ + key + "' " + what);
  }

 private:
  int checked_int(const char* key, const json& v, int min_value) const {
    if (!v.is_number_integer() || v.get<std::int64_t>() < min_value || v.get<std::int64_t>() > (1 << 30)) {
      throw error(key, "must be an integer in [" + std::to_string(min_value) + ", 2^30]");
    }
    return v.get<int>();
  }
  const json& root_;
  std::string source_;
  std::string prefix_;
};

// Whether `key` is written and not null.
inline bool present(const FieldReader& f, const char* key) { return f.find(key) != nullptr && !f.find(key)->is_null(); }

}  // namespace attngeom
