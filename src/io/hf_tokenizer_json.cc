// Reading tokenizer.json (and tokenizer_config.json) into an HfTokenizerSpec; every
// refusal names the file and the field.
#include <charconv>
#include <climits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "io/hf_tokenizer.h"
#include "io/tokenizer.h"
#include "util/error.h"
#include "util/file_read.h"
#include "util/json_parse.h"

namespace attngeom {
namespace {

using nlohmann::json;

// GPT-2's pre-tokenizer regex, which ByteLevel applies with use_regex (tokenizers'
// pre_tokenizers/byte_level.rs).
constexpr const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// A JSON value and where it sits in its file, for messages.
class Field {
 public:
  Field(const json& value, std::string path, const std::string& file)
      : value_(value), path_(std::move(path)), file_(file) {}

  std::string where() const { return file_ + ": field '" + path_ + "'"; }
  InputError error(const std::string& what) const { return InputError(where() + " " + what); }
  const json& value() const { return value_; }
  bool is_null() const { return value_.is_null(); }

  // A key of this object; missing or null gives nullopt.
  std::optional<Field> find(const char* key) const {
    if (!value_.is_object()) throw error("must be an object");
    const auto it = value_.find(key);
    if (it == value_.end() || it->is_null()) return std::nullopt;
    return Field(*it, child(key), file_);
  }
  Field at(const char* key) const {
    std::optional<Field> f = find(key);
    if (!f) throw Field(value_, child(key), file_).error("is missing");
    return *f;
  }
  std::vector<Field> items() const {
    if (!value_.is_array()) throw error("must be an array");
    std::vector<Field> out;
    for (std::size_t i = 0; i < value_.size(); ++i)
      out.emplace_back(value_[i], path_ + "[" + std::to_string(i) + "]", file_);
    return out;
  }
  std::string string() const {
    if (!value_.is_string()) throw error("must be a string");
    return value_.get<std::string>();
  }
  bool boolean() const {
    if (!value_.is_boolean()) throw error("must be true or false");
    return value_.get<bool>();
  }
  int id(int model_vocab) const {
    if (!value_.is_number_integer() || value_.get<std::int64_t>() < 0 || value_.get<std::int64_t>() > INT_MAX) {
      throw error("must be a token id (a non-negative integer)");
    }
    const int v = value_.get<int>();
    if (v >= model_vocab) {
      throw error("has id " + std::to_string(v) + ", beyond the model's vocab_size " + std::to_string(model_vocab));
    }
    return v;
  }

 private:
  std::string child(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  const json& value_;
  std::string path_;
  const std::string& file_;
};

json read_json_file(const std::filesystem::path& path, const std::string& what) {
  try {
    return parse_json(read_file_bytes(path, kMaxTokenizerBytes, what), path.string());
  } catch (const json::exception& e) {
    throw InputError(path.string() + ": not valid JSON (" + e.what() + ")");
  }
}

bool bool_or(const Field& object, const char* key, bool fallback) {
  const std::optional<Field> f = object.find(key);
  return f ? f->boolean() : fallback;
}

std::string type_of(const Field& component) { return component.at("type").string(); }

[[noreturn]] void refuse(const Field& type_field, const std::string& type, const std::string& supported) {
  throw type_field.error("is '" + type + "', which attngeom does not support (supported: " + supported + ")");
}

void read_normalizer(const Field& n, std::vector<NormalForm>& forms) {
  const std::string type = type_of(n);
  static const std::unordered_map<std::string, NormalForm> kForms = {
      {"NFC", NormalForm::kNfc}, {"NFD", NormalForm::kNfd}, {"NFKC", NormalForm::kNfkc}, {"NFKD", NormalForm::kNfkd}};
  if (type == "Sequence") {
    for (const Field& item : n.at("normalizers").items()) read_normalizer(item, forms);
  } else if (const auto it = kForms.find(type); it != kForms.end()) {
    forms.push_back(it->second);
  } else {
    refuse(n.at("type"), type, "NFC, NFD, NFKC, NFKD, Sequence");
  }
}

PreTokenizerStep read_split(const Field& s) {
  if (bool_or(s, "invert", false)) throw s.at("invert").error("is true, which attngeom does not support");
  const std::string behavior = s.at("behavior").string();
  if (behavior != "Isolated" && behavior != "Removed") refuse(s.at("behavior"), behavior, "Isolated, Removed");
  const Field pattern = s.at("pattern");
  PreTokenizerStep step;
  step.keep_matches = behavior == "Isolated";
  if (const auto regex = pattern.find("Regex")) {
    step.pattern.emplace(regex->string(), regex->where());
  } else if (const auto literal = pattern.find("String")) {
    step.pattern.emplace(literal->string(), literal->where(), true);
  } else {
    throw pattern.error("must hold a Regex or a String");
  }
  return step;
}

// tokenizers' Punctuation: char::is_ascii_punctuation or the general category P*, each such
// character isolated, or each run of them (Contiguous), or removed.
PreTokenizerStep read_punctuation(const Field& p) {
  const std::string behavior = p.find("behavior") ? p.at("behavior").string() : "Isolated";
  if (behavior != "Isolated" && behavior != "Contiguous" && behavior != "Removed") {
    refuse(p.at("behavior"), behavior, "Isolated, Contiguous, Removed");
  }
  PreTokenizerStep step;
  step.keep_matches = behavior != "Removed";
  const std::string one = R"([\p{P}\x{21}-\x{2F}\x{3A}-\x{40}\x{5B}-\x{60}\x{7B}-\x{7E}])";
  step.pattern.emplace(behavior == "Contiguous" ? one + "+" : one, "Punctuation pre-tokenizer");
  return step;
}

// tokenizers' Digits: char::is_numeric (the general categories Nd, Nl, No), each digit isolated
// with individual_digits, else each run of them.
PreTokenizerStep read_digits(const Field& p) {
  PreTokenizerStep step;
  step.pattern.emplace(bool_or(p, "individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)", "Digits pre-tokenizer");
  return step;
}

// The pre-tokenizer: Split, Punctuation and Digits steps, ByteLevel once (byte-level BPE needs
// it); the steps after it see the byte-level spelling.
void read_pre_tokenizer(const Field& p, std::vector<PreTokenizerStep>& steps, bool& byte_level) {
  const std::string type = type_of(p);
  if (type == "Sequence") {
    for (const Field& item : p.at("pretokenizers").items()) read_pre_tokenizer(item, steps, byte_level);
    return;
  }
  if (type == "Split") {
    steps.push_back(read_split(p));
  } else if (type == "Punctuation") {
    steps.push_back(read_punctuation(p));
  } else if (type == "Digits") {
    steps.push_back(read_digits(p));
  } else if (type == "ByteLevel") {
    if (byte_level) throw p.error("is a second ByteLevel pre-tokenizer, which attngeom does not support");
    PreTokenizerStep step;
    step.add_prefix_space = bool_or(p, "add_prefix_space", false);
    if (bool_or(p, "use_regex", true)) step.pattern.emplace(kGpt2Pattern, "GPT-2 pattern");
    steps.push_back(std::move(step));
    byte_level = true;
    return;
  } else {
    refuse(p.at("type"), type, "ByteLevel, Split, Punctuation, Digits, Sequence");
  }
  steps.back().on_byte_level = byte_level;
}

BytePairModel read_model(const Field& m, int model_vocab, int& vocab_size, const std::string& file) {
  if (const auto type = m.find("type"); type && type->string() != "BPE") refuse(*type, type->string(), "BPE");
  if (bool_or(m, "byte_fallback", false))
    throw m.at("byte_fallback").error("is true, which byte-level BPE does not use");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (const auto f = m.find(key); f && !f->string().empty())
      throw f->error("is set, which attngeom does not support");
  }
  if (const auto dropout = m.find("dropout");
      dropout && !(dropout->value().is_number() && dropout->value().get<double>() == 0)) {
    throw dropout->error("is set; BPE dropout is for training only");
  }
  const Field vocab = m.at("vocab");
  if (!vocab.value().is_object()) throw vocab.error("must be an object (symbol -> id)");
  std::unordered_map<std::string, int> ids;
  for (const auto& [symbol, id] : vocab.value().items()) {
    const int v = Field(id, "model.vocab." + symbol, file).id(model_vocab);
    ids.emplace(symbol, v);
    vocab_size = std::max(vocab_size, v + 1);
  }
  std::vector<std::pair<std::string, std::string>> merges;
  for (const Field& rule : m.at("merges").items()) {
    const json& r = rule.value();
    if (r.is_string()) {
      const std::string text = r.get<std::string>();
      const std::size_t space = text.find(' ');
      if (space == std::string::npos || space == 0 || space + 1 == text.size() ||
          text.find(' ', space + 1) != std::string::npos) {
        throw rule.error("must be two symbols separated by one space");
      }
      merges.emplace_back(text.substr(0, space), text.substr(space + 1));
    } else if (r.is_array() && r.size() == 2 && r[0].is_string() && r[1].is_string()) {
      merges.emplace_back(r[0].get<std::string>(), r[1].get<std::string>());
    } else {
      throw rule.error("must be \"left right\" or [\"left\", \"right\"]");
    }
  }
  return BytePairModel(std::move(ids), merges, bool_or(m, "ignore_merges", false), file);
}

AddedToken read_added_token(const Field& t, int model_vocab) {
  AddedToken token;
  token.id = t.at("id").id(model_vocab);
  token.content = t.at("content").string();
  if (token.content.empty()) throw t.at("content").error("is empty");
  if (bool_or(t, "single_word", false)) throw t.at("single_word").error("is true, which attngeom does not support");
  token.lstrip = bool_or(t, "lstrip", false);
  token.rstrip = bool_or(t, "rstrip", false);
  token.normalized = bool_or(t, "normalized", !bool_or(t, "special", false));
  return token;
}

// The ids a TemplateProcessing adds before $A; anything after $A, or a pair-only
// template, is refused (attngeom encodes one sequence and only ever prepends).
std::vector<int> read_template(const Field& p, int model_vocab) {
  std::vector<int> prefix;
  bool sequence_seen = false;
  const Field special = p.at("special_tokens");
  for (const Field& item : p.at("single").items()) {
    if (const auto s = item.find("Sequence")) {
      if (s->at("id").string() != "A") throw s->at("id").error("must be A in the single template");
      sequence_seen = true;
    } else if (const auto t = item.find("SpecialToken")) {
      if (sequence_seen) throw item.error("adds a token after $A, which attngeom does not support");
      const std::string name = t->at("id").string();
      const auto entry = special.find(name.c_str());
      if (!entry) throw special.error("has no entry '" + name + "'");
      for (const Field& id : entry->at("ids").items()) prefix.push_back(id.id(model_vocab));
    } else {
      throw item.error("must be a Sequence or a SpecialToken");
    }
  }
  if (!sequence_seen) throw p.at("single").error("has no $A");
  return prefix;
}

void read_post_processor(const Field& p, int model_vocab, std::vector<int>& prefix) {
  const std::string type = type_of(p);
  if (type == "Sequence") {
    for (const Field& item : p.at("processors").items()) read_post_processor(item, model_vocab, prefix);
  } else if (type == "TemplateProcessing") {
    const std::vector<int> more = read_template(p, model_vocab);
    prefix.insert(prefix.end(), more.begin(), more.end());
  } else if (type != "ByteLevel") {  // ByteLevel post-processing only trims offsets
    refuse(p.at("type"), type, "ByteLevel, TemplateProcessing, Sequence");
  }
}

// tokenizer_config.json's bos_token: a string, or an object with "content".
std::optional<std::string> config_bos_token(const Field& config) {
  const auto bos = config.find("bos_token");
  if (!bos) return std::nullopt;
  return bos->value().is_object() ? bos->at("content").string() : bos->string();
}

int token_id(const std::string& content, const HfTokenizerSpec& spec, const Field& where) {
  for (const AddedToken& t : spec.added_tokens) {
    if (t.content == content) return t.id;
  }
  if (const int id = spec.model->find(content); id >= 0) return id;
  throw where.error("names '" + content + "', which is neither an added token nor in model.vocab");
}

// BOS as the post-processor says, unless tokenizer_config.json sets add_bos_token.
void read_bos(const Field& root, const std::filesystem::path& config_path, int model_vocab, HfTokenizerSpec& spec) {
  std::vector<int> prefix;
  if (const auto p = root.find("post_processor")) read_post_processor(*p, model_vocab, prefix);
  if (prefix.size() > 1)
    throw root.at("post_processor").error("adds more than one token before $A, which attngeom does not support");
  if (!prefix.empty()) spec.bos_id = prefix[0];
  std::error_code ec;
  if (!std::filesystem::exists(config_path, ec)) return;
  const std::string file = config_path.string();
  const json config_json = read_json_file(config_path, "tokenizer config");
  const Field config(config_json, "", file);
  const auto add_bos = config.find("add_bos_token");
  if (!add_bos) return;
  if (!add_bos->boolean()) {
    spec.bos_id.reset();
  } else if (!spec.bos_id) {
    const std::optional<std::string> bos = config_bos_token(config);
    if (!bos) throw add_bos->error("is true but bos_token is not set");
    spec.bos_id = token_id(*bos, spec, config.at("bos_token"));
  }
}

// The spec of a tokenizer.json's content `root_json` (named `file` in messages), with the
// tokenizer_config.json at `config_path` where there is one.
HfTokenizerSpec parse_tokenizer(const json& root_json, const std::string& file,
                                const std::filesystem::path& config_path, int model_vocab) {
  const Field root(root_json, "", file);
  HfTokenizerSpec spec;
  if (const auto n = root.find("normalizer")) read_normalizer(*n, spec.normalizer);
  bool byte_level = false;
  if (const auto p = root.find("pre_tokenizer")) read_pre_tokenizer(*p, spec.pre_tokenizer, byte_level);
  if (!byte_level) throw root.at("pre_tokenizer").error("has no ByteLevel step, which byte-level BPE needs");
  spec.model.emplace(read_model(root.at("model"), model_vocab, spec.vocab_size, file));
  if (const auto added = root.find("added_tokens")) {
    for (const Field& t : added->items()) {
      spec.added_tokens.push_back(read_added_token(t, model_vocab));
      spec.vocab_size = std::max(spec.vocab_size, spec.added_tokens.back().id + 1);
    }
  }
  read_bos(root, config_path, model_vocab, spec);
  return spec;
}

// merges.txt: one "left right" merge per line, after an optional "#version" first line.
json read_merges_txt(const std::filesystem::path& path) {
  std::istringstream lines(read_file_bytes(path, kMaxTokenizerBytes, "tokenizer merges (GPT-2's merges.txt)"));
  json merges = json::array();
  std::size_t number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (number == 1 && line.rfind("#version", 0) == 0)) continue;
    const std::size_t space = line.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string::npos) {
      throw InputError(path.string() + ": line " + std::to_string(number) +
                       " is not a merge (expected two symbols separated by one space)");
    }
    merges.push_back(line);
  }
  return merges;
}

// tokenizer_config.json's added_tokens_decoder ({"id": {"content": ...}}) as tokenizer.json's
// added_tokens list; empty without one.
json added_tokens_of_config(const std::filesystem::path& config_path) {
  json added = json::array();
  std::error_code ec;
  if (!std::filesystem::exists(config_path, ec)) return added;
  const json config = read_json_file(config_path, "tokenizer config");
  const auto decoder = config.is_object() ? config.find("added_tokens_decoder") : config.end();
  if (!config.is_object() || decoder == config.end() || decoder->is_null()) return added;
  if (!decoder->is_object()) {
    throw InputError(config_path.string() + ": field 'added_tokens_decoder' must be an object (id -> token)");
  }
  for (const auto& [id, token] : decoder->items()) {
    long long number = -1;
    const auto [end, status] = std::from_chars(id.data(), id.data() + id.size(), number);
    if (status != std::errc() || end != id.data() + id.size() || number < 0 || number > INT_MAX || !token.is_object()) {
      throw InputError(config_path.string() + ": field 'added_tokens_decoder." + id +
                       "' must map an id to a token object");
    }
    json entry = token;
    entry["id"] = number;
    added.push_back(entry);
  }
  return added;
}

}  // namespace

HfTokenizerSpec read_hf_tokenizer(const std::filesystem::path& json_path, int model_vocab) {
  const std::string file = json_path.string();
  const json root_json = read_json_file(json_path, "tokenizer (a Hugging Face tokenizer.json)");
  if (!root_json.is_object()) throw InputError(file + ": not a tokenizer.json (expected a JSON object)");
  return parse_tokenizer(root_json, file, json_path.parent_path() / "tokenizer_config.json", model_vocab);
}

HfTokenizerSpec read_gpt2_vocab_merges(const std::filesystem::path& model_dir, int model_vocab) {
  const std::filesystem::path vocab_path = model_dir / "vocab.json";
  const json vocab = read_json_file(vocab_path, "tokenizer vocabulary (GPT-2's vocab.json)");
  if (!vocab.is_object()) throw InputError(vocab_path.string() + ": not a vocabulary (expected a JSON object)");
  const std::filesystem::path config_path = model_dir / "tokenizer_config.json";
  // transformers' GPT2Converter (convert_slow_tokenizer.py): the tokenizer.json of these files.
  const json root = {
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", read_merges_txt(model_dir / "merges.txt")}}},
      {"added_tokens", added_tokens_of_config(config_path)}};
  return parse_tokenizer(root, vocab_path.string() + " with merges.txt", config_path, model_vocab);
}

}  // namespace attngeom
