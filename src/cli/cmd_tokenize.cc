// attngeom tokenize: the checkpoint's tokenizer on a corpus, one line of token ids per
// document, as analyze would encode them (with the BOS that starts every sequence, unless
// --no-bos). For checking a tokenizer against another implementation.
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "corpus/documents.h"
#include "io/config_json.h"
#include "io/tokenizer.h"
#include "util/error.h"

namespace attngeom::cli {
namespace {

struct TokenizeOptions {
  std::string model_dir;
  std::vector<std::string> data;
  std::string format = "lines";
  CorpusOptions corpus;
  bool no_bos = false;
};

void run_tokenize(const TokenizeOptions& o) {
  const ModelConfig config = load_model_config(std::filesystem::path(o.model_dir) / "config.json");
  const Tokenizer tokenizer = Tokenizer::for_model(o.model_dir, config.vocab, config.bos_token_id);
  const Corpus corpus = read_corpus(o.data, o.corpus);
  for (const std::string& w : corpus_warning_lines(corpus))
    std::fprintf(stderr, "attngeom tokenize: warning: %s\n", w.c_str());
  std::string line;
  for (const Document& d : corpus.documents) {
    std::vector<int> ids;
    if (!o.no_bos && tokenizer.bos_id()) ids.push_back(*tokenizer.bos_id());
    const std::vector<int> text_ids =
        tokenizer.encode_document(d.text, corpus.files[d.file].path.string() + ":" + std::to_string(d.line));
    ids.insert(ids.end(), text_ids.begin(), text_ids.end());
    line.clear();
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (i) line += ' ';
      line += std::to_string(ids[i]);
    }
    line += '\n';
    if (std::fwrite(line.data(), 1, line.size(), stdout) != line.size()) throw InputError("stdout: write failed");
  }
  if (std::fflush(stdout) != 0) throw InputError("stdout: write failed");
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto o = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Print the token ids of each corpus document, one line per document");
  cmd->add_option("--model", o->model_dir, "Hugging Face model directory (config.json and its tokenizer)")->required();
  cmd->add_option("--data", o->data, "corpus files or folders (text, gzip or zstd)")->required();
  add_corpus_format_options(*cmd, o->format, o->corpus.text_field);
  cmd->add_flag("--no-bos", o->no_bos, "leave out the BOS that starts every sequence (add_special_tokens=False)");
  cmd->callback([o, cmd] {
    o->corpus.format = resolve_corpus_format(*cmd, o->format, o->data);
    run_tokenize(*o);
  });
}

}  // namespace attngeom::cli
