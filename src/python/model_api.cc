// attngeom.Model: a checkpoint loaded once (memory-mapped), run like `attngeom capture` and
// `attngeom perplexity` with numpy arrays in and out.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "capture/query_rows.h"
#include "eval/perplexity.h"
#include "io/checkpoint.h"
#include "io/tokenizer.h"
#include "model/engine.h"
#include "python/arrays.h"
#include "python/bindings.h"
#include "python/interrupt.h"
#include "util/error.h"

namespace attngeom::python {
namespace {

namespace py = pybind11;
using IntArray = py::array_t<std::int32_t, py::array::c_style>;

// The capture dump's tensors (capture/dump_writer.h), filled in memory.
class ArrayCapture final : public ForwardObserver {
 public:
  ArrayCapture(const ModelConfig& c, std::size_t seq, std::size_t rows, const std::vector<int>& layers)
      : config_(c), seq_(seq), rows_(rows) {
    for (const int l : layers) {
      attn_[l].assign(static_cast<std::size_t>(c.heads) * rows * seq, 0.0f);             // [H, Q, T]
      values_[l].assign(static_cast<std::size_t>(c.kv_heads) * seq * c.head_dim, 0.0f);  // [H_kv, T, d]
    }
  }
  void on_values(int layer, const ValueStates& values) override {
    std::copy(values.values, values.values + values_[layer].size(), values_[layer].begin());
  }
  void on_attention(int layer, const AttentionRows& rows) override {
    const std::size_t block = rows_ * seq_;  // one head's [Q, T]
    std::copy(rows.probs, rows.probs + static_cast<std::size_t>(rows.heads()) * block,
              attn_[layer].begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(rows.head_begin) * block));
  }
  py::dict take(py::dict out) {
    const auto t = static_cast<std::int64_t>(seq_), q = static_cast<std::int64_t>(rows_);
    for (auto& [l, attn] : attn_) {
      out[py::str("layers." + std::to_string(l) + ".attn")] = to_numpy(std::move(attn), {config_.heads, q, t});
      out[py::str("layers." + std::to_string(l) + ".values")] =
          to_numpy(std::move(values_[l]), {config_.kv_heads, t, config_.head_dim});
    }
    return out;
  }

 private:
  const ModelConfig& config_;
  std::size_t seq_, rows_;
  std::map<int, std::vector<float>> attn_, values_;
};

class Model {
 public:
  Model(const std::string& dir, const std::string& precision, const std::string& fp32_matmul, int threads,
        const std::string& device)
      : threads_(threads) {
    const ComputeChoice choice = choose_compute(device, precision, fp32_matmul);
    if (!choice.warning.empty()) warn_in_python(choice.warning);
    py::gil_scoped_release release;
    checkpoint_ = std::make_unique<Checkpoint>(dir);
    engine_ = std::make_unique<Engine>(checkpoint_->config(), checkpoint_->weights(), choice.options);
  }

  const ModelConfig& config() const { return checkpoint_->config(); }
  std::string precision() const { return std::string(precision_name(engine_->backend().precision())); }

  // sentencepiece's ids of `text`, without BOS.
  IntArray encode(const std::string& text) {
    std::vector<int> ids;
    {
      py::gil_scoped_release release;
      const std::lock_guard lock(mutex_);
      if (!tokenizer_) tokenizer_.emplace(checkpoint_->dir() / "tokenizer.model", config().vocab);
      ids = tokenizer_->encode(text, "text");
    }
    return to_numpy(std::vector<std::int32_t>(ids.begin(), ids.end()), {static_cast<std::int64_t>(ids.size())});
  }

  py::dict capture(const IntArray& tokens_in, const std::string& queries, std::optional<std::vector<int>> layers,
                   bool logits, bool force) {
    const std::vector<int> tokens = checked_tokens(tokens_in, force);
    const int seq = static_cast<int>(tokens.size());
    ForwardRequest request;
    request.capture_rows = resolve_query_rows(parse_query_selection(queries), seq);
    request.capture_layers = checked_layers(std::move(layers));
    if (logits) {
      for (int i = 0; i < seq; ++i) request.logit_rows.push_back(i);
    }
    ArrayCapture capture(config(), tokens.size(), request.capture_rows.size(), request.capture_layers);
    std::vector<float> logit_values;
    run_interruptibly(
        [&](const std::atomic<bool>&) {
          const std::lock_guard lock(mutex_);
          engine_->model().forward(tokens, request, &capture, logits ? &logit_values : nullptr);
        },
        threads_);
    py::dict out;
    out["tokens"] = to_numpy(std::vector<std::int32_t>(tokens.begin(), tokens.end()), {seq});
    out["query_positions"] =
        to_numpy(std::vector<std::int32_t>(request.capture_rows.begin(), request.capture_rows.end()),
                 {static_cast<std::int64_t>(request.capture_rows.size())});
    capture.take(out);
    if (logits) out["logits"] = to_numpy(std::move(logit_values), {seq, config().vocab});
    return out;
  }

  py::dict perplexity(const IntArray& stream_in, int context, int stride, bool bos, bool force) {
    const std::vector<int> stream = checked_tokens(stream_in, true);
    if (context < 2) throw SettingError({setting("context"), " " + std::to_string(context) + ": must be at least 2"});
    if (context > config().max_positions && !force) {
      throw SettingError({setting("context"),
                          " " + std::to_string(context) + " exceeds max_position_embeddings " +
                              std::to_string(config().max_positions) + " (",
                          setting("force"), " allows it)"});
    }
    const PerplexityProtocol protocol{context, stride, bos, config().bos_token_id};
    check_stride(protocol);
    PerplexityResult r;
    run_interruptibly(
        [&](const std::atomic<bool>&) {
          const std::lock_guard lock(mutex_);
          r = evaluate_perplexity(engine_->model(), stream, protocol, {}, nullptr, nullptr);
        },
        threads_);
    if (r.tokens == 0) throw InputError("perplexity: no token could be scored (text too short)");
    py::dict out;
    out["tokens"] = r.tokens;
    out["mean_nll"] = r.mean_nll;
    out["perplexity"] = r.perplexity;
    out["context"] = context;
    out["stride"] = protocol.effective_stride();
    out["bos"] = bos;
    out["nll"] = to_numpy(std::move(r.nll), {static_cast<std::int64_t>(out["tokens"].cast<std::size_t>())});
    return out;
  }

 private:
  std::vector<int> checked_tokens(const IntArray& in, bool force) const {
    if (in.ndim() != 1) throw InputError("tokens: expected a 1-D array of token ids");
    const ModelConfig& c = config();
    std::vector<int> tokens(in.data(), in.data() + in.shape(0));
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      if (tokens[i] < 0 || tokens[i] >= c.vocab) {
        throw InputError("tokens: id " + std::to_string(tokens[i]) + " at index " + std::to_string(i) +
                         " is outside the vocabulary [0, " + std::to_string(c.vocab) + ")");
      }
    }
    if (tokens.empty()) throw InputError("tokens: empty");
    if (static_cast<int>(tokens.size()) > c.max_positions && !force) {
      throw SettingError({"tokens: " + std::to_string(tokens.size()) + " tokens exceed the model's " +
                              "max_position_embeddings " + std::to_string(c.max_positions) + " (use ",
                          setting("force"), ")"});
    }
    return tokens;
  }

  std::vector<int> checked_layers(std::optional<std::vector<int>> layers) const {
    std::vector<int> out;
    if (!layers) {
      for (int l = 0; l < config().layers; ++l) out.push_back(l);
      return out;
    }
    out = std::move(*layers);
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (out[i] < 0 || out[i] >= config().layers || (i > 0 && out[i] <= out[i - 1])) {
        throw SettingError(
            {setting("layers"), ": expected ascending layer indices in [0, " + std::to_string(config().layers) + ")"});
      }
    }
    if (out.empty()) throw SettingError({setting("layers"), ": empty (None captures every layer)"});
    return out;
  }

  int threads_;
  std::unique_ptr<Checkpoint> checkpoint_;
  std::unique_ptr<Engine> engine_;
  std::optional<Tokenizer> tokenizer_;
  std::mutex mutex_;  // one forward pass at a time: the model's scratch buffers are shared
};

}  // namespace

void bind_model(py::module_& m) {
  py::class_<Model>(m, "_Model")
      .def(py::init<const std::string&, const std::string&, const std::string&, int, const std::string&>(),
           py::arg("path"), py::arg("precision"), py::arg("fp32_matmul"), py::arg("threads"), py::arg("device"))
      .def_property_readonly("precision", &Model::precision)
      .def_property_readonly("config",
                             [](const Model& self) {
                               const ModelConfig& c = self.config();
                               py::dict d;
                               d["model_type"] = c.model_type;
                               d["layers"] = c.layers;
                               d["heads"] = c.heads;
                               d["kv_heads"] = c.kv_heads;
                               d["head_dim"] = c.head_dim;
                               d["hidden"] = c.hidden;
                               d["vocab"] = c.vocab;
                               d["max_positions"] = c.max_positions;
                               d["bos_token_id"] = c.bos_token_id;
                               return d;
                             })
      .def("encode", &Model::encode, py::arg("text"))
      .def("capture", &Model::capture, py::arg("tokens"), py::arg("queries"), py::arg("layers"), py::arg("logits"),
           py::arg("force"))
      .def("perplexity", &Model::perplexity, py::arg("stream"), py::arg("context"), py::arg("stride"), py::arg("bos"),
           py::arg("force"));
}

}  // namespace attngeom::python
