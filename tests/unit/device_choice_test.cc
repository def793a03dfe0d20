// The device settings: how "cuda" and "cuda:N" parse, and which GPU each process of a launch
// takes (model/engine.h launched_gpu), without a GPU.
#include <gtest/gtest.h>

#include <map>
#include <string>

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

}  // namespace
}  // namespace attngeom
