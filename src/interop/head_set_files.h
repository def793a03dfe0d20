#pragma once
// Head sets in the formats of neighbouring tools (docs/run_format.md, "Head sets of other
// tools"), written from a run and read back onto a run's grid:
//  - duo: DuoAttention's full_attention_heads.tsv, a [layers, kv_heads] matrix of gates in
//    [0, 1], tab-separated, one row per layer;
//  - retrieval-json: Retrieval Head / HeadKV, {"layer-head": [per-sequence scores]};
//  - qrhead-yaml: QRHead, a mapping with `attn_head_set:`, a list of "layer-head" strings.
#include <filesystem>
#include <string>
#include <vector>

namespace attngeom::interop {

enum class HeadSetFormat { kDuo, kRetrievalJson, kQrheadYaml };

// "duo", "retrieval-json", "qrhead-yaml"; parse_format throws SettingError (setting `format`).
const char* format_name(HeadSetFormat format);
HeadSetFormat parse_format(const std::string& name);

// A [layers, heads] (or [layers, kv_heads]) grid as the files see it.
struct FileGrid {
  int layers = 0;
  int heads = 0;     // query heads
  int kv_heads = 0;  // heads / kv_heads query heads share one KV head
};

// One imported file mapped onto the run's query heads (flat index layer * heads + head).
struct ImportedHeadSet {
  std::filesystem::path path;
  HeadSetFormat format = HeadSetFormat::kDuo;
  std::vector<double> score;  // [layers * heads]: gate, mean score, or 1 / 0 for listed / not
  std::vector<bool> member;   // [layers * heads]: the file's head set (docs/method.md section 6)
};

// `spec` is FILE or FORMAT:FILE; without a prefix the format follows the extension (.tsv,
// .json, .yaml / .yml). Throws InputError naming the file and what was expected.
ImportedHeadSet read_head_set(const std::string& spec, const FileGrid& grid);

// Writers; `per_head` is [layers * heads]. Each writes atomically.
void write_duo_tsv(const std::filesystem::path& path, const FileGrid& grid, const std::vector<double>& per_head);
void write_retrieval_json(const std::filesystem::path& path, const FileGrid& grid,
                          const std::vector<std::vector<double>>& per_head_lists);  // [heads][values]
void write_qrhead_yaml(const std::filesystem::path& path, const FileGrid& grid, const std::vector<bool>& member);

}  // namespace attngeom::interop
