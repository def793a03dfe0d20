// The safetensors parser on crafted byte strings, and the writer read back by the parser.
#include "io/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "io/safetensors_writer.h"
#include "util/error.h"
#include "util/mapped_file.h"

namespace attngeom {
namespace {

std::vector<std::uint8_t> make_file(const std::string& header, std::size_t data_bytes, std::uint64_t declared_len) {
  std::vector<std::uint8_t> bytes(8 + header.size() + data_bytes, 0);
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<std::uint8_t>(declared_len >> (8 * i));
  std::copy(header.begin(), header.end(), bytes.begin() + 8);
  return bytes;
}

std::vector<std::uint8_t> make_file(const std::string& header, std::size_t data_bytes) {
  return make_file(header, data_bytes, header.size());
}

// Runs the parser and returns its error message ("" when it accepts the file).
std::string parse_error(const std::vector<std::uint8_t>& bytes) {
  try {
    parse_safetensors(bytes, "x.safetensors");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Safetensors, ParsesValidFileWithMetadata) {
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"BF16","shape":[2,3],"data_offsets":[16,28]},)"
      R"("a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})";
  const auto bytes = make_file(header, 28);
  const SafetensorsHeader h = parse_safetensors(bytes, "x.safetensors");
  ASSERT_EQ(h.entries.size(), 2u);
  EXPECT_EQ(h.entries[0].name, "a");  // sorted by data offset
  EXPECT_EQ(h.metadata.at("format"), "pt");
  const SafetensorsEntry* b = h.find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->dtype, DType::kBF16);
  EXPECT_EQ(b->shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(b->data.size(), 12u);
  EXPECT_EQ(b->data.data(), bytes.data() + 8 + header.size() + 16);
}

TEST(Safetensors, RejectsEachKindOfCorruptionWithAClearMessage) {
  const std::string ok = R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})";
  EXPECT_NE(parse_error({1, 2, 3}).find("truncated"), std::string::npos);
  EXPECT_NE(parse_error(make_file(ok, 16, 1u << 20)).find("runs past the end"), std::string::npos);
  EXPECT_NE(parse_error(make_file(ok, 8)).find("out of range"), std::string::npos);
  EXPECT_NE(parse_error(make_file(ok, 8)).find("the file is truncated"), std::string::npos);
  EXPECT_NE(parse_error(make_file("{not json", 0)).find("malformed"), std::string::npos);
  EXPECT_NE(parse_error(make_file(R"([1,2])", 0)).find("not a JSON object"), std::string::npos);
  EXPECT_NE(
      parse_error(make_file(R"({"a":{"dtype":"Q7","shape":[4],"data_offsets":[0,16]}})", 16)).find("unknown dtype"),
      std::string::npos);
  EXPECT_NE(parse_error(make_file(R"({"a":{"dtype":"F32","shape":[5],"data_offsets":[0,16]}})", 16)).find("need 20"),
            std::string::npos);
  EXPECT_NE(
      parse_error(make_file(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,16]}})", 16)).find("non-negative"),
      std::string::npos);
  EXPECT_NE(parse_error(make_file(R"({"a":{"dtype":"F64","shape":[4611686018427387904,4],"data_offsets":[0,16]}})", 16))
                .find("overflows"),
            std::string::npos);
  EXPECT_NE(parse_error(make_file(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                                  R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
                                  16))
                .find("overlapping"),
            std::string::npos);
  EXPECT_NE(
      parse_error(make_file(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[16,0]}})", 16)).find("out of range"),
      std::string::npos);
  EXPECT_NE(parse_error(make_file(R"({"__metadata__":{"k":3}})", 0)).find("not a string"), std::string::npos);
  EXPECT_EQ(parse_error(make_file(ok, 16)), "");
}

TEST(Safetensors, WriterOutputReadsBackAndAppearsOnlyOnCommit) {
  const auto dir = std::filesystem::temp_directory_path() / ("st_writer_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / "out.safetensors";
  const std::vector<float> x = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, 8.0f};
  const std::vector<std::int32_t> ids = {5, 9};
  {
    SafetensorsWriter writer(path, {{"ids", DType::kI32, {2}}, {"x", DType::kF32, {2, 3}}}, {{"note", "hi"}});
    writer.write("ids", 0, ids.data(), 8);
    writer.write("x", 12, x.data() + 3, 12);  // second row first: writes land at offsets
    writer.write("x", 0, x.data(), 12);
    EXPECT_FALSE(std::filesystem::exists(path));
    writer.commit();
  }
  { SafetensorsWriter abandoned(dir / "never.safetensors", {{"x", DType::kF32, {1}}}, {}); }
  EXPECT_FALSE(std::filesystem::exists(dir / "never.safetensors"));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()), 1);

  const MappedFile file(path);
  const SafetensorsHeader h = parse_safetensors(file.bytes(), path.string());
  EXPECT_EQ(h.metadata.at("note"), "hi");
  const SafetensorsEntry* xe = h.find("x");
  ASSERT_NE(xe, nullptr);
  EXPECT_EQ(xe->shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(std::memcmp(xe->data.data(), x.data(), 24), 0);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(xe->data.data()) % 8, 0u);
  EXPECT_EQ(std::memcmp(h.find("ids")->data.data(), ids.data(), 8), 0);
  std::filesystem::remove_all(dir);
}

// The resident set as /proc/self/statm counts it, in bytes.
std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

// A mapped tensor copied elsewhere (a fused projection split at load) leaves the resident set,
// and reads back the same from the file if it is read again.
TEST(MappedFile, ReleasedPagesLeaveTheResidentSetAndReadBackTheSame) {
  const auto path = std::filesystem::temp_directory_path() / ("attngeom_release_" + std::to_string(::getpid()));
  constexpr std::size_t kBytes = std::size_t{64} << 20;
  {
    std::vector<std::uint8_t> bytes(kBytes);
    for (std::size_t i = 0; i < kBytes; ++i) bytes[i] = static_cast<std::uint8_t>(i * 2654435761u >> 24);
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), kBytes);
  }
  const MappedFile file(path);
  const auto sum = [&] {
    std::uint64_t total = 0;
    for (const std::uint8_t b : file.bytes()) total += b;
    return total;
  };
  const std::uint64_t before = sum();
  const std::size_t resident = resident_bytes();
  release_mapped_pages(file.bytes().data() + 1, kBytes - 1);  // all but the first page, partly held
  EXPECT_GT(resident, resident_bytes() + kBytes / 2);
  EXPECT_EQ(sum(), before);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace attngeom
