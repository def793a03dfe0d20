#include "model/config.h"

namespace attngeom {

const char* architecture_name(Architecture architecture) {
  switch (architecture) {
    case Architecture::kLlama: return "llama";
    case Architecture::kMistral: return "mistral";
    case Architecture::kGemma: return "gemma";
  }
  return "?";
}

const char* activation_name(Activation activation) {
  switch (activation) {
    case Activation::kSilu: return "silu";
    case Activation::kGeluTanh: return "gelu_pytorch_tanh";
    case Activation::kGeluErf: return "gelu";
  }
  return "?";
}

}  // namespace attngeom
