// RecordWriter: records written on its thread are the files write_record writes, byte for
// byte, whatever the caller does to its record afterwards; a failed write reaches the caller
// and nothing after it is written; records still waiting are written when it is destroyed.
#include "analysis/record_writer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "analysis/row_fields.h"
#include "temp_dir.h"

namespace attngeom {
namespace {

using testing_support::TempDir;

class RecordWriterTest : public TempDir {
 protected:
  RecordWriterTest() : schema_(make_record_schema(12, false)) {}

  SequenceRecord record(std::size_t sequence) const {
    SequenceRecord r;
    r.sequence = sequence;
    r.tokens.assign(12, static_cast<int>(sequence));
    r.query_positions = {3, 11};
    r.resize(schema_, 2, 3, 12, 2);
    for (std::size_t i = 0; i < r.per_n.size(); ++i) r.per_n[i] = 0.5 * static_cast<double>(i + sequence);
    for (std::size_t i = 0; i < r.profile.size(); ++i) r.profile[i] = 1.0 / static_cast<double>(i + 1);
    return r;
  }

  static std::string bytes(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  RecordSchema schema_;
};

TEST_F(RecordWriterTest, WritesWhatWriteRecordWrites) {
  RecordWriter writer(schema_, 1);  // one waiting: every write() but the first waits
  SequenceRecord reused;
  for (std::size_t s = 0; s < 4; ++s) {
    reused = record(s);
    writer.write(record_path(dir_, s), reused);
    reused.per_n.assign(reused.per_n.size(), -1.0);  // the caller's next sequence
  }
  writer.finish();
  for (std::size_t s = 0; s < 4; ++s) {
    const std::filesystem::path direct = dir_ / ("direct-" + std::to_string(s));
    write_record(direct, schema_, record(s));
    EXPECT_EQ(bytes(record_path(dir_, s)), bytes(direct)) << s;
  }
}

TEST_F(RecordWriterTest, AFailedWriteReachesTheCallerAndStopsTheWrites) {
  RecordWriter writer(schema_);
  writer.write(dir_ / "missing" / "seq-000000.safetensors", record(0));  // no such folder
  EXPECT_THROW(writer.finish(), InputError);
  EXPECT_THROW(writer.write(record_path(dir_, 1), record(1)), InputError);
  EXPECT_FALSE(std::filesystem::exists(record_path(dir_, 1)));
}

TEST_F(RecordWriterTest, DestroyedWithRecordsWaitingWritesThem) {
  {
    RecordWriter writer(schema_, 3);
    for (std::size_t s = 0; s < 3; ++s) writer.write(record_path(dir_, s), record(s));
  }
  for (std::size_t s = 0; s < 3; ++s) EXPECT_TRUE(std::filesystem::exists(record_path(dir_, s))) << s;
}

}  // namespace
}  // namespace attngeom
