// Corpus reading (formats, compression, bad input) and deterministic window selection.
#include <gtest/gtest.h>
#include <zlib.h>
#include <zstd.h>

#include <filesystem>
#include <fstream>
#include <numeric>

#include "compress_for_tests.h"
#include "corpus/documents.h"
#include "corpus/sequences.h"
#include "util/error.h"

namespace attngeom {
namespace {

namespace fs = std::filesystem;

class CorpusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("corpus_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
    return (dir_ / name).string();
  }
  fs::path dir_;
};

using testing::gzip;
using testing::zstd;

TEST_F(CorpusTest, ReadsPlainGzipAndZstdIdentically) {
  const std::string text = "first line\nsecond line\n\nthird line\n";
  const auto plain = read_maybe_compressed(write("a.txt", text), 1 << 20);
  const auto gz = read_maybe_compressed(write("b.txt.gz", gzip(text)), 1 << 20);
  const auto zs = read_maybe_compressed(write("c.zst", zstd(text)), 1 << 20);
  EXPECT_EQ(plain.bytes, text);
  EXPECT_EQ(gz.bytes, text);
  EXPECT_EQ(gz.compression, Compression::kGzip);
  EXPECT_EQ(zs.bytes, text);
  EXPECT_EQ(zs.compression, Compression::kZstd);
  EXPECT_THROW(read_maybe_compressed(write("big.gz", gzip(std::string(5000, 'x'))), 1000), InputError);
  std::string truncated = gzip(text);
  truncated.resize(truncated.size() / 2);
  EXPECT_THROW(read_maybe_compressed(write("t.gz", truncated), 1 << 20), InputError);
  std::string bad_zstd = zstd(text);
  bad_zstd.resize(bad_zstd.size() - 3);
  EXPECT_THROW(read_maybe_compressed(write("t.zst", bad_zstd), 1 << 20), InputError);
}

TEST_F(CorpusTest, LinesAndJsonlSkipBadDocumentsWithFileAndLine) {
  const std::string lines = write("l.txt", "good one\n\xff\xfe bad\n   \nanother good\n");
  CorpusOptions options;
  options.format = CorpusFormat::kLines;
  const Corpus c = read_corpus({lines}, options);
  ASSERT_EQ(c.documents.size(), 2u);
  EXPECT_EQ(c.documents[1].text, "another good");
  EXPECT_EQ(c.documents[1].line, 4u);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("l.txt:2: skipped: invalid UTF-8"), std::string::npos);

  const std::string jsonl = write("j.jsonl", R"({"text":"alpha"})"
                                             "\n"
                                             R"({"body":"x"})"
                                             "\n"
                                             "not json\n"
                                             R"({"text":"beta"})");
  options.format = CorpusFormat::kJsonl;
  const Corpus j = read_corpus({jsonl}, options);
  ASSERT_EQ(j.documents.size(), 2u);
  EXPECT_EQ(j.documents[1].text, "beta");
  ASSERT_EQ(j.warnings.size(), 2u);
  EXPECT_NE(j.warnings[0].find("j.jsonl:2: skipped: no string field 'text'"), std::string::npos);
  EXPECT_NE(j.warnings[1].find("j.jsonl:3: skipped: not valid JSON"), std::string::npos);
}

TEST_F(CorpusTest, NothingUsableIsAnErrorNamingTheProblem) {
  write("sub/.hidden", "x");
  fs::create_directories(dir_ / "empty");
  const std::string empty = write("e.txt", "");
  try {
    read_corpus({empty}, {});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("e.txt:1: skipped: empty file"), std::string::npos);
  }
  EXPECT_THROW(read_corpus({(dir_ / "empty").string()}, {}), InputError);
  EXPECT_THROW(read_corpus({(dir_ / "missing").string()}, {}), InputError);
  EXPECT_THROW(parse_corpus_format("csv"), InputError);
}

TEST_F(CorpusTest, FolderContributesSortedFilesAndHashes) {
  fs::create_directories(dir_ / "f");
  std::ofstream(dir_ / "f" / "b.txt") << "bee";
  std::ofstream(dir_ / "f" / "a.txt") << "abc";
  const Corpus c = read_corpus({(dir_ / "f").string()}, {});
  ASSERT_EQ(c.files.size(), 2u);
  EXPECT_EQ(c.files[0].path.filename(), "a.txt");
  // SHA-256("abc"), the FIPS 180-2 test vector.
  EXPECT_EQ(c.files[0].sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // Only the folder's own regular, non-hidden files: a subfolder and a dot file are not read.
  fs::create_directories(dir_ / "f" / "sub");
  std::ofstream(dir_ / "f" / "sub" / "c.txt") << "sea";
  std::ofstream(dir_ / "f" / ".hidden") << "no";
  EXPECT_EQ(read_corpus({(dir_ / "f").string()}, {}).files.size(), 2u);
  fs::create_directories(dir_ / "nested" / "sub");
  std::ofstream(dir_ / "nested" / "sub" / "d.txt") << "dee";
  try {
    read_corpus({(dir_ / "nested").string()}, {});
    ADD_FAILURE() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not its subfolders"), std::string::npos) << e.what();
  }
}

TEST_F(CorpusTest, FolderLinksToOneFileAreReadOnceWithANote) {
  fs::create_directories(dir_ / "licenses");
  std::ofstream(dir_ / "licenses" / "GFDL-1.3") << "free documentation";
  fs::create_symlink("GFDL-1.3", dir_ / "licenses" / "GFDL");
  const Corpus c = read_corpus({(dir_ / "licenses").string()}, {});
  ASSERT_EQ(c.files.size(), 1u);
  EXPECT_EQ(c.files[0].path.filename(), "GFDL");  // the first in name order
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("GFDL-1.3: the same file as "), std::string::npos) << c.warnings[0];
  EXPECT_NE(c.warnings[0].find("read once"), std::string::npos) << c.warnings[0];
  // A file named and also listed by its folder is read once too; named twice, it is refused.
  const std::string named = (dir_ / "licenses" / "GFDL-1.3").string();
  EXPECT_EQ(read_corpus({named, (dir_ / "licenses").string()}, {}).files.size(), 1u);
  EXPECT_THROW(read_corpus({named, (dir_ / "licenses" / "GFDL").string()}, {}), InputError);
}

TEST_F(CorpusTest, JsonlNamesImplyTheFormatAndMixedNamesAreRefused) {
  EXPECT_EQ(format_from_extension("a.jsonl"), CorpusFormat::kJsonl);
  EXPECT_EQ(format_from_extension("dir/a.jsonl.gz"), CorpusFormat::kJsonl);
  EXPECT_EQ(format_from_extension("a.jsonl.zst"), CorpusFormat::kJsonl);
  EXPECT_FALSE(format_from_extension("a.json").has_value());
  EXPECT_FALSE(format_from_extension(".jsonl").has_value());
  const std::string jsonl = write("a.jsonl", "{\"text\": \"x\"}\n");
  const std::string text = write("b.txt", "plain");
  EXPECT_EQ(infer_corpus_format({jsonl}, CorpusFormat::kText), CorpusFormat::kJsonl);
  EXPECT_EQ(infer_corpus_format({text}, CorpusFormat::kLines), CorpusFormat::kLines);
  try {
    infer_corpus_format({jsonl, text}, CorpusFormat::kText);
    ADD_FAILURE() << "expected a SettingError";
  } catch (const SettingError& e) {
    EXPECT_NE(std::string(e.what()).find("a.jsonl is JSONL by its name but "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("b.txt is not; give format"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace attngeom

namespace attngeom {
namespace {

// A stand-in tokenizer: one id per whitespace-separated word (its length).
std::vector<int> word_ids(const std::string& text, const std::string&) {
  std::vector<int> ids;
  std::size_t i = 0;
  while ((i = text.find_first_not_of(' ', i)) != std::string::npos) {
    const std::size_t end = std::min(text.find(' ', i), text.size());
    ids.push_back(static_cast<int>(end - i));
    i = end;
  }
  return ids;
}

Corpus corpus_of(const std::vector<std::string>& docs) {
  Corpus c;
  c.files.push_back({});
  for (std::size_t i = 0; i < docs.size(); ++i) c.documents.push_back({docs[i], 0, i + 1});
  return c;
}

TEST(Sequences, WindowsAreBosPlusContentAndShortDocumentsSkipOrPack) {
  const Corpus c = corpus_of({"a bb ccc dddd eeeee", "x", "yy zz", "q rr sss"});
  SequenceOptions o;
  o.seq_len = 3;
  o.num_seqs = 100;
  o.bos_token_id = 99;
  const SequenceSet plain = make_sequences(c, word_ids, o);
  // doc0 has 5 tokens -> 2 windows; doc2 has 2 -> 1; doc3 has 3 -> 1; doc1 too short.
  ASSERT_EQ(plain.sequences.size(), 4u);
  EXPECT_EQ(plain.short_documents, 1u);
  EXPECT_EQ(plain.sequences[0].tokens, (std::vector<int>{99, 1, 2}));
  EXPECT_EQ(plain.sequences[1].tokens, (std::vector<int>{99, 3, 4}));
  EXPECT_EQ(plain.sequences[2].documents, (std::vector<std::size_t>{2}));

  o.pack = true;
  o.pack_bos = false;
  const SequenceSet packed = make_sequences(c, word_ids, o);
  // Stream: 1 2 3 4 5 | 1 | 2 2 | 1 2 3  (11 tokens) -> 5 windows of 2.
  ASSERT_EQ(packed.sequences.size(), 5u);
  EXPECT_EQ(packed.sequences[2].tokens, (std::vector<int>{99, 5, 1}));
  EXPECT_EQ(packed.sequences[2].documents, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(packed.sequences[3].documents, (std::vector<std::size_t>{2}));

  // --pack-separator bos (default): 1 2 3 4 5 | 99 1 | 99 2 2 | 99 1 2 3 (14 tokens) -> 7 windows.
  o.pack_bos = true;
  const SequenceSet separated = make_sequences(c, word_ids, o);
  ASSERT_EQ(separated.sequences.size(), 7u);
  EXPECT_EQ(separated.sequences[2].tokens, (std::vector<int>{99, 5, 99}));
  EXPECT_EQ(separated.sequences[2].documents, (std::vector<std::size_t>{0, 1}));  // a BOS opens its document
  EXPECT_EQ(separated.sequences[3].tokens, (std::vector<int>{99, 1, 99}));
  EXPECT_EQ(separated.sequences[3].documents, (std::vector<std::size_t>{1, 2}));
  EXPECT_EQ(separated.sequences[5].tokens, (std::vector<int>{99, 99, 1}));
  EXPECT_EQ(separated.sequences[5].documents, (std::vector<std::size_t>{3}));
}

TEST(Sequences, SkipTakeAndSeededShuffleAreDeterministic) {
  std::vector<std::string> docs;
  for (int i = 1; i <= 30; ++i) docs.push_back(std::string(static_cast<std::size_t>(i), 'w') + " a");
  const Corpus c = corpus_of(docs);
  SequenceOptions o;
  o.seq_len = 3;
  o.num_seqs = 5;
  o.skip = 2;
  const SequenceSet ordered = make_sequences(c, word_ids, o);
  ASSERT_EQ(ordered.sequences.size(), 5u);
  EXPECT_EQ(ordered.sequences[0].tokens[1], 3);  // third document
  o.shuffle_seed = 7;
  const SequenceSet a = make_sequences(c, word_ids, o);
  const SequenceSet b = make_sequences(c, word_ids, o);
  std::vector<int> firsts_a, firsts_b;
  for (std::size_t i = 0; i < 5; ++i) {
    firsts_a.push_back(a.sequences[i].tokens[1]);
    firsts_b.push_back(b.sequences[i].tokens[1]);
  }
  EXPECT_EQ(firsts_a, firsts_b);
  EXPECT_NE(firsts_a, (std::vector<int>{3, 4, 5, 6, 7}));
  o.skip = 30;
  EXPECT_THROW(make_sequences(c, word_ids, o), InputError);
}

}  // namespace
}  // namespace attngeom
