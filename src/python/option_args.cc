#include "python/option_args.h"

#include "util/error.h"

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

}  // namespace attngeom::python
