#include "io/config_layers.h"

#include <cstdint>
#include <string>

namespace attngeom {

using nlohmann::json;

std::vector<int> parse_layer_list(const FieldReader& f, const char* key, int layers) {
  const json* v = f.find(key);
  if (v == nullptr || v->is_null()) return {};
  const auto malformed = [&] {
    return f.error(key, "must be an array of layer indices in [0, num_hidden_layers = " + std::to_string(layers) + ")");
  };
  if (!v->is_array()) throw malformed();
  std::vector<int> out;
  for (const json& e : *v) {
    if (!e.is_number_integer() || e.get<std::int64_t>() < 0 || e.get<std::int64_t>() >= layers) throw malformed();
    out.push_back(e.get<int>());
  }
  return out;
}

std::vector<bool> parse_layer_types(const FieldReader& f, int layers) {
  const json* v = f.find("layer_types");
  if (v == nullptr || v->is_null()) return {};
  if (!v->is_array() || v->size() != static_cast<std::size_t>(layers)) {
    throw f.error("layer_types", "must be an array of num_hidden_layers (" + std::to_string(layers) + ") strings");
  }
  std::vector<bool> sliding;
  for (const json& t : *v) {
    const std::string type = t.is_string() ? t.get<std::string>() : t.dump();
    if (type != "sliding_attention" && type != "full_attention") {
      throw f.error("layer_types", "has '" + type + "'; supported: sliding_attention, full_attention");
    }
    sliding.push_back(type == "sliding_attention");
  }
  return sliding;
}

std::vector<bool> parse_rope_layers(const FieldReader& f, int layers) {
  std::vector<bool> rope;
  const json* v = f.find("no_rope_layers");
  if (v == nullptr || v->is_null()) {
    const int interval = f.int_or("no_rope_layer_interval", 4, 1);
    for (int l = 0; l < layers; ++l) rope.push_back((l + 1) % interval != 0);
    return rope;
  }
  if (!v->is_array() || v->size() < static_cast<std::size_t>(layers)) {
    throw f.error("no_rope_layers",
                  "must be an array of at least num_hidden_layers (" + std::to_string(layers) + ") entries 0 or 1");
  }
  for (int l = 0; l < layers; ++l) {
    const json& e = (*v)[static_cast<std::size_t>(l)];
    if (!e.is_number_integer() || (e.get<std::int64_t>() != 0 && e.get<std::int64_t>() != 1)) {
      throw f.error("no_rope_layers", "has " + e.dump() + " at layer " + std::to_string(l) + "; expected 0 or 1");
    }
    rope.push_back(e.get<std::int64_t>() == 1);
  }
  return rope;
}

std::vector<bool> parse_local_layers(const FieldReader& f, int layers) {
  const auto read = [&](const char* key, const json& list) {
    if (!list.is_array()) throw f.error(key, "must be a list of \"global\" or \"local\"");
    std::vector<bool> local;
    for (const json& t : list) {
      const std::string type = t.is_string() ? t.get<std::string>() : t.dump();
      if (type != "global" && type != "local") throw f.error(key, "has '" + type + "'; supported: global, local");
      local.push_back(type == "local");
    }
    return local;
  };
  const auto expand = [&](const json& types) {
    if (!types.is_array()) throw f.error("attention_types", "must be a list of [[types...], count] pairs");
    std::vector<bool> local;
    for (const json& item : types) {
      if (!item.is_array() || item.size() != 2 || !item[1].is_number_integer() || item[1].get<std::int64_t>() < 0 ||
          item[1].get<std::int64_t>() > layers) {
        throw f.error("attention_types", "must be a list of [[types...], count] pairs");
      }
      const std::vector<bool> block = read("attention_types", item[0]);
      for (std::int64_t n = 0; n < item[1].get<std::int64_t>(); ++n)
        local.insert(local.end(), block.begin(), block.end());
    }
    return local;
  };
  const json* types = f.find("attention_types");
  const json* listed = f.find("attention_layers");
  const bool has_types = types != nullptr && !types->is_null();
  const bool has_list = listed != nullptr && !listed->is_null();
  const std::vector<bool> local = has_list    ? read("attention_layers", *listed)
                                  : has_types ? expand(*types)
                                              : expand(json::parse(R"([[["global", "local"], 12]])"));
  if (has_list && has_types && expand(*types) != local) {
    throw f.error("attention_layers", "disagrees with attention_types expanded");
  }
  if (local.size() != static_cast<std::size_t>(layers)) {
    throw f.error(
        has_list ? "attention_layers" : "attention_types",
        "gives " + std::to_string(local.size()) + " layer types for num_layers (" + std::to_string(layers) + ")");
  }
  return local;
}

}  // namespace attngeom
