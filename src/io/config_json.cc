#include "io/config_json.h"

#include <cmath>
#include <limits>
#include <utility>

#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/file_read.h"
#include "util/json_parse.h"

namespace attngeom {
namespace {

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

Architecture parse_architecture(const std::string& model_type, const std::string& source) {
  if (model_type == "llama") return Architecture::kLlama;
  if (model_type == "mistral") return Architecture::kMistral;
  if (model_type == "gemma") return Architecture::kGemma;
  throw InputError(source + ": unsupported model_type '" + model_type + "' (supported: llama, mistral, gemma)");
}

Activation parse_activation(const std::string& name, const std::string& source) {
  if (name == "silu" || name == "swish") return Activation::kSilu;
  if (name == "gelu_pytorch_tanh" || name == "gelu_new" || name == "gelu_fast") return Activation::kGeluTanh;
  if (name == "gelu") return Activation::kGeluErf;
  throw InputError(source + ": unsupported activation '" + name +
                   "' (supported: silu, gelu_pytorch_tanh, gelu_new, gelu)");
}

// Plain RoPE only. Older configs write rope_theta and rope_scaling at the top level;
// transformers v5 writes {rope_type, rope_theta, ...} under rope_parameters.
float parse_rope_theta(const FieldReader& f, const std::string& source) {
  if (const json* scaling = f.find("rope_scaling"); scaling != nullptr && !scaling->is_null()) {
    throw f.error("rope_scaling", "is not supported yet (only plain RoPE); expected null");
  }
  const auto require_full_rotation = [](const FieldReader& r) {
    if (r.positive_float_or("partial_rotary_factor", 1.0f) != 1.0f) {
      throw r.error("partial_rotary_factor", "must be 1 (RoPE over the whole head_dim)");
    }
  };
  require_full_rotation(f);
  const float theta = f.positive_float_or("rope_theta", 10000.0f);
  const json* params = f.find("rope_parameters");
  if (params == nullptr || params->is_null()) return theta;
  if (!params->is_object()) throw f.error("rope_parameters", "must be an object");
  for (const auto& [key, value] : params->items()) {
    if (value.is_object()) throw f.error("rope_parameters", "has per-layer-type entries ('" + key + "'); not supported");
  }
  const FieldReader p(*params, source, "rope_parameters.");
  for (const char* type_key : {"rope_type", "type"}) {
    if (const std::string type = p.string_or(type_key, "default"); type != "default") {
      throw p.error(type_key, "'" + type + "' is not supported yet (only plain RoPE: \"default\")");
    }
  }
  require_full_rotation(p);
  const float nested = p.positive_float_or("rope_theta", theta);
  if (f.find("rope_theta") != nullptr && !f.find("rope_theta")->is_null() && nested != theta) {
    throw p.error("rope_theta", "disagrees with the top-level rope_theta; expected one value");
  }
  return nested;
}

// Defaults of keys a config.json may omit, as transformers' LlamaConfig, MistralConfig and
// GemmaConfig set them.
struct ArchitectureDefaults {
  int kv_heads;      // 0: num_attention_heads
  int head_dim;      // 0: hidden_size / num_attention_heads
  int bos_token_id;
};

ArchitectureDefaults defaults_of(Architecture architecture) {
  switch (architecture) {
    case Architecture::kMistral: return {8, 0, 1};
    case Architecture::kGemma: return {16, 256, 2};
    case Architecture::kLlama: break;
  }
  return {0, 0, 1};
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
  const FieldReader f(root, source);

  ModelConfig c;
  c.model_type = f.string_or("model_type", "");
  if (c.model_type.empty()) throw f.error("model_type", "is missing (supported: llama, mistral, gemma)");
  c.architecture = parse_architecture(c.model_type, source);
  c.hidden = f.positive_int("hidden_size");
  c.intermediate = f.positive_int("intermediate_size");
  c.layers = f.positive_int("num_hidden_layers");
  c.heads = f.positive_int("num_attention_heads");
  const ArchitectureDefaults defaults = defaults_of(c.architecture);
  c.kv_heads = f.int_or("num_key_value_heads", defaults.kv_heads > 0 ? defaults.kv_heads : c.heads, 1);
  c.vocab = f.positive_int("vocab_size");
  c.max_positions = f.int_or("max_position_embeddings", 1 << 30, 1);
  c.rms_norm_eps = f.positive_float_or("rms_norm_eps", 1e-6f);
  c.rope_theta = parse_rope_theta(f, source);
  c.bos_token_id = f.int_or("bos_token_id", defaults.bos_token_id, 0);
  c.torch_dtype = f.string_or("torch_dtype", "");
  if (!c.torch_dtype.empty() && c.torch_dtype != "float32" && c.torch_dtype != "float16" && c.torch_dtype != "bfloat16") {
    throw f.error("torch_dtype", "'" + c.torch_dtype + "' is not supported (expected float32, float16 or bfloat16)");
  }
  if (c.heads % c.kv_heads != 0) {
    throw f.error("num_key_value_heads", "(" + std::to_string(c.kv_heads) + ") must divide num_attention_heads (" +
                                             std::to_string(c.heads) + ")");
  }
  // head_dim may differ from hidden/heads (Gemma-7B: 16 x 256 against 3072).
  if (f.find("head_dim") != nullptr && !f.find("head_dim")->is_null()) {
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
    throw f.error("num_hidden_layers", "(" + std::to_string(c.layers) + ") exceeds the limit of " +
                                           std::to_string(kMaxLayers));
  }
  if (static_cast<std::int64_t>(c.heads) * c.head_dim > (std::int64_t{1} << 30)) {
    throw f.error("num_attention_heads", "times head_dim exceeds 2^30");
  }
  if (c.bos_token_id >= c.vocab) throw f.error("bos_token_id", "must be below vocab_size");

  if (f.bool_or("use_bidirectional_attention", false)) {
    throw f.error("use_bidirectional_attention", "must be false (causal attention only)");
  }
  if (f.bool_or("attention_bias", false)) throw f.error("attention_bias", "must be false (no projection biases)");
  if (f.bool_or("mlp_bias", false)) throw f.error("mlp_bias", "must be false (no projection biases)");

  switch (c.architecture) {
    case Architecture::kLlama:
    case Architecture::kMistral:
      c.activation = parse_activation(f.string_or("hidden_act", "silu"), source);
      c.tie_embeddings = f.bool_or("tie_word_embeddings", false);
      // Only Mistral has a window (HF's LLaMA ignores a sliding_window key). MistralConfig's
      // default is 4096 when the key is absent; null means full causal attention.
      if (c.architecture == Architecture::kMistral) {
        c.sliding_window = f.find("sliding_window") == nullptr ? 4096 : f.int_or("sliding_window", 0, 1);
      }
      break;
    case Architecture::kGemma:
      // HF Gemma uses hidden_activation when present, else the tanh approximation.
      c.activation = parse_activation(f.string_or("hidden_activation", "gelu_pytorch_tanh"), source);
      c.tie_embeddings = f.bool_or("tie_word_embeddings", true);
      c.norm_weight_offset = 1.0f;
      c.embedding_scale = std::sqrt(static_cast<float>(c.hidden));
      break;
  }
  return c;
}

ModelConfig load_model_config(const std::filesystem::path& config_path) {
  return parse_model_config(read_file_bytes(config_path, kMaxConfigBytes, "model config (a Hugging Face config.json)"),
                            config_path.string());
}

}  // namespace attngeom
