// The device settings: how "cuda" and "cuda:N" parse, which GPU each process of a launch
// takes (model/engine.h launched_gpu), and the GPU memory a forward pass is estimated to need
// beside the weights (gpu_forward_bytes), without a GPU.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "io/config_json.h"
#include "model/engine.h"
#include "util/error.h"

namespace attngeom {
namespace {

// An environment of the given variables only.
auto environment(const std::map<std::string, std::string>& variables) {
  return [variables](const char* name) -> const char* {
    const auto it = variables.find(name);
    return it == variables.end() ? nullptr : it->second.c_str();
  };
}

TEST(DeviceChoice, CudaWithoutANumberLeavesTheGpuToTheLaunch) {
  EXPECT_FALSE(parse_device("cuda").gpu_named);
  const DeviceChoice named = parse_device("cuda:3");
  EXPECT_TRUE(named.gpu_named);
  EXPECT_EQ(named.gpu, 3);
  EXPECT_TRUE(choose_compute("cuda:1", "auto", "sgemm").options.gpu_named);
  EXPECT_FALSE(choose_compute("cuda", "auto", "sgemm").options.gpu_named);
}

// Ranks spread over a node's GPUs by local rank, and share them when there are fewer.
TEST(DeviceChoice, EachLocalRankTakesItsGpuModuloTheVisibleOnes) {
  EXPECT_EQ(launched_gpu(environment({}), 4), 0);
  EXPECT_EQ(launched_gpu(environment({{"OMPI_COMM_WORLD_LOCAL_RANK", "0"}}), 2), 0);
  EXPECT_EQ(launched_gpu(environment({{"OMPI_COMM_WORLD_LOCAL_RANK", "1"}}), 2), 1);
  EXPECT_EQ(launched_gpu(environment({{"OMPI_COMM_WORLD_LOCAL_RANK", "1"}}), 1), 0);  // two ranks, one GPU
  EXPECT_EQ(launched_gpu(environment({{"OMPI_COMM_WORLD_LOCAL_RANK", "5"}}), 4), 1);
  EXPECT_EQ(launched_gpu(environment({{"MPI_LOCALRANKID", "2"}}), 8), 2);
  EXPECT_EQ(launched_gpu(environment({{"SLURM_LOCALID", "3"}}), 2), 1);
  // Open MPI's own variable first, where a launcher sets several
  EXPECT_EQ(launched_gpu(environment({{"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"SLURM_LOCALID", "0"}}), 2), 1);
  EXPECT_EQ(launched_gpu(environment({{"SLURM_LOCALID", "3"}}), 0), 0);  // no GPU: the engine says so later
}

TEST(DeviceChoice, AMalformedLocalRankIsNamed) {
  for (const char* bad : {"", "x", "-1", "1.5", "99999999999"}) {
    try {
      launched_gpu(environment({{"SLURM_LOCALID", bad}}), 2);
      ADD_FAILURE() << "accepted SLURM_LOCALID='" << bad << "'";
    } catch (const SettingError& e) {
      EXPECT_NE(std::string(e.what()).find("SLURM_LOCALID"), std::string::npos) << e.what();
    }
  }
}

// LLaMA-3-8B at T = 32768 with 128 captured rows (stride:256), bf16, term by term as
// docs/gpu.md lists them.
TEST(GpuMemory, ForwardBytesOfLlama3AtLongContext) {
  const ModelConfig c = parse_model_config(
      R"({"model_type":"llama","hidden_size":4096,"intermediate_size":14336,"num_hidden_layers":32,)"
      R"("num_attention_heads":32,"num_key_value_heads":8,"vocab_size":128256,"rope_theta":500000.0})",
      "config.json");
  const std::uint64_t t = 32768, mib = 1 << 20;
  // x, q, k, v, attention output, projection, up, gate, the RoPE table
  const std::uint64_t columns = 4096 + 4096 + 1024 + 1024 + 4096 + 4096 + 14336 + 14336 + 128;
  const std::uint64_t buffers = t * columns * 4;
  EXPECT_EQ(forward_activation_bytes(c, 32768, Precision::kBf16), buffers);
  const std::uint64_t scratch = t * 4096 * 4 + t * 1024 * 4 + t * (14336 + 4096 + 2 * 1024) * 2;
  // one kv group (4 heads) of captured rows fills the 64 MiB block; 512 query rows of its
  // scores fill 256 MiB, with their bf16 copy
  const std::uint64_t attention = 4 * 512 * t * (4 + 2) + 4 * 128 * t * 4;
  EXPECT_EQ(gpu_forward_bytes(c, 32768, 128, 0, Precision::kBf16, 256 * mib), buffers + scratch + attention + 64 * mib);
  // fp32: no bf16 copies; logits of every row add [rows, vocab + hidden]
  const std::uint64_t fp32 = gpu_forward_bytes(c, 1024, 0, 1024, Precision::kFp32, 256 * mib);
  const std::uint64_t fp32_attention = 32 * 1024 * 1024 * 4;  // no capture: every head, all 1024 rows in 128 MiB
  EXPECT_EQ(fp32, 1024 * (columns + 4096 + 1024) * 4 + fp32_attention + 1024ull * (128256 + 4096) * 4 + 64 * mib);
}

// A mixture of experts adds the router's logits and the experts' buffers, and in bf16 the
// fp32 router logits beside them.
TEST(GpuMemory, MixtureOfExpertsBuffers) {
  const std::string mixtral =
      R"({"model_type":"mixtral","hidden_size":64,"intermediate_size":96,"num_hidden_layers":2,)"
      R"("num_attention_heads":4,"num_key_value_heads":2,"vocab_size":100,"num_local_experts":8,)"
      R"("num_experts_per_tok":2})";
  const ModelConfig c = parse_model_config(mixtral, "config.json");
  // x, q, k, v, attention output, projection, up (no gate: every MLP is routed), RoPE (head_dim 16)
  const std::uint64_t dense = 64 + 64 + 32 + 32 + 64 + 64 + 96 + 16;
  const std::uint64_t experts = 8 + 64 + 96 + 96 + 64;
  EXPECT_EQ(forward_activation_bytes(c, 10, Precision::kFp32), 10 * (dense + experts) * 4);
  EXPECT_EQ(forward_activation_bytes(c, 10, Precision::kBf16), 10 * (dense + experts + 8) * 4);
}

}  // namespace
}  // namespace attngeom
