#pragma once
// Corpus files -> documents. Formats: text (a whole file is one document), lines (one
// document per non-empty line), jsonl (one JSON object per line, a string field).
// Bad documents (invalid UTF-8, bad JSON, missing field, empty file) are skipped with
// a warning naming the file and line; only an empty result is an error.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "corpus/decompress.h"

namespace attngeom {

enum class CorpusFormat { kText, kLines, kJsonl };

struct CorpusOptions {
  CorpusFormat format = CorpusFormat::kText;
  std::string text_field = "text";
  std::size_t max_file_bytes = std::size_t{4} << 30;       // decompressed, per file
  std::size_t max_document_bytes = std::size_t{16} << 20;  // longer documents are skipped with a warning
};

struct CorpusFile {
  std::filesystem::path path;
  Compression compression = Compression::kNone;
  std::string sha256;  // of the file as stored
  std::size_t documents = 0;
};

struct Document {
  std::string text;
  std::size_t file = 0;  // index into Corpus::files
  std::size_t line = 0;  // 1-based line of the document's start
};

struct Corpus {
  std::vector<CorpusFile> files;
  std::vector<Document> documents;
  std::vector<std::string> warnings;  // "file:line: what was skipped and why", the first kMaxCorpusWarnings
  std::size_t warnings_dropped = 0;   // warnings beyond those
};

inline constexpr std::size_t kMaxCorpusWarnings = 1000;

CorpusFormat parse_corpus_format(const std::string& text);

// Splits one file's decompressed `content` into documents appended to `corpus`, which
// already holds the file's entry at index `file`; problems become warnings.
void add_documents(const std::string& content, const CorpusOptions& options, std::size_t file, Corpus& corpus);

// The corpus's warnings, one line each, with a last line counting those beyond the kept ones:
// each front end shows them its own way.
std::vector<std::string> corpus_warning_lines(const Corpus& corpus);

// The format a file's name implies: jsonl for .jsonl, .jsonl.gz and .jsonl.zst; none otherwise.
std::optional<CorpusFormat> format_from_extension(const std::filesystem::path& file);

// The format of `inputs` (files or folders) when none is given: jsonl when every file's name
// says so, `fallback` when none does. Throws SettingError when they disagree.
CorpusFormat infer_corpus_format(const std::vector<std::string>& inputs, CorpusFormat fallback);

// `inputs` are files or folders (a folder contributes its regular files, sorted by
// name, hidden files skipped). A file that a folder lists again (a link to a file already read)
// is read once, with a warning; one named twice is an InputError. Throws InputError if nothing usable remains.
Corpus read_corpus(const std::vector<std::string>& inputs, const CorpusOptions& options);

}  // namespace attngeom
