#include "python/option_args.h"

#include <algorithm>

#include "util/error.h"
#include "util/near_name.h"

namespace attngeom::python {

namespace py = pybind11;

long long integer_in(const std::string& name, const py::handle& value, long long lo, long long hi) {
  const auto x = value_of<long long>(name, value);
  if (x < lo || x > hi) {
    throw SettingError({setting(name), ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                           "], found " + std::to_string(x)});
  }
  return x;
}

std::string one_of(const std::string& name, const py::handle& value, const std::vector<std::string>& choices) {
  const auto text = value_of<std::string>(name, value);
  std::string listed;
  for (const auto& c : choices) {
    if (c == text) return text;
    listed += (listed.empty() ? "" : ", ") + c;
  }
  throw SettingError({setting(name), ": expected one of " + listed + ", found '" + text + "'"});
}

void set_table_option(const OptionSpec& spec, const OptionTarget& target, const py::handle& value) {
  const std::string name(spec.name);
  std::visit(
      [&](auto member) {
        using T = std::remove_pointer_t<decltype(member)>;
        if constexpr (std::is_same_v<T, SeedMember>) {
          *member.value = static_cast<std::uint64_t>(integer_in(name, value, 0, (1LL << 53) - 1));
        } else if constexpr (std::is_same_v<T, OptionalSeedMember>) {
          *member.value = static_cast<std::uint64_t>(integer_in(name, value, 0, (1LL << 53) - 1));
        } else if constexpr (std::is_same_v<T, NamedBoolMember>) {
          *member.value =
              one_of(name, value, {std::string(member.if_true), std::string(member.if_false)}) == member.if_true;
        } else if constexpr (std::is_same_v<T, QuerySelection>) {
          *member = parse_query_selection(value_of<std::string>(name, value));
        } else if constexpr (std::is_same_v<T, std::string>) {
          *member = value_of<std::string>(name, value);
        } else if constexpr (std::is_same_v<T, int>) {
          *member = static_cast<int>(
              integer_in(name, value, static_cast<long long>(spec.lo), static_cast<long long>(spec.hi)));
        } else if constexpr (std::is_same_v<T, bool>) {
          *member = value_of<bool>(name, value);
        } else if constexpr (std::is_same_v<T, geometry::R1Eta>) {
          *member = parse_r1_eta(one_of(name, value, {"max", "mae"}));
        } else if constexpr (std::is_same_v<T, std::size_t>) {
          *member = static_cast<std::size_t>(
              integer_in(name, value, static_cast<long long>(spec.lo), static_cast<long long>(spec.hi)));
        } else if constexpr (std::is_same_v<T, double>) {
          const auto x = value_of<double>(name, value);
          if (!(x >= spec.lo && x <= spec.hi)) {  // false for NaN
            throw SettingError({setting(name), ": expected a number in [" + std::to_string(spec.lo) + ", " +
                                                   std::to_string(spec.hi) + "], found " + std::to_string(x)});
          }
          *member = x;
        } else {
          throw py::type_error(name + ": not a setting of analyze");
        }
      },
      spec.member(target));
}

std::vector<const OptionSpec*> geometry_options() {
  std::vector<const OptionSpec*> specs;
  for (const OptionSpec& spec : analysis_option_table()) {
    if (!spec.help.empty() && !is_run_level(spec.place)) specs.push_back(&spec);
  }
  return specs;
}

std::vector<std::string> keyword_names(const std::map<std::string, KeywordSetter>& own) {
  std::vector<std::string> names;
  for (const auto& [name, setter] : own) names.push_back(name);
  for (const OptionSpec* spec : geometry_options()) names.emplace_back(spec->name);
  return names;
}

void set_keywords(const std::string& function, const py::dict& options, const std::map<std::string, KeywordSetter>& own,
                  const OptionTarget& target) {
  const std::vector<const OptionSpec*> specs = geometry_options();
  for (const auto& [key, value] : options) {
    const auto name = key.cast<std::string>();
    if (value.is_none()) continue;  // None: the default
    if (const auto it = own.find(name); it != own.end()) {
      it->second(name, value);
    } else if (const auto spec =
                   std::find_if(specs.begin(), specs.end(), [&](const OptionSpec* o) { return o->name == name; });
               spec != specs.end()) {
      set_table_option(**spec, target, value);
    } else {
      throw py::type_error(function + "() got an unexpected keyword argument '" + name + "'" +
                           near_name_suggestion(name, keyword_names(own)));
    }
  }
}

}  // namespace attngeom::python
