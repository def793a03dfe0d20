// Robustness of the input and output layers (docs/robustness.md): size caps, compression
// corner cases, hostile paths and files, the non-finite weight scan, atomic writes under
// a file-size limit and run-directory refusals.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/record.h"
#include "analysis/run_dir.h"
#include "compress_for_tests.h"
#include "corpus/decompress.h"
#include "corpus/documents.h"
#include "io/checkpoint.h"
#include "io/config_json.h"
#include "io/tokenizer.h"
#include "temp_dir.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/file_read.h"
#include "util/half.h"
#include "util/json_parse.h"

namespace attngeom {
namespace {

namespace fs = std::filesystem;

using testing_support::error_of;
using TempDir = testing_support::TempDir;

std::string zstd_compress(const std::string& text) { return testing::zstd(text, 19); }
std::string gzip_compress(const std::string& text) { return testing::gzip(text, 9); }

// --- compression ---

TEST(Decompress, HighlyCompressibleZstdIsReadWhole) {
  // 4 MiB of one byte compress to a few hundred bytes: all input is consumed long before
  // all output is produced (this read as "truncated" before).
  const std::string text(std::size_t{4} << 20, 'a');
  const FileContent c = decompress_bytes(zstd_compress(text), std::size_t{8} << 20, "big.zst");
  EXPECT_EQ(c.compression, Compression::kZstd);
  EXPECT_EQ(c.bytes.size(), text.size());
  EXPECT_EQ(c.bytes, text);
}

TEST(Decompress, CapsBombsAndRejectsTruncationAndTrailingGarbage) {
  const std::string text(std::size_t{4} << 20, 'b');
  EXPECT_NE(error_of([&] { decompress_bytes(zstd_compress(text), 1 << 20, "bomb.zst"); }).find("1048576-byte limit"),
            std::string::npos);
  EXPECT_NE(error_of([&] { decompress_bytes(gzip_compress(text), 1 << 20, "bomb.gz"); }).find("1048576-byte limit"),
            std::string::npos);
  EXPECT_NE(error_of([&] { decompress_bytes(std::string(2 << 20, 'c'), 1 << 20, "plain"); }).find("limit"),
            std::string::npos);
  const std::string gz = gzip_compress("hello\n");
  EXPECT_EQ(decompress_bytes(gz + gz, 1 << 20, "two.gz").bytes, "hello\nhello\n");  // concatenated members
  EXPECT_EQ(decompress_bytes(gz + gz + std::string(512, '\0'), 1 << 20, "pad.gz").bytes, "hello\nhello\n");  // padding
  EXPECT_NE(error_of([&] { decompress_bytes(gz + std::string(8, '\0') + "x", 1 << 20, "z.gz"); }).find("z.gz: corrupt"),
            std::string::npos);
  EXPECT_NE(error_of([&] { decompress_bytes(gz.substr(0, gz.size() - 3), 1 << 20, "t.gz"); }).find("t.gz: truncated"),
            std::string::npos);
  EXPECT_NE(error_of([&] { decompress_bytes(gz + "garbage!", 1 << 20, "g.gz"); }).find("g.gz: corrupt"),
            std::string::npos);
  EXPECT_NE(error_of([&] { decompress_bytes(std::string("\x1f\x8b", 2), 1 << 20, "m.gz"); }).find("truncated"),
            std::string::npos);
  const std::string zs = zstd_compress("hello\n");
  EXPECT_NE(error_of([&] { decompress_bytes(zs.substr(0, zs.size() - 2), 1 << 20, "t.zst"); }).find("t.zst"),
            std::string::npos);
}

// --- corpus documents ---

TEST(Documents, OverlongDocumentsAreSkippedWithAWarningAndWarningsAreCapped) {
  CorpusOptions options;
  options.format = CorpusFormat::kLines;
  options.max_document_bytes = 10;
  Corpus corpus;
  corpus.files.push_back({"c.txt", Compression::kNone, "", 0});
  add_documents("short\n" + std::string(100, 'x') + "\nok too\n", options, 0, corpus);
  ASSERT_EQ(corpus.documents.size(), 2u);
  ASSERT_EQ(corpus.warnings.size(), 1u);
  EXPECT_NE(corpus.warnings[0].find("c.txt:2: skipped: document of 100 bytes exceeds the 10-byte limit"),
            std::string::npos);

  Corpus bad;
  bad.files.push_back({"bad.txt", Compression::kNone, "", 0});
  std::string lines;
  for (int i = 0; i < 5000; ++i) lines += "\xff\n";
  add_documents(lines, options, 0, bad);
  EXPECT_EQ(bad.warnings.size(), kMaxCorpusWarnings);
  EXPECT_EQ(bad.warnings_dropped, 5000 - kMaxCorpusWarnings);
}

// --- files and paths ---

TEST_F(TempDir, ReadFileRefusesFifosLoopsDirectoriesAndOversizedFiles) {
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(error_of([&] { read_file_bytes(fifo, 100, "config"); }).find("not a regular file"), std::string::npos);
  fs::create_symlink(dir_ / "loop_b", dir_ / "loop_a");
  fs::create_symlink(dir_ / "loop_a", dir_ / "loop_b");
  EXPECT_NE(error_of([&] { read_file_bytes(dir_ / "loop_a", 100, "config"); }).find("symbolic links"),
            std::string::npos);
  EXPECT_NE(error_of([&] { read_file_bytes(dir_, 100, "config"); }).find("not a regular file"), std::string::npos);
  EXPECT_NE(error_of([&] { read_file_bytes(dir_ / "absent", 100, "config"); }).find("config not found"),
            std::string::npos);
  write("big", std::string(101, 'x'));
  EXPECT_NE(error_of([&] { read_file_bytes(dir_ / "big", 100, "config"); }).find("100-byte limit"), std::string::npos);
  EXPECT_EQ(read_file_bytes(dir_ / "big", 101, "config").size(), 101u);
  write("empty", "");
  EXPECT_EQ(read_file_bytes(dir_ / "empty", 100, "config"), "");
}

TEST(ShardIndex, NamesMustBePlainFilesInsideTheModelDirectory) {
  const auto index = [](const std::string& shard) {
    return error_of([&] { parse_shard_index(R"({"weight_map": {"w": ")" + shard + R"("}})", "index.json"); });
  };
  for (const std::string bad : {"../x.safetensors", "/etc/passwd", "a/b.safetensors", "a\\\\b", "..", ".", ""}) {
    EXPECT_NE(index(bad).find("must be a plain file name"), std::string::npos) << bad;
  }
  EXPECT_NE(index("a\\u0000b").find("must be a plain file name"), std::string::npos);
  EXPECT_EQ(index("model-00001-of-00002.safetensors"), "");
  const ShardIndex ok = parse_shard_index(R"({"weight_map": {"b": "s2", "a": "s1", "c": "s2"}})", "i");
  EXPECT_EQ(ok.shards, (std::vector<std::string>{"s1", "s2"}));  // weight_map is read in key order
  EXPECT_NE(error_of([] { parse_shard_index("[]", "i"); }).find("weight_map"), std::string::npos);
  EXPECT_NE(error_of([] { parse_shard_index(R"({"weight_map": {}})", "i"); }).find("empty"), std::string::npos);
}

// --- config limits ---

TEST(ConfigLimits, AbsurdValuesAreInputErrors) {
  const auto config = [](const std::string& extra) {
    return error_of([&] {
      parse_model_config(R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
          "num_attention_heads": 4, "vocab_size": 100)" +
                             extra + "}",
                         "config.json");
    });
  };
  EXPECT_EQ(config(R"(, "num_hidden_layers": 2)"), "");
  EXPECT_NE(config(R"(, "num_hidden_layers": 2, "rms_norm_eps": 1e300)").find("rms_norm_eps"), std::string::npos);
  EXPECT_NE(config(R"(, "num_hidden_layers": 2, "rope_theta": 1e-320)").find("rope_theta"), std::string::npos);
  EXPECT_NE(config(R"(, "num_hidden_layers": 100000)").find("num_hidden_layers"), std::string::npos);
  EXPECT_NE(config(R"(, "num_hidden_layers": 2, "head_dim": 1073741824)").find("head_dim"), std::string::npos);
  EXPECT_NE(config(R"(, "num_hidden_layers": 18446744073709551615)").find("num_hidden_layers"), std::string::npos);
}

// --- non-finite weights ---

TEST(NonFinite, CountsNanAndInfInEveryFloatDtype) {
  std::vector<float> f32(1000, 1.0f);
  EXPECT_EQ(count_nonfinite(DType::kF32, f32.data(), f32.size()).count, 0u);
  f32[700] = std::numeric_limits<float>::infinity();
  f32[900] = std::numeric_limits<float>::quiet_NaN();
  const NonFiniteCount c = count_nonfinite(DType::kF32, f32.data(), f32.size());
  EXPECT_EQ(c.count, 2u);
  EXPECT_EQ(c.first, 700u);
  std::vector<std::uint16_t> half(200000, 0x3c00);  // F16 1.0; several parallel chunks
  half[150000] = 0x7e00;                            // F16 NaN
  half[199999] = 0xfc00;                            // F16 -Inf
  const NonFiniteCount h = count_nonfinite(DType::kF16, half.data(), half.size());
  EXPECT_EQ(h.count, 2u);
  EXPECT_EQ(h.first, 150000u);
  std::vector<std::uint16_t> bf16(10, 0x3f80);  // BF16 1.0
  bf16[3] = 0x7f80;                             // BF16 +Inf
  EXPECT_EQ(count_nonfinite(DType::kBF16, bf16.data(), bf16.size()).first, 3u);
  bf16[3] = 0x7f7f;  // the largest finite BF16
  EXPECT_EQ(count_nonfinite(DType::kBF16, bf16.data(), bf16.size()).count, 0u);
}

// --- JSON nesting ---

TEST(JsonParse, NestingBeyondTheLimitIsAnInputErrorNotAStackOverflowLater) {
  const auto nested = [](int depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  EXPECT_EQ(parse_json(nested(kMaxJsonDepth), "ok.json").dump().size(), 2u * kMaxJsonDepth);
  EXPECT_NE(error_of([&] { parse_json(nested(100000), "deep.json"); }).find("deep.json: JSON nested deeper than"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] { parse_json(R"({"a": {"b": )" + nested(kMaxJsonDepth) + "}}", "run.json"); }).find("run.json"),
      std::string::npos);
  EXPECT_THROW(parse_json("{\"a\": ", "cut.json"), nlohmann::json::parse_error);
}

// --- tokenizer pieces ---

TEST(Tokenizer, DocumentsEncodedInPiecesMatchTheWholeEncodingAtWhitespaceCuts) {
  // Newlines, double spaces and tabs beside single spaces: only a single space between
  // words is a safe cut for every normaliser (LLaMA keeps spaces, Gemma adds no prefix).
  std::string text;
  for (int i = 0; i < 400; ++i) text += "the quick brown fox " + std::to_string(i) + "\njumps  over\tthe\n\n dog; ";
  std::istringstream models(ATTNGEOM_TEST_TOKENIZER_MODELS);
  for (std::string model; std::getline(models, model, ':');) {
    const Tokenizer tokenizer(model, 1 << 20);
    const std::vector<int> whole = tokenizer.encode(text, "t");
    for (const std::size_t piece : {std::size_t{31}, std::size_t{100}, std::size_t{1000}}) {
      EXPECT_EQ(tokenizer.encode_document(text, "t", piece), whole) << model << ", piece " << piece;
    }
  }
  // No whitespace at all: cut at character boundaries, never inside one.
  const Tokenizer tokenizer(ATTNGEOM_TEST_TOKENIZER_MODEL, 1 << 20);
  std::string accents;
  for (int i = 0; i < 300; ++i) accents += "\xc3\xa9";  // é
  for (const int id : tokenizer.encode_document(accents, "t", 5)) EXPECT_GE(id, 0);
}

// --- atomic outputs ---

TEST_F(TempDir, AtomicFileBeyondTheFileSizeLimitFailsCleanlyAndLeavesNothing) {
  // As `ulimit -f` does: with SIGXFSZ ignored (main() does so) the write fails with EFBIG.
  const auto previous_handler = ::signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  rlimit small = old;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const fs::path out = dir_ / "out.bin";
  const std::string bytes(10000, 'z');
  const std::string message = error_of([&] {
    AtomicFile file(out);
    file.write_at(0, bytes.data(), bytes.size());
    file.commit();
  });
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::signal(SIGXFSZ, previous_handler);
  EXPECT_NE(message.find("out.bin: write failed: File too large"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_TRUE(fs::is_empty(dir_));  // the temporary is gone too
}

TEST_F(TempDir, CopyFileAtomicCopiesBytes) {
  write("src", std::string("abc\0def", 7));
  copy_file_atomic(dir_ / "src", dir_ / "dst");
  EXPECT_EQ(read_file_bytes(dir_ / "dst", 100, "copy"), std::string("abc\0def", 7));
  write("empty", "");
  copy_file_atomic(dir_ / "empty", dir_ / "empty2");
  EXPECT_EQ(fs::file_size(dir_ / "empty2"), 0u);
}

// --- run directories ---

TEST_F(TempDir, RepeatedPathSeesThroughSpellingsLinksAndHardLinks) {
  const fs::path a = write("a.txt", "a");
  const fs::path b = write("b.txt", "b");
  fs::create_hard_link(a, dir_ / "hard.txt");
  fs::create_symlink(b, dir_ / "soft.txt");
  EXPECT_FALSE(repeated_path({a, b, dir_ / "missing", dir_ / "missing"}));  // absent paths never repeat
  const auto spelled = repeated_path({a, b, dir_ / "." / "b.txt"});
  ASSERT_TRUE(spelled);
  EXPECT_EQ(*spelled, (std::pair<std::size_t, std::size_t>{1, 2}));
  EXPECT_EQ(repeated_path({dir_ / "hard.txt", b, a}), (std::make_optional(std::pair<std::size_t, std::size_t>{0, 2})));
  EXPECT_EQ(repeated_path({dir_ / "soft.txt", a, b}), (std::make_optional(std::pair<std::size_t, std::size_t>{0, 2})));
}

TEST_F(TempDir, RunDirRefusesForeignDirectoriesAndNeverWritesIntoThem) {
  const nlohmann::json settings = {{"k", 1}};
  fs::create_directories(dir_ / "photos");
  write("photos/cat.jpg", "meow");
  const fs::path photos = dir_ / "photos";
  for (const RunDirMode mode : {RunDirMode::kCreate, RunDirMode::kOverwrite, RunDirMode::kResume}) {
    EXPECT_NE(error_of([&] { RunDir(photos, settings, mode); }), "");
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(photos), fs::directory_iterator()), 1);
  write("file", "x");
  EXPECT_NE(error_of([&] { RunDir(dir_ / "file", settings, RunDirMode::kCreate); }).find("not a directory"),
            std::string::npos);
  // run.json with the wrong shape is not ours either.
  fs::create_directories(dir_ / "fake");
  write("fake/run.json", R"({"format": 5})");
  EXPECT_FALSE(is_run_dir(dir_ / "fake"));
  EXPECT_NE(error_of([&] { RunDir(dir_ / "fake", settings, RunDirMode::kOverwrite); }).find("not an attngeom run"),
            std::string::npos);

  // check_run_dir creates nothing; a run refuses kCreate, resumes with equal settings only.
  check_run_dir(dir_ / "new", settings, RunDirMode::kCreate);
  EXPECT_FALSE(fs::exists(dir_ / "new"));
  { const RunDir run(dir_ / "run", settings, RunDirMode::kCreate); }
  EXPECT_TRUE(is_run_dir(dir_ / "run"));
  EXPECT_NE(error_of([&] { RunDir(dir_ / "run", settings, RunDirMode::kCreate); }).find("already holds a run"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              RunDir(dir_ / "run", {{"k", 2}}, RunDirMode::kResume);
            }).find("different settings"),
            std::string::npos);
  write("run/records/seq-000003.safetensors.tmp.123", "partial");
  write("run/records/seq-000001.safetensors", "x");
  write("run/records/notes.txt", "x");
  const RunDir resumed(dir_ / "run", settings, RunDirMode::kResume);
  EXPECT_EQ(resumed.finished_sequences(), (std::vector<std::size_t>{1}));
  EXPECT_FALSE(fs::exists(dir_ / "run/records/seq-000003.safetensors.tmp.123"));
}

// SIGKILL between creating --out and committing run.json leaves a directory holding at most
// the marker's temporary: it counts as empty for a new run, and --resume starts the run.
TEST_F(TempDir, RunDirKilledBeforeItsMarkerStartsAgainInEveryMode) {
  const nlohmann::json settings = {{"k", 1}};
  for (const RunDirMode mode : {RunDirMode::kCreate, RunDirMode::kOverwrite, RunDirMode::kResume}) {
    const fs::path run = dir_ / ("killed" + std::to_string(static_cast<int>(mode)));
    fs::create_directories(run);
    write(run.lexically_relative(dir_).string() + "/run.json.tmp.4242", "{\"format\": \"attngeom");
    {
      const RunDir started(run, settings, mode);
      EXPECT_TRUE(started.finished_sequences().empty());
    }
    EXPECT_TRUE(is_run_dir(run));
    EXPECT_FALSE(fs::exists(run / "run.json.tmp.4242"));
  }
  // A temporary beside anything else is not a killed run's leftover: still refused.
  fs::create_directories(dir_ / "mixed");
  write("mixed/run.json.tmp.1", "x");
  write("mixed/notes.txt", "x");
  EXPECT_NE(error_of([&] { RunDir(dir_ / "mixed", settings, RunDirMode::kResume); }).find("not an attngeom run"),
            std::string::npos);
  EXPECT_NE(error_of([&] { RunDir(dir_ / "mixed", settings, RunDirMode::kCreate); }).find("refusing"),
            std::string::npos);
  EXPECT_TRUE(fs::exists(dir_ / "mixed/run.json.tmp.1"));
  // --resume of a path that does not exist is still an error (a mistyped --out, most likely).
  EXPECT_NE(error_of([&] { RunDir(dir_ / "absent", settings, RunDirMode::kResume); }), "");
}

// --overwrite keeps the previous run aside until the new one writes a record; a new run
// that ends before its first record leaves nothing.
TEST_F(TempDir, RunDirGuardRestoresThePreviousRunUntilTheFirstRecord) {
  const nlohmann::json settings = {{"k", 1}};
  const fs::path run = dir_ / "run";
  const auto entries = [&] { return std::distance(fs::directory_iterator(dir_), fs::directory_iterator()); };
  {
    const RunDirGuard guard(run, RunDirMode::kCreate, {});
    const RunDir created(run, settings, guard.open_mode());
  }
  EXPECT_FALSE(fs::exists(run));  // nothing recorded: removed
  {
    const RunDirGuard guard(run, RunDirMode::kCreate, {});
    const RunDir created(run, settings, guard.open_mode());
    write("run/records/seq-000000.safetensors", "old");
  }
  ASSERT_TRUE(is_run_dir(run));
  EXPECT_THROW(RunDir(run, settings, RunDirMode::kOverwrite), std::logic_error);

  {  // fails before its first record: the previous run comes back whole
    const RunDirGuard guard(run, RunDirMode::kOverwrite, {});
    EXPECT_EQ(guard.open_mode(), RunDirMode::kCreate);
    EXPECT_EQ(entries(), 1);  // only the set-aside sibling
    const RunDir replaced(run, {{"k", 2}}, guard.open_mode());
    EXPECT_TRUE(replaced.finished_sequences().empty());
  }
  EXPECT_EQ(entries(), 1);
  EXPECT_EQ(read_file_bytes(run / "records/seq-000000.safetensors", 10, "record"), "old");
  EXPECT_EQ(read_run_json(run)["settings"], settings);

  {  // writes a record: the previous run is gone
    const RunDirGuard guard(run, RunDirMode::kOverwrite, {});
    const RunDir replaced(run, {{"k", 2}}, guard.open_mode());
    write("run/records/seq-000001.safetensors", "new");
  }
  EXPECT_EQ(entries(), 1);
  EXPECT_EQ(RunDir(run, {{"k", 2}}, RunDirMode::kResume).finished_sequences(), (std::vector<std::size_t>{1}));

  // An input inside the run would go with it: refused, nothing moved.
  write("run/corpus.txt", "text");
  EXPECT_NE(error_of([&] {
              RunDirGuard(run, RunDirMode::kOverwrite, {dir_ / "model", run / "corpus.txt"});
            }).find("corpus.txt lies inside it"),
            std::string::npos);
  EXPECT_TRUE(fs::exists(run / "corpus.txt"));
}

// --- pre-flight resources ---

TEST(RunLabel, TheDefaultIsTheDirectorysNameHoweverThePathIsSpelled) {
  EXPECT_EQ(default_run_label("/runs/llama2"), "llama2");
  EXPECT_EQ(default_run_label("/runs/llama2/"), "llama2");  // a trailing separator: not the empty name
  EXPECT_EQ(default_run_label("/runs/./llama2"), "llama2");
  EXPECT_EQ(default_run_label("/runs/llama2/../mistral"), "mistral");
}

}  // namespace
}  // namespace attngeom
