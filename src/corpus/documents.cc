#include "corpus/documents.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string_view>

#include "io/tokenizer.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/sha256.h"

namespace attngeom {
namespace {

namespace fs = std::filesystem;

struct CorpusInput {
  fs::path path;
  bool from_folder = false;  // listed by a folder rather than named
};

std::vector<CorpusInput> expand_inputs(const std::vector<std::string>& inputs) {
  std::vector<CorpusInput> files;
  for (const auto& input : inputs) {
    std::error_code ec;
    const fs::path path(input);
    if (fs::is_directory(path, ec)) {
      std::vector<fs::path> inside;
      for (const auto& entry : fs::directory_iterator(path, ec)) {
        const std::string name = entry.path().filename().string();
        if (!name.empty() && name[0] != '.' && entry.is_regular_file(ec)) inside.push_back(entry.path());
      }
      if (ec) throw InputError(input + ": cannot list corpus folder: " + ec.message());
      std::sort(inside.begin(), inside.end());
      if (inside.empty()) {
        throw InputError(input +
                         ": corpus folder has no files (its regular, non-hidden files are read; not its subfolders)");
      }
      for (fs::path& file : inside) files.push_back({std::move(file), true});
    } else if (fs::is_regular_file(path, ec)) {
      files.push_back({path, false});
    } else if (fs::exists(path, ec)) {
      throw InputError(input + ": not a regular file or folder (a device, FIFO or socket); expected a corpus file");
    } else {
      throw MissingFileError(input + ": corpus file or folder not found" +
                             (ec ? " (" + ec.message() + ")" : std::string()));
    }
  }
  return files;
}

// The files to read, each once. A file read twice would count its sequences twice and narrow
// every confidence interval: one named twice is refused, while one that a folder lists again
// (a link to a file already read, as /usr/share/common-licenses holds) is read once, with a note.
std::vector<fs::path> distinct_files(std::vector<CorpusInput> files, std::vector<std::string>& notes) {
  std::vector<fs::path> paths;
  for (const CorpusInput& file : files) paths.push_back(file.path);
  while (const auto twice = repeated_path(paths)) {
    const auto [first, repeat] = *twice;
    if (!files[first].from_folder && !files[repeat].from_folder) {
      const std::string also = paths[first] == paths[repeat] ? "" : " (also as " + paths[first].string() + ")";
      throw InputError(paths[repeat].string() + ": corpus file given twice" + also + "; expected each file once");
    }
    notes.push_back(paths[repeat].string() + ": the same file as " + paths[first].string() + "; read once");
    files.erase(files.begin() + static_cast<long>(repeat));
    paths.erase(paths.begin() + static_cast<long>(repeat));
  }
  return paths;
}

// Line number (1-based) of byte `offset` in `text`.
std::size_t line_of(const std::string& text, std::size_t offset) {
  return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<long>(offset), '\n'));
}

class DocumentSink {
 public:
  DocumentSink(Corpus& corpus, std::size_t file) : corpus_(corpus), file_(file) {}
  void add(std::string text, std::size_t line) {
    corpus_.documents.push_back({std::move(text), file_, line});
    ++corpus_.files[file_].documents;
  }
  void warn(std::size_t line, const std::string& what) {
    // A hostile corpus may have millions of bad lines: keep the first ones, count the rest.
    if (corpus_.warnings.size() < kMaxCorpusWarnings) {
      corpus_.warnings.push_back(corpus_.files[file_].path.string() + ":" + std::to_string(line) + ": " + what);
    } else {
      ++corpus_.warnings_dropped;
    }
  }

 private:
  Corpus& corpus_;
  std::size_t file_;
};

std::string too_long(std::size_t bytes, const CorpusOptions& options) {
  return "document of " + std::to_string(bytes) + " bytes exceeds the " + std::to_string(options.max_document_bytes) +
         "-byte limit (--max-document-bytes)";
}

void split_documents(const std::string& content, const CorpusOptions& options, DocumentSink& sink) {
  if (options.format == CorpusFormat::kText) {
    if (content.size() > options.max_document_bytes) {
      sink.warn(1, "skipped file: " + too_long(content.size(), options));
      return;
    }
    if (const long bad = first_invalid_utf8(content); bad >= 0) {
      sink.warn(line_of(content, static_cast<std::size_t>(bad)),
                "skipped file: invalid UTF-8 at byte " + std::to_string(bad));
      return;
    }
    std::string text = text_file_content(content);
    if (text.empty()) {
      sink.warn(1, "skipped: empty file (only a line ending)");
    } else {
      sink.add(std::move(text), 1);
    }
    return;
  }
  std::size_t start = 0;
  std::size_t line = 0;
  while (start < content.size()) {
    const std::size_t end = std::min(content.find('\n', start), content.size());
    ++line;
    if (end - start > options.max_document_bytes) {  // checked before any copy
      sink.warn(line, "skipped: " + too_long(end - start, options));
      start = end + 1;
      continue;
    }
    std::string text = content.substr(start, end - start);
    start = end + 1;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.find_first_not_of(" \t") == std::string::npos) continue;
    if (const long bad = first_invalid_utf8(text); bad >= 0) {
      sink.warn(line, "skipped: invalid UTF-8 at column " + std::to_string(bad + 1));
      continue;
    }
    if (options.format == CorpusFormat::kLines) {
      sink.add(std::move(text), line);
      continue;
    }
    nlohmann::json record;
    try {
      record = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception&) {
      sink.warn(line, "skipped: not valid JSON");
      continue;
    }
    const auto field = record.is_object() ? record.find(options.text_field) : record.end();
    if (!record.is_object() || field == record.end() || !field->is_string()) {
      sink.warn(line, "skipped: no string field '" + options.text_field + "' (--text-field)");
      continue;
    }
    std::string value = field->get<std::string>();
    if (value.empty()) {
      sink.warn(line, "skipped: empty '" + options.text_field + "'");
      continue;
    }
    sink.add(std::move(value), line);
  }
}

}  // namespace

std::vector<std::string> corpus_warning_lines(const Corpus& corpus) {
  std::vector<std::string> lines = corpus.warnings;
  if (corpus.warnings_dropped > 0) {
    lines.push_back(std::to_string(corpus.warnings_dropped) + " more skipped documents (run.json counts them)");
  }
  return lines;
}

void add_documents(const std::string& content, const CorpusOptions& options, std::size_t file, Corpus& corpus) {
  ATTNGEOM_CHECK(file < corpus.files.size());
  DocumentSink sink(corpus, file);
  if (content.empty()) {
    sink.warn(1, "skipped: empty file");
    return;
  }
  split_documents(content, options, sink);
}

CorpusFormat parse_corpus_format(const std::string& text) {
  if (text == "text") return CorpusFormat::kText;
  if (text == "lines") return CorpusFormat::kLines;
  if (text == "jsonl") return CorpusFormat::kJsonl;
  throw SettingError({setting("format"), " '" + text + "': expected text, lines or jsonl"});
}

std::optional<CorpusFormat> format_from_extension(const fs::path& file) {
  const std::string name = file.filename().string();
  for (const char* ending : {".jsonl", ".jsonl.gz", ".jsonl.zst"}) {
    const std::string_view tail(ending);
    if (name.size() > tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0) {
      return CorpusFormat::kJsonl;
    }
  }
  return std::nullopt;
}

CorpusFormat infer_corpus_format(const std::vector<std::string>& inputs, CorpusFormat fallback) {
  const std::vector<CorpusInput> files = expand_inputs(inputs);
  const auto is_jsonl = [](const CorpusInput& file) { return format_from_extension(file.path).has_value(); };
  const auto jsonl = std::find_if(files.begin(), files.end(), is_jsonl);
  if (jsonl == files.end()) return fallback;
  const auto other = std::find_if_not(files.begin(), files.end(), is_jsonl);
  if (other == files.end()) return CorpusFormat::kJsonl;
  throw SettingError(
      {"corpus: " + jsonl->path.string() + " is JSONL by its name but " + other->path.string() + " is not; give ",
       setting("format")});
}

Corpus read_corpus(const std::vector<std::string>& inputs, const CorpusOptions& options) {
  Corpus corpus;
  for (const fs::path& path : distinct_files(expand_inputs(inputs), corpus.warnings)) {
    FileContent content = read_maybe_compressed(path, options.max_file_bytes);
    corpus.files.push_back({path, content.compression, sha256_file(path), 0});
    add_documents(content.bytes, options, corpus.files.size() - 1, corpus);
  }
  if (corpus.documents.empty()) {
    std::string why = corpus.warnings.empty() ? "" : " (first problem: " + corpus.warnings.front() + ")";
    throw InputError("corpus: no usable documents in the given files" + why);
  }
  return corpus;
}

}  // namespace attngeom
