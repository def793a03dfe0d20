// RoPE frequencies and attention factors (model/recipe.h rope_inv_freq, io/config_json.cc's
// rope settings) against the closed forms of transformers' modeling_rope_utils.py, and the
// families whose sliding layers take another RoPE than their full ones.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "io/config_json.h"
#include "model/recipe.h"
#include "util/error.h"

namespace attngeom {
namespace {

std::vector<double> plain_inv_freq(double theta, int dim) {
  std::vector<double> out;
  for (int i = 0; i < dim / 2; ++i) out.push_back(1.0 / std::pow(theta, 2.0 * i / dim));
  return out;
}

ModelConfig parse(const std::string& model_type, int layers, const std::string& extra) {
  return parse_model_config(R"({"model_type":")" + model_type +
                                R"(","hidden_size":64,"intermediate_size":128,"num_attention_heads":4,)"
                                R"("num_key_value_heads":2,"head_dim":16,"vocab_size":100,"num_hidden_layers":)" +
                                std::to_string(layers) + extra + "}",
                            "config.json");
}

const RopeSpec& rope_of_layer(const ModelConfig& c, int layer) {
  return c.recipe.ropes.at(static_cast<std::size_t>(c.recipe.layers.at(static_cast<std::size_t>(layer)).rope_table));
}

std::string error_of(const std::string& extra) {
  try {
    parse("llama", 1, extra);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Rope, Llama3RopeKeepsShortWavelengthsSlowsLongOnesAndBlendsBetween) {
  RopeSpec plain;
  plain.theta = 500000.0;
  RopeSpec llama3 = plain;
  llama3.type = RopeType::kLlama3;
  llama3.factor = 8;
  llama3.low_freq_factor = 1;
  llama3.high_freq_factor = 4;
  llama3.original_max_positions = 8192;
  const std::vector<double> base = rope_inv_freq(plain, 128, 1);
  const std::vector<double> scaled = rope_inv_freq(llama3, 128, 1);
  ASSERT_EQ(scaled.size(), 64u);
  int kept = 0, slowed = 0, blended = 0;
  for (std::size_t i = 0; i < base.size(); ++i) {
    EXPECT_DOUBLE_EQ(base[i], 1.0 / std::pow(500000.0, 2.0 * static_cast<double>(i) / 128));
    const double wavelen = 2 * std::numbers::pi / base[i];
    if (wavelen < 8192.0 / 4) {
      EXPECT_EQ(scaled[i], base[i]);
      ++kept;
    } else if (wavelen > 8192.0) {
      EXPECT_DOUBLE_EQ(scaled[i], base[i] / 8);
      ++slowed;
    } else {
      EXPECT_LT(scaled[i], base[i]);
      EXPECT_GT(scaled[i], base[i] / 8);
      ++blended;
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(slowed, 0);
  EXPECT_GT(blended, 0);
  RopeSpec linear = plain;
  linear.type = RopeType::kLinear;
  linear.factor = 4;
  EXPECT_DOUBLE_EQ(rope_inv_freq(linear, 128, 1)[5], base[5] / 4);
}

// _compute_longrope_parameters: the short factors up to the pretrained length, the long ones past it.
TEST(Rope, LongRopeDividesByShortOrLongFactorsBySequenceLength) {
  RopeSpec longrope;
  longrope.type = RopeType::kLongRope;
  longrope.theta = 10000.0;
  longrope.original_max_positions = 256;
  longrope.short_factor = {1.0, 2.0};
  longrope.long_factor = {3.0, 5.0};
  for (const int seq : {256, 257}) {
    const std::vector<double> f = rope_inv_freq(longrope, 4, seq);
    const std::vector<double>& ext = seq > 256 ? longrope.long_factor : longrope.short_factor;
    ASSERT_EQ(f.size(), 2u);
    EXPECT_DOUBLE_EQ(f[0], 1.0 / ext[0]);
    EXPECT_DOUBLE_EQ(f[1], 1.0 / (ext[1] * std::pow(10000.0, 0.5)));
  }
}

// _compute_yarn_parameters with head_dim 16, theta 10000, 2048 pretrained positions: beta_fast
// 32 rotations fall at index 16 ln(2048 / 64 pi) / (2 ln 10000) = 2.016, beta_slow 1 at 5.026;
// rounded outwards to [2, 6], the ramp (i - 2) / 4 divides frequencies 6 and 7 by the factor,
// keeps 0 to 2, and blends 3 to 5. Unrounded (truncate false), the band is [2.016, 5.026].
TEST(Rope, YarnKeepsFastFrequenciesDividesSlowOnesAndBlendsTheBand) {
  RopeSpec yarn;
  yarn.type = RopeType::kYarn;
  yarn.theta = 10000.0;
  yarn.factor = 4;
  yarn.original_max_positions = 2048;
  const std::vector<double> base = plain_inv_freq(10000.0, 16);
  const std::vector<double> f = rope_inv_freq(yarn, 16, 1);
  ASSERT_EQ(f.size(), 8u);
  const double ramp[8] = {0, 0, 0, 0.25, 0.5, 0.75, 1, 1};
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_NEAR(f[i], base[i] * (1 - ramp[i]) + base[i] / 4 * ramp[i], 1e-15 * base[i]) << i;
  }
  yarn.truncate = false;
  const double low = 16 * std::log(2048 / (64 * std::numbers::pi)) / (2 * std::log(10000.0));
  const double high = 16 * std::log(2048 / (2 * std::numbers::pi)) / (2 * std::log(10000.0));
  EXPECT_NEAR(low, 2.016, 1e-3);
  EXPECT_NEAR(high, 5.026, 1e-3);
  const std::vector<double> untruncated = rope_inv_freq(yarn, 16, 1);
  EXPECT_EQ(untruncated[2], base[2]);
  const double share = (4 - low) / (high - low);
  EXPECT_NEAR(untruncated[4], base[4] * (1 - share) + base[4] / 4 * share, 1e-15 * base[4]);
  EXPECT_NEAR(untruncated[6], base[6] / 4, 1e-15 * base[6]);
  // beta_fast and beta_slow equal: a band of no width at index 3.5, a step there (HF widens it
  // by 0.001 rather than divide by zero).
  yarn.beta_fast = yarn.beta_slow = 2048 / (2 * std::numbers::pi * std::pow(10000.0, 2 * 3.5 / 16));
  const std::vector<double> step = rope_inv_freq(yarn, 16, 1);
  EXPECT_EQ(step[3], base[3]);
  EXPECT_NEAR(step[4], base[4] / 4, 1e-15 * base[4]);
}

// The attention factor of yarn's cos and sin, and the settings transformers leaves implicit.
TEST(Rope, YarnReadsItsSettingsAndDerivesTheAttentionFactor) {
  const auto rope = [](const std::string& scaling, const std::string& top = R"(,"max_position_embeddings":8192)") {
    const ModelConfig c = parse("llama", 1, top + R"(,"rope_theta":500000.0,"rope_scaling":)" + scaling);
    EXPECT_EQ(c.recipe.ropes.size(), 1u);
    return c.recipe.ropes.at(0);
  };
  const RopeSpec plain = rope(R"({"rope_type":"yarn","factor":4.0,"original_max_position_embeddings":2048})");
  EXPECT_EQ(plain.type, RopeType::kYarn);
  EXPECT_EQ(plain.factor, 4.0);
  EXPECT_EQ(plain.original_max_positions, 2048.0);
  EXPECT_EQ(plain.beta_fast, 32.0);
  EXPECT_EQ(plain.beta_slow, 1.0);
  EXPECT_TRUE(plain.truncate);
  EXPECT_DOUBLE_EQ(plain.attention_factor, 0.1 * std::log(4.0) + 1);
  // DeepSeek: (0.1 mscale ln s + 1) / (0.1 mscale_all_dim ln s + 1).
  const RopeSpec deepseek =
      rope(R"({"type":"yarn","factor":8.0,"mscale":1.0,"mscale_all_dim":0.5,"beta_fast":16,"beta_slow":0,)"
           R"("truncate":false})");
  EXPECT_DOUBLE_EQ(deepseek.attention_factor, (0.1 * std::log(8.0) + 1) / (0.05 * std::log(8.0) + 1));
  EXPECT_EQ(deepseek.original_max_positions, 8192.0);  // max_position_embeddings
  EXPECT_EQ(deepseek.beta_fast, 16.0);
  EXPECT_EQ(deepseek.beta_slow, 1.0);  // HF's `or`: 0 means the default
  EXPECT_FALSE(deepseek.truncate);
  EXPECT_FLOAT_EQ(rope(R"({"rope_type":"yarn","factor":2.0,"attention_factor":0.7})").attention_factor, 0.7f);
  EXPECT_EQ(rope(R"({"rope_type":"yarn","factor":0.5})").attention_factor, 1.0);
  // transformers 5.x: without factor, the context extension max_position_embeddings / original.
  EXPECT_EQ(rope(R"({"rope_type":"yarn","original_max_position_embeddings":2048})").factor, 4.0);

  EXPECT_NE(error_of(R"(,"rope_scaling":{"rope_type":"yarn","factor":4.0})").find("field 'max_position_embeddings'"),
            std::string::npos);
  EXPECT_NE(error_of(R"(,"rope_scaling":{"rope_type":"yarn","factor":4.0,"beta_fast":-1})")
                .find("field 'rope_scaling.beta_fast'"),
            std::string::npos);
  EXPECT_NE(error_of(R"(,"rope_scaling":{"rope_type":"yarn","factor":4.0,"truncate":1})")
                .find("field 'rope_scaling.truncate'"),
            std::string::npos);
}

// Olmo3Model (transformers 4.57): three sliding layers to one full by default; rope_scaling on
// the full layers, plain RoPE at rope_theta on the sliding ones, in either config layout.
TEST(Rope, Olmo3ScalesTheRopeOfItsFullLayersOnly) {
  const std::string yarn = R"({"rope_type":"yarn","factor":8.0,"original_max_position_embeddings":8192})";
  const ModelConfig v4 =
      parse("olmo3", 8, R"(,"max_position_embeddings":65536,"rope_theta":500000.0,"rope_scaling":)" + yarn);
  std::vector<int> windows;
  for (const LayerRecipe& l : v4.recipe.layers) windows.push_back(l.window);
  EXPECT_EQ(windows, (std::vector<int>{4096, 4096, 4096, 0, 4096, 4096, 4096, 0}));
  EXPECT_EQ(v4.recipe.qk_norm, QkNorm::kWholeProjection);
  EXPECT_EQ(std::string(v4.recipe.norms.attn_input), "");
  ASSERT_EQ(v4.recipe.ropes.size(), 2u);
  EXPECT_EQ(rope_of_layer(v4, 0).type, RopeType::kDefault);
  EXPECT_EQ(rope_of_layer(v4, 0).theta, 500000.0);
  EXPECT_EQ(rope_of_layer(v4, 0).attention_factor, 1.0);
  EXPECT_EQ(rope_of_layer(v4, 3).type, RopeType::kYarn);
  EXPECT_EQ(rope_of_layer(v4, 3).factor, 8.0);

  const std::string full =
      R"("rope_type":"yarn","rope_theta":500000.0,"factor":8.0,"original_max_position_embeddings":8192)";
  const std::string types = R"(,"layer_types":["sliding_attention","full_attention"])";
  for (const std::string& params : {R"(,"rope_parameters":{"full_attention":{)" + full +
                                        R"(},"sliding_attention":{"rope_type":"default","rope_theta":500000.0}})",
                                    R"(,"rope_parameters":{)" + full + "}"}) {
    const ModelConfig v5 = parse("olmo3", 2, R"(,"max_position_embeddings":65536)" + types + params);
    EXPECT_EQ(rope_of_layer(v5, 0).type, RopeType::kDefault) << params;
    EXPECT_EQ(rope_of_layer(v5, 0).theta, 500000.0) << params;
    EXPECT_EQ(rope_of_layer(v5, 1).type, RopeType::kYarn) << params;
    EXPECT_EQ(rope_of_layer(v5, 1).original_max_positions, 8192.0) << params;
    EXPECT_EQ(v5.recipe.layers[0].window, 4096);
    EXPECT_EQ(v5.recipe.layers[1].window, 0);
  }
}

}  // namespace
}  // namespace attngeom
