#pragma once
// Keyword arguments as settings: each Python value checked as the CLI checks its flag, with
// the message naming the keyword.
#include <pybind11/pybind11.h>

#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "analysis/option_table.h"

namespace attngeom::python {

// The Python value of setting `name` as T; TypeError unless it is one.
template <typename T>
T value_of(const std::string& name, const pybind11::handle& value) {
  const bool is_bool = pybind11::isinstance<pybind11::bool_>(value);
  const bool ok =
      std::is_same_v<T, bool> ? is_bool
      : std::is_integral_v<T> ? pybind11::isinstance<pybind11::int_>(value) && !is_bool
      : std::is_floating_point_v<T>
          ? (pybind11::isinstance<pybind11::float_>(value) || pybind11::isinstance<pybind11::int_>(value)) && !is_bool
          : pybind11::isinstance<pybind11::str>(value);
  if (!ok) {
    throw pybind11::type_error(name + ": expected " +
                               std::string(pybind11::str(pybind11::type::of(pybind11::cast(T{})).attr("__name__"))) +
                               ", got " + std::string(pybind11::str(pybind11::type::of(value).attr("__name__"))));
  }
  return value.cast<T>();
}

long long integer_in(const std::string& name, const pybind11::handle& value, long long lo, long long hi);

std::string one_of(const std::string& name, const pybind11::handle& value, const std::vector<std::string>& choices);

// One entry of the option table from a Python value.
void set_table_option(const OptionSpec& spec, const OptionTarget& target, const pybind11::handle& value);

// The option table's entries that shape records and tables (not analyze's run-level ones):
// the keywords of every call that analyses arrays it is given (metrics, hf).
std::vector<const OptionSpec*> geometry_options();

// A keyword's setter: (name, value), checked as its CLI flag is.
using KeywordSetter = std::function<void(const std::string& name, const pybind11::handle& value)>;

// Each keyword of `options` by its setter in `own`, else as a geometry option into `target`;
// None leaves a default. Any other name is a TypeError naming `function` and the nearest known one.
void set_keywords(const std::string& function, const pybind11::dict& options,
                  const std::map<std::string, KeywordSetter>& own, const OptionTarget& target);

// The keywords set_keywords accepts with `own`.
std::vector<std::string> keyword_names(const std::map<std::string, KeywordSetter>& own);

}  // namespace attngeom::python
