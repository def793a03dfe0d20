// The pre-flight resource estimate and check (analysis/resources.h): the record size
// estimate, the memory and disk refusals, the warning for weights beyond the memory limit,
// the cgroup limit (v1 and v2) and the storage read rate.
#include "analysis/resources.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "analysis/record.h"
#include "analysis/row_fields.h"
#include "temp_dir.h"
#include "util/error.h"
#include "util/memory_limit.h"

namespace attngeom {
namespace {

namespace fs = std::filesystem;

using testing_support::error_of;
using ResourcesDir = testing_support::TempDir;

TEST_F(ResourcesDir, RecordSizeEstimateBoundsTheRealRecord) {
  const RecordSchema schema = make_record_schema(40, false);
  SequenceRecord record;
  record.sequence = 7;
  record.tokens.assign(40, 1);
  record.query_positions = {9, 19, 39};
  record.resize(schema, 2, 3, 40, 3);
  const fs::path path = dir_ / "seq.safetensors";
  write_record(path, schema, record);
  const std::uint64_t actual = fs::file_size(path);
  const std::uint64_t estimate = record_file_bytes(schema, 2, 3, 3, 40);
  EXPECT_GE(estimate, actual);
  EXPECT_LE(estimate, actual + 8192);
}

TEST(Resources, TheCheckNamesWhatIsShortAndPassesWhenUnknown) {
  ResourceEstimate need;
  need.weight_bytes = 3ull << 30;
  need.working_bytes = 1ull << 30;
  need.disk_bytes = 10ull << 30;
  const auto limit = [](std::uint64_t bytes) { return std::optional<MemoryLimit>(MemoryLimit{bytes, "MemAvailable"}); };
  const auto check = [&](std::optional<MemoryLimit> memory, std::optional<std::uint64_t> disk, MemoryCheck mode) {
    return error_of([&] { check_resources(need, memory, disk, "runs/x", mode); });
  };
  EXPECT_EQ(check(limit(8ull << 30), 20ull << 30, MemoryCheck::kStrict), "");
  EXPECT_EQ(check(std::nullopt, std::nullopt, MemoryCheck::kStrict), "");
  const std::string memory = check(limit(2ull << 30), 20ull << 30, MemoryCheck::kStrict);
  EXPECT_NE(memory.find("needs about 4.0 GiB of memory"), std::string::npos) << memory;
  EXPECT_NE(memory.find("only 2.0 GiB is available (MemAvailable)"), std::string::npos) << memory;
  const std::string disk = check(limit(8ull << 30), 1ull << 30, MemoryCheck::kStrict);
  EXPECT_NE(disk.find("need about 10.0 GiB on the file system of runs/x but only 1.0 GiB is free"), std::string::npos)
      << disk;
  EXPECT_EQ(human_bytes(512), "512 bytes");
  EXPECT_EQ(human_bytes(1536), "1.5 KiB");
}

TEST(Resources, WeightsBeyondTheLimitWarnButWorkingMemoryBeyondItIsRefused) {
  ResourceEstimate need;
  need.weight_bytes = 3ull << 30;
  need.working_bytes = 1ull << 30;
  const MemoryLimit limit{2ull << 30, "cgroup v1 memory.limit_in_bytes of /small"};
  EXPECT_TRUE(check_resources(need, limit, std::nullopt, "runs/x", MemoryCheck::kWarn));
  EXPECT_FALSE(check_resources(need, limit, std::nullopt, "runs/x", MemoryCheck::kOff));
  EXPECT_FALSE(
      check_resources(need, MemoryLimit{8ull << 30, "MemAvailable"}, std::nullopt, "runs/x", MemoryCheck::kWarn));
  const std::string warning = streaming_warning(need, limit, 1024.0 * 1024 * 1024).plain();
  EXPECT_NE(warning.find("memory limit of 2.0 GiB (cgroup v1 memory.limit_in_bytes of /small)"), std::string::npos)
      << warning;
  EXPECT_NE(warning.find("about 2.0 to 3.0 s more per sequence"), std::string::npos) << warning;
  EXPECT_NE(warning.find("memory_check strict"), std::string::npos) << warning;
  need.working_bytes = 3ull << 30;
  const std::string refused =
      error_of([&] { check_resources(need, limit, std::nullopt, "runs/x", MemoryCheck::kWarn); });
  EXPECT_NE(refused.find("3.0 GiB of memory for one sequence in flight"), std::string::npos) << refused;
  EXPECT_NE(refused.find("only 2.0 GiB is available (cgroup v1"), std::string::npos) << refused;
}

TEST_F(ResourcesDir, CgroupLimitIsTheTightestAlongTheHierarchyOfEitherVersion) {
  const auto write = [&](const fs::path& file, const std::string& text) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
  };
  write(dir_ / "memory/memory.limit_in_bytes", "9223372036854771712\n");
  write(dir_ / "memory/jobs/memory.limit_in_bytes", "1073741824\n");
  write(dir_ / "memory/jobs/one/memory.limit_in_bytes", "2147483648\n");
  const auto v1 = cgroup_memory_limit("5:cpu:/\n4:memory:/jobs/one\n0::/\n", dir_);
  ASSERT_TRUE(v1.has_value());
  EXPECT_EQ(v1->bytes, 1ull << 30);
  EXPECT_EQ(v1->source, "cgroup v1 memory.limit_in_bytes of /jobs");
  EXPECT_FALSE(cgroup_memory_limit("4:memory:/\n", dir_).has_value());  // the root says unlimited

  write(dir_ / "v2/cgroup.controllers", "memory\n");
  write(dir_ / "v2/user/memory.max", "max\n");
  write(dir_ / "v2/user/job/memory.max", "536870912\n");
  const auto v2 = cgroup_memory_limit("0::/user/job\n", dir_ / "v2");
  ASSERT_TRUE(v2.has_value());
  EXPECT_EQ(v2->bytes, 512ull << 20);
  EXPECT_EQ(v2->source, "cgroup v2 memory.max of /user/job");
  EXPECT_FALSE(cgroup_memory_limit("0::/user\n", dir_ / "v2").has_value());
  EXPECT_FALSE(cgroup_memory_limit("garbage\n", dir_).has_value());
}

TEST_F(ResourcesDir, ReadRateTimesTheFileAndIsUnsetWithoutOne) {
  std::ofstream(dir_ / "weights.bin") << std::string(1 << 20, 'x');
  const std::optional<double> rate = measured_read_rate(dir_ / "weights.bin", 4 << 20);
  ASSERT_TRUE(rate.has_value());
  EXPECT_GT(*rate, 0);
  EXPECT_FALSE(measured_read_rate(dir_ / "missing.bin", 4 << 20).has_value());
}

TEST(Resources, AbsurdShapesSaturateInsteadOfWrapping) {
  const RecordSchema schema = make_record_schema(1 << 20, true);  // every N: 2^20 grid points
  ModelConfig c;
  c.layers = 4096;
  c.heads = 1 << 10;
  c.kv_heads = 1 << 10;
  c.head_dim = 1 << 10;
  c.hidden = 1 << 20;
  c.intermediate = 1 << 22;
  const LengthWork work{1 << 20, std::size_t{1} << 20, &schema, std::size_t{1} << 24};
  EXPECT_EQ(output_disk_bytes(c, work), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(working_memory_bytes(c, work, 64), std::numeric_limits<std::uint64_t>::max());
}

}  // namespace
}  // namespace attngeom
