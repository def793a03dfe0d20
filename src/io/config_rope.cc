#include "io/config_rope.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace attngeom {
namespace {

using nlohmann::json;

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

}  // namespace

void parse_rope_inputs(const FieldReader& f, const Family& family, const ModelConfig& c, RecipeInputs& in) {
  // HF _compute_default_rope_parameters: dim = int(head_dim * partial_rotary_factor).
  in.rotary_dim = *family.rotary_dims_key != '\0' ? parse_rotary_dims(f, family, c.head_dim)
                                                  : static_cast<int>(c.head_dim * parse_rotary_fraction(f, family));
  if (family.rope && (in.rotary_dim < 2 || in.rotary_dim % 2 != 0)) {
    const char* key = *family.rotary_dims_key != '\0' ? family.rotary_dims_key
                      : *family.rotary_key != '\0'    ? family.rotary_key
                                                      : "partial_rotary_factor";
    throw f.error(key, "gives " + std::to_string(in.rotary_dim) + " rotary dimensions of head_dim " +
                           std::to_string(c.head_dim) + "; expected an even number of at least 2");
  }
  parse_rope(f, family, in);
  for (RopeSpec* spec : {&in.global_rope, &in.local_rope}) {
    if (spec->type == RopeType::kLongRope) finish_longrope(f, c.max_positions, in.rotary_dim, *spec);
    if (spec->type == RopeType::kYarn) finish_yarn(f, c.max_positions, *spec);
  }
}

}  // namespace attngeom
