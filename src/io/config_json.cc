#include "io/config_json.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/error.h"
#include "util/file_read.h"
#include "util/json_parse.h"

namespace attngeom {
namespace {

// The route that exists for a model the engine does not read.
constexpr const char* kDumpRoute =
    "; any model transformers runs can still be analysed from its attentions and values: attngeom.write_dump, "
    "then attngeom metrics (docs/python.md)";

using nlohmann::json;

class FieldReader {
 public:
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

Activation parse_activation(const FieldReader& f, const Family& family) {
  const std::string name = f.string_or(family.activation_key, family.activation_default);
  if (name == "silu" || name == "swish") return Activation::kSilu;
  if (name == "gelu_pytorch_tanh" || name == "gelu_new" || name == "gelu_fast") return Activation::kGeluTanh;
  if (name == "gelu") return Activation::kGeluErf;
  throw f.error(family.activation_key,
                "'" + name + "' is not supported (supported: silu, gelu_pytorch_tanh, gelu_new, gelu)");
}

bool present(const FieldReader& f, const char* key) { return f.find(key) != nullptr && !f.find(key)->is_null(); }

// Mixture-of-experts layers are not a dense MLP; refused unless the family reads them under
// this key (MoeTraits::experts_key) or its alias.
void refuse_moe(const FieldReader& f, const MoeTraits* moe) {
  for (const char* key : {"num_experts", "num_local_experts"}) {
    if (moe != nullptr && (std::string_view(key) == moe->experts_key || std::string_view(key) == moe->experts_alias))
      continue;
    const json* v = f.find(key);
    if (v != nullptr && !v->is_null() && !(v->is_number_integer() && v->get<std::int64_t>() == 0)) {
      throw f.error(key,
                    std::string("is set: mixture-of-experts models are not supported (dense MLPs only)") + kDumpRoute);
    }
  }
}

// mlp_only_layers: layer indices in [0, layers), or null / absent (none).
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

// A mixture of experts' sizes and routing (MoeTraits): the expert count, top_k, whether the
// top-k weights are renormalised, the experts' width, and which layers are sparse.
void parse_moe(const FieldReader& f, const MoeTraits& moe, const ModelConfig& c, RecipeInputs& in) {
  const char* experts_key = !present(f, moe.experts_key) && *moe.experts_alias != '\0' && present(f, moe.experts_alias)
                                ? moe.experts_alias
                                : moe.experts_key;
  // Qwen3MoeConfig: num_experts 0 makes every layer dense.
  in.experts = f.int_or(experts_key, moe.experts, moe.sparse_step ? 0 : 1);
  in.top_k = f.int_or("num_experts_per_tok", moe.top_k, 1);
  if (in.experts > 0 && in.top_k > in.experts) {
    throw f.error("num_experts_per_tok", "(" + std::to_string(in.top_k) + ") exceeds " + experts_key + " (" +
                                             std::to_string(in.experts) + ")");
  }
  in.renormalize = *moe.renormalize_key != '\0' ? f.bool_or(moe.renormalize_key, moe.renormalize) : moe.renormalize;
  in.expert_intermediate =
      *moe.intermediate_key != '\0' ? f.positive_int_or(moe.intermediate_key, moe.intermediate) : c.intermediate;
  if (moe.sparse_step) {
    in.sparse_step = f.int_or("decoder_sparse_step", 1, 1);
    in.dense_layers = parse_layer_list(f, "mlp_only_layers", c.layers);
  }
}

// GPT-J: the count of each head's channels that RoPE rotates (GPTJConfig.rotary_dim). Null
// rotates the whole hidden size in HF, a table that fits a head only with one head: refused.
int parse_rotary_dims(const FieldReader& f, const Family& family, int head_dim) {
  const char* key = family.rotary_dims_key;
  const json* v = f.find(key);
  if (v != nullptr && v->is_null())
    throw f.error(key, "must be a number (null, RoPE over the whole hidden size, is not supported)");
  const int dims = f.int_or(key, family.rotary_dims, 0);
  if (dims > head_dim)
    throw f.error(key, "(" + std::to_string(dims) + ") exceeds head_dim (" + std::to_string(head_dim) + ")");
  return dims;
}

// The fraction of each head that RoPE rotates: transformers 5.x rope_parameters.partial_rotary_factor,
// else 4.x partial_rotary_factor or the family's own key (GPT-NeoX rotary_pct), else the
// family's default. Families without partial rotary refuse a fraction below 1.
double parse_rotary_fraction(const FieldReader& f, const Family& family) {
  double fraction = family.rotary_fraction > 0 ? family.rotary_fraction : 1.0;
  const char* key = "partial_rotary_factor";
  const FieldReader* reader = &f;
  std::optional<FieldReader> nested;
  if (const json* params = f.find("rope_parameters");
      params != nullptr && params->is_object() && present(f.nested(*params, "rope_parameters."), key)) {
    nested.emplace(f.nested(*params, "rope_parameters."));
    reader = &*nested;
  } else if (!present(f, key) && *family.rotary_key != '\0' && present(f, family.rotary_key)) {
    key = family.rotary_key;
  }
  if (present(*reader, key)) fraction = reader->positive_float_or(key, 1.0f);
  if (fraction > 1.0) throw reader->error(key, "must be at most 1");
  if (fraction < 1.0 && family.rotary_fraction == 0) {
    throw reader->error(key, "is below 1: partial rotary embeddings are not supported for " +
                                 std::string(family.model_type) + " (RoPE over the whole head_dim only)");
  }
  return fraction;
}

// One RoPE setting from `r`, a rope_scaling object or a transformers v5 rope_parameters
// object (modeling_rope_utils.py: rope_type, or the legacy key type).
RopeSpec parse_rope_spec(const FieldReader& r, double theta) {
  RopeSpec spec;
  spec.theta = theta;
  const char* type_key = present(r, "rope_type") ? "rope_type" : "type";
  const std::string type = r.string_or(type_key, "default");
  const auto factor = [&](const char* key) { return static_cast<double>(r.positive_float_or(key, 0.0f)); };
  const auto required = [&](const char* key) {
    if (!present(r, key)) throw r.error(key, "is missing (rope_type '" + type + "' needs it)");
    return factor(key);
  };
  if (type == "default") return spec;
  if (type == "linear") {
    spec.type = RopeType::kLinear;
    spec.factor = required("factor");
  } else if (type == "llama3") {
    spec.type = RopeType::kLlama3;
    spec.factor = required("factor");
    spec.low_freq_factor = required("low_freq_factor");
    spec.high_freq_factor = required("high_freq_factor");
    spec.original_max_positions = required("original_max_position_embeddings");
    if (!(spec.high_freq_factor > spec.low_freq_factor)) {
      throw r.error("high_freq_factor", "must exceed low_freq_factor");
    }
  } else if (type == "longrope") {
    // _compute_longrope_parameters: short_factor / long_factor per frequency; attention_factor,
    // else from the context extension (finish_longrope, which sees the top level too).
    spec.type = RopeType::kLongRope;
    const auto factors = [&](const char* key) {
      const json* v = r.find(key);
      if (v == nullptr || !v->is_array() || v->empty()) throw r.error(key, "must be a non-empty array of numbers");
      std::vector<double> out;
      for (const json& e : *v) {
        if (!e.is_number() || !(e.get<double>() > 0)) throw r.error(key, "must hold positive numbers");
        out.push_back(e.get<double>());
      }
      return out;
    };
    spec.short_factor = factors("short_factor");
    spec.long_factor = factors("long_factor");
    spec.attention_factor = present(r, "attention_factor") ? factor("attention_factor") : 0;  // 0: derived
    spec.original_max_positions = present(r, "original_max_position_embeddings")
                                      ? static_cast<double>(r.int_or("original_max_position_embeddings", 0, 1))
                                      : 0;  // 0: the top level's
  } else if (type == "yarn") {
    // _compute_yarn_parameters: factor (absent: from the context extension, as transformers 5.x),
    // the pretrained length (absent: max_position_embeddings), the attention factor (absent:
    // from mscale), all three completed by finish_yarn; beta_fast and beta_slow (null or 0: 32
    // and 1, as HF's `or`), truncate.
    spec.type = RopeType::kYarn;
    spec.factor = present(r, "factor") ? factor("factor") : 0;
    spec.original_max_positions = present(r, "original_max_position_embeddings")
                                      ? static_cast<double>(r.int_or("original_max_position_embeddings", 0, 1))
                                      : 0;
    spec.attention_factor = present(r, "attention_factor") ? factor("attention_factor") : 0;
    const auto nonzero_or = [&](const char* key, double fallback) {
      const json* v = r.find(key);
      return v != nullptr && v->is_number() && v->get<double>() == 0
                 ? fallback
                 : static_cast<double>(r.positive_float_or(key, fallback));
    };
    spec.beta_fast = nonzero_or("beta_fast", 32.0);
    spec.beta_slow = nonzero_or("beta_slow", 1.0);
    spec.mscale = nonzero_or("mscale", 0.0);
    spec.mscale_all_dim = nonzero_or("mscale_all_dim", 0.0);
    spec.truncate = r.bool_or("truncate", true);
  } else {
    throw r.error(type_key, "'" + type + "' is not supported (supported: default, linear, llama3, longrope, yarn)");
  }
  return spec;
}

// yarn's pretrained length, factor and attention factor, as _compute_yarn_parameters takes
// them: the length nested, else max_position_embeddings; the factor given, else
// max_position_embeddings / original; without attention_factor, m(factor, mscale) /
// m(factor, mscale_all_dim) where both are given, else m(factor, 1), m(s, k) = 0.1 k ln(s) + 1
// for s > 1, else 1.
void finish_yarn(const FieldReader& f, int max_positions, RopeSpec& spec) {
  if (spec.original_max_positions == 0 || spec.factor == 0) {
    if (!present(f, "max_position_embeddings")) {
      throw f.error("max_position_embeddings",
                    "is missing (rope_type 'yarn' without " +
                        std::string(spec.factor == 0 ? "factor" : "original_max_position_embeddings") + " needs it)");
    }
    if (spec.original_max_positions == 0) spec.original_max_positions = max_positions;
    if (spec.factor == 0) spec.factor = max_positions / spec.original_max_positions;
  }
  if (spec.attention_factor == 0) {
    const auto m = [&](double k) { return spec.factor <= 1 ? 1.0 : 0.1 * k * std::log(spec.factor) + 1.0; };
    spec.attention_factor = spec.mscale > 0 && spec.mscale_all_dim > 0 ? m(spec.mscale) / m(spec.mscale_all_dim) : m(1);
  }
}

// longrope's pretrained length and attention factor, as _compute_longrope_parameters takes them:
// original_max_position_embeddings (nested, else top level, else max_position_embeddings);
// without attention_factor, sqrt(1 + ln(s) / ln(original)) for s = max_position_embeddings /
// original > 1, else 1. Each factor list must have one entry per rotary frequency.
void finish_longrope(const FieldReader& f, int max_positions, int rotary_dim, RopeSpec& spec) {
  if (spec.original_max_positions == 0) {
    spec.original_max_positions = f.int_or("original_max_position_embeddings", max_positions, 1);
  }
  if (spec.attention_factor == 0) {
    const double scale = max_positions / spec.original_max_positions;
    spec.attention_factor = scale <= 1 ? 1.0 : std::sqrt(1 + std::log(scale) / std::log(spec.original_max_positions));
  }
  const auto half = static_cast<std::size_t>(rotary_dim / 2);
  if (spec.short_factor.size() != half || spec.long_factor.size() != half) {
    throw f.error("rope_scaling", "longrope short_factor and long_factor must hold rotary_dim / 2 = " +
                                      std::to_string(half) + " values each");
  }
}

// The RoPE of global layers and of Gemma-3's sliding layers. Configs of transformers 4.x
// write rope_theta and rope_scaling at the top level; v5 writes {rope_type, rope_theta, ...}
// under rope_parameters, per layer type for Gemma-3.
void parse_rope(const FieldReader& f, const Family& family, RecipeInputs& in) {
  // GPT-NeoX 4.x writes rotary_emb_base (and, from 4.45, rope_theta beside it).
  const char* theta_key = !present(f, "rope_theta") && *family.theta_key != '\0' ? family.theta_key : "rope_theta";
  const double theta = f.positive_float_or(theta_key, static_cast<float>(family.defaults.rope_theta));
  in.global_rope = {};
  in.global_rope.theta = theta;
  if (const json* scaling = f.find("rope_scaling"); scaling != nullptr && !scaling->is_null()) {
    if (!scaling->is_object()) throw f.error("rope_scaling", "must be an object or null");
    in.global_rope = parse_rope_spec(f.nested(*scaling, "rope_scaling."), theta);
  }
  in.local_rope = {};
  in.local_rope.theta =
      family.local_rope == LocalRope::kLocalBase ? f.positive_float_or("rope_local_base_freq", 10000.0f) : theta;
  const json* params = f.find("rope_parameters");
  if (params == nullptr || params->is_null()) return;
  if (!params->is_object()) throw f.error("rope_parameters", "must be an object");
  // A nested rope_theta of the global layers must agree with a top-level one.
  const auto read = [&](const FieldReader& p, double fallback_theta, bool global) {
    const double nested = p.positive_float_or("rope_theta", static_cast<float>(fallback_theta));
    if (global && present(f, "rope_theta") && nested != theta) {
      throw p.error("rope_theta", "disagrees with the top-level rope_theta; expected one value");
    }
    return parse_rope_spec(p, nested);
  };
  bool per_layer_type = false;
  for (const auto& [key, value] : params->items()) {
    if (!value.is_object()) continue;
    per_layer_type = true;
    if (family.local_rope == LocalRope::kNone || (key != "full_attention" && key != "sliding_attention")) {
      throw f.error("rope_parameters",
                    "has a per-layer-type entry '" + key + "'; not supported for " + family.model_type);
    }
  }
  if (!per_layer_type) {
    in.global_rope = read(f.nested(*params, "rope_parameters."), theta, true);
    if (family.local_rope == LocalRope::kUnscaledBase) in.local_rope.theta = in.global_rope.theta;
    return;
  }
  if (const auto it = params->find("full_attention"); it != params->end()) {
    in.global_rope = read(f.nested(*it, "rope_parameters.full_attention."), theta, true);
    if (family.local_rope == LocalRope::kUnscaledBase) in.local_rope.theta = in.global_rope.theta;
  }
  if (const auto it = params->find("sliding_attention"); it != params->end()) {
    in.local_rope = read(f.nested(*it, "rope_parameters.sliding_attention."), in.local_rope.theta, false);
  }
}

// layer_types: "sliding_attention" or "full_attention" per layer (empty when absent).
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

// SmolLM3Config: no_rope_layers, 1 where a layer has RoPE and 0 where not, one entry per layer
// or more (the first ones count); null or absent: NoPE on every no_rope_layer_interval-th layer.
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

// GPTNeoConfig: attention_layers, "global" or "local" per layer, else attention_types expanded
// (each [types, n] appends `types` n times; default [[["global", "local"], 12]]); where both are
// written they must agree. True: local.
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

// Positive float, null (0: none), or the family default when absent.
float optional_cap(const FieldReader& f, const char* key, double fallback) {
  const json* v = f.find(key);
  if (v == nullptr) return static_cast<float>(fallback);
  return v->is_null() ? 0.0f : f.positive_float_or(key, 0.0f);
}

RecipeInputs recipe_inputs(const FieldReader& f, const Family& family, const ModelConfig& c, bool multimodal) {
  const FamilyDefaults& d = family.defaults;
  RecipeInputs in;
  in.layers = c.layers;
  in.hidden = c.hidden;
  in.head_dim = c.head_dim;
  in.multimodal = multimodal;
  in.attention_bias = f.bool_or("attention_bias", family.attention_bias_default);
  in.parallel_residual = f.bool_or("use_parallel_residual", true);
  // HF _compute_default_rope_parameters: dim = int(head_dim * partial_rotary_factor).
  in.rotary_dim = *family.rotary_dims_key != '\0' ? parse_rotary_dims(f, family, c.head_dim)
                                                  : static_cast<int>(c.head_dim * parse_rotary_fraction(f, family));
  const int rotary_dim = in.rotary_dim;
  if (family.rope && (rotary_dim < 2 || rotary_dim % 2 != 0)) {
    const char* key = *family.rotary_dims_key != '\0' ? family.rotary_dims_key
                      : *family.rotary_key != '\0'    ? family.rotary_key
                                                      : "partial_rotary_factor";
    throw f.error(key, "gives " + std::to_string(rotary_dim) + " rotary dimensions of head_dim " +
                           std::to_string(c.head_dim) + "; expected an even number of at least 2");
  }
  in.activation = parse_activation(f, family);
  in.query_pre_attn_scalar = f.positive_float_or("query_pre_attn_scalar", static_cast<float>(d.query_pre_attn_scalar));
  in.attn_softcap = optional_cap(f, "attn_logit_softcapping", d.attn_softcap);
  in.final_softcap = optional_cap(f, "final_logit_softcapping", d.final_softcap);
  in.sliding_window = f.find("sliding_window") == nullptr ? d.sliding_window : f.int_or("sliding_window", 0, 1);
  in.use_sliding_window = f.bool_or("use_sliding_window", false);
  in.max_window_layers = f.int_or("max_window_layers", d.max_window_layers, 0);
  if (family.window == WindowRule::kQwen || family.window == WindowRule::kLayerTypes ||
      family.window == WindowRule::kNoPe) {
    in.sliding_layers = parse_layer_types(f, c.layers);
  }
  if (family.reads_no_rope_layers) in.rope_layers = parse_rope_layers(f, c.layers);
  if (family.window == WindowRule::kLocalLayers) {
    in.sliding_window = f.int_or("window_size", family.defaults.sliding_window, 1);
    in.sliding_layers = parse_local_layers(f, c.layers);
  }
  // SmolLM3 (transformers 4.57): a sliding_attention layer type without use_sliding_window gets
  // the sliding mask in eager and sdpa attention but none in flash attention.
  if (family.window == WindowRule::kNoPe && !in.use_sliding_window &&
      std::find(in.sliding_layers.begin(), in.sliding_layers.end(), true) != in.sliding_layers.end()) {
    throw f.error("layer_types",
                  "has sliding_attention layers while use_sliding_window is false (transformers' "
                  "attention implementations disagree on whether they slide)");
  }
  if (family.reads_window_pattern) in.window_pattern = f.int_or("sliding_window_pattern", 0, 1);
  if (family.moe != nullptr) parse_moe(f, *family.moe, c, in);
  // Qwen3MoeAttention windows every layer with use_sliding_window in 4.57, but only the layers from
  // max_window_layers on in 4.51; the released models set it false.
  if (family.refuses_sliding_window && in.use_sliding_window) {
    throw f.error("use_sliding_window", std::string("must be false for ") + family.model_type +
                                            " (which layers it windows differs between transformers versions)");
  }
  parse_rope(f, family, in);
  for (RopeSpec* spec : {&in.global_rope, &in.local_rope}) {
    if (spec->type == RopeType::kLongRope) finish_longrope(f, c.max_positions, rotary_dim, *spec);
    if (spec->type == RopeType::kYarn) finish_yarn(f, c.max_positions, *spec);
  }
  return in;
}

}  // namespace

ModelConfig parse_model_config(const std::string& json_text, const std::string& source) {
  json root;
  try {
    root = parse_json(json_text, source);
  } catch (const json::exception& e) {
    throw InputError(source + ": malformed JSON (" + std::string(e.what()) + ")");
  }
  if (!root.is_object()) throw InputError(source + ": expected a JSON object");
  const FieldReader top(root, source);

  ModelConfig c;
  c.model_type = top.string_or("model_type", "");
  if (c.model_type.empty()) throw top.error("model_type", "is missing (supported: " + supported_model_types() + ")");
  // Gemma-3 multimodal: the text tower's config is text_config (Gemma3TextConfig), its
  // weights are under language_model.; the vision tower is never read.
  const bool multimodal = c.model_type == "gemma3";
  const Family* family = find_family(multimodal ? "gemma3_text" : c.model_type);
  if (family == nullptr) {
    refuse_moe(top, nullptr);
    throw InputError(source + ": unsupported model_type '" + c.model_type + "' (supported: " + supported_model_types() +
                     ")" + kDumpRoute);
  }
  const json* text_config = multimodal ? top.find("text_config") : &root;
  if (text_config == nullptr || !text_config->is_object()) throw top.error("text_config", "must be an object");
  // HF attribute_map (GPT2Config: n_embd is hidden_size, ...): the family's own keys, read under
  // the standard names when those are absent.
  json aliased = *text_config;
  if (family->config_aliases != nullptr) {
    for (auto* alias = family->config_aliases; (*alias)[0] != nullptr; ++alias) {
      if (const auto it = text_config->find((*alias)[1]); it != text_config->end() && !aliased.contains((*alias)[0]))
        aliased[(*alias)[0]] = *it;
    }
  }
  const FieldReader f = multimodal ? top.nested(aliased, "text_config.") : FieldReader(aliased, source);
  if (multimodal) refuse_moe(top, nullptr);
  refuse_moe(f, family->moe);
  const FamilyDefaults& defaults = family->defaults;
  c.hidden = f.positive_int_or("hidden_size", defaults.hidden);
  if (family->intermediate_4x && (f.find("intermediate_size") == nullptr || f.find("intermediate_size")->is_null())) {
    c.intermediate = 4 * c.hidden;  // GPT2MLP: n_inner if not None else 4 * hidden_size
  } else {
    c.intermediate = f.positive_int_or("intermediate_size", defaults.intermediate);
  }
  c.layers = f.positive_int_or("num_hidden_layers", defaults.layers);
  c.heads = f.positive_int_or("num_attention_heads", defaults.heads);
  c.kv_heads = f.int_or("num_key_value_heads", defaults.kv_heads > 0 ? defaults.kv_heads : c.heads, 1);
  c.vocab = f.positive_int_or("vocab_size", defaults.vocab);
  c.max_positions = f.int_or("max_position_embeddings", 1 << 30, 1);
  // The norms' epsilon (LayerNorm families: layer_norm_eps); ModelConfig keeps it as rms_norm_eps.
  c.rms_norm_eps = f.positive_float_or(family->eps_key, static_cast<float>(defaults.rms_norm_eps));
  c.bos_token_id = f.int_or("bos_token_id", defaults.bos_token_id, 0);
  c.torch_dtype = top.string_or("torch_dtype", "");
  if (!c.torch_dtype.empty() && c.torch_dtype != "float32" && c.torch_dtype != "float16" &&
      c.torch_dtype != "bfloat16") {
    throw top.error("torch_dtype", "'" + c.torch_dtype + "' is not supported (expected float32, float16 or bfloat16)");
  }
  if (c.heads % c.kv_heads != 0) {
    throw f.error("num_key_value_heads", "(" + std::to_string(c.kv_heads) + ") must divide num_attention_heads (" +
                                             std::to_string(c.heads) + ")");
  }
  // head_dim may differ from hidden/heads (Gemma-7B: 16 x 256 against 3072; Qwen3).
  if (present(f, "head_dim")) {
    c.head_dim = f.positive_int("head_dim");
  } else if (defaults.head_dim > 0) {
    c.head_dim = defaults.head_dim;
  } else if (c.hidden % c.heads == 0) {
    c.head_dim = c.hidden / c.heads;
  } else {
    throw f.error("head_dim", "is missing and hidden_size is not a multiple of num_attention_heads");
  }
  if (c.head_dim % 2 != 0) throw f.error("head_dim", "must be even for RoPE");
  // Sizes are ints in the forward pass; absurd values would overflow them long before a
  // file could hold such weights.
  if (c.layers > kMaxLayers) {
    throw f.error("num_hidden_layers",
                  "(" + std::to_string(c.layers) + ") exceeds the limit of " + std::to_string(kMaxLayers));
  }
  if (static_cast<std::int64_t>(c.heads) * c.head_dim > (std::int64_t{1} << 30)) {
    throw f.error("num_attention_heads", "times head_dim exceeds 2^30");
  }
  if (c.bos_token_id >= c.vocab) throw f.error("bos_token_id", "must be below vocab_size");

  if (f.bool_or("use_bidirectional_attention", false)) {
    throw f.error("use_bidirectional_attention", "must be false (causal attention only)");
  }
  if (f.bool_or("mlp_bias", false)) throw f.error("mlp_bias", "must be false (no MLP biases)");
  // GPT2Attention: scores / (layer_idx + 1) with scale_attn_by_inverse_layer_idx; not built.
  if (f.bool_or("scale_attn_by_inverse_layer_idx", false)) {
    throw f.error("scale_attn_by_inverse_layer_idx", "must be false (not supported)");
  }
  // PhiAttention with qk_layernorm: LayerNorms on q and k; not built.
  if (f.bool_or("qk_layernorm", false)) throw f.error("qk_layernorm", "must be false (not supported)");
  if (!f.bool_or("scale_attn_weights", true)) throw f.error("scale_attn_weights", "must be true (not supported)");
  // OlmoeAttention (transformers 4.57) clamps q, k and v to [-clip_qkv, clip_qkv]; not built.
  if (present(f, "clip_qkv")) throw f.error("clip_qkv", "must be null (clamping q, k and v is not supported)");
  c.tie_embeddings = top.bool_or("tie_word_embeddings", defaults.tie_embeddings);
  c.recipe = build_recipe(*family, recipe_inputs(f, *family, c, multimodal));
  c.sliding_window = uniform_window(c.recipe);
  return c;
}

ModelConfig load_model_config(const std::filesystem::path& config_path) {
  return parse_model_config(read_file_bytes(config_path, kMaxConfigBytes, "model config (a Hugging Face config.json)"),
                            config_path.string());
}

}  // namespace attngeom
