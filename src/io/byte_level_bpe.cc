#include "io/byte_level_bpe.h"

#include <queue>

#include "util/error.h"

namespace attngeom {
namespace {

void append_utf8(char32_t c, std::string& out) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xc0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else {
    // The alphabet stops below U+0800.
    ATTNGEOM_CHECK(false);
  }
}

}  // namespace

const std::array<char32_t, 256>& byte_level_alphabet() {
  static const std::array<char32_t, 256> table = [] {
    std::array<char32_t, 256> t{};
    const auto printable = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    };
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) t[static_cast<std::size_t>(b)] = printable(b) ? static_cast<char32_t>(b) : next++;
    return t;
  }();
  return table;
}

std::string byte_level_string(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char b : bytes) append_utf8(byte_level_alphabet()[static_cast<unsigned char>(b)], out);
  return out;
}

BytePairModel::BytePairModel(std::unordered_map<std::string, int> vocab,
                             const std::vector<std::pair<std::string, std::string>>& merges, bool ignore_merges,
                             const std::string& source)
    : vocab_(std::move(vocab)), ignore_merges_(ignore_merges) {
  for (int b = 0; b < 256; ++b) {
    const std::string symbol = byte_level_string(std::string(1, static_cast<char>(b)));
    const int id = find(symbol);
    if (id < 0) {
      throw InputError(source + ": field 'model.vocab' has no symbol for byte " + std::to_string(b) + " ('" + symbol +
                       "'), which byte-level BPE needs");
    }
    byte_ids_[static_cast<std::size_t>(b)] = id;
  }
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    const auto field = [&] { return source + ": field 'model.merges[" + std::to_string(rank) + "]' "; };
    const int left_id = find(left), right_id = find(right), merged_id = find(left + right);
    if (left_id < 0) throw InputError(field() + "names '" + left + "', which is not in model.vocab");
    if (right_id < 0) throw InputError(field() + "names '" + right + "', which is not in model.vocab");
    if (merged_id < 0) throw InputError(field() + "makes '" + left + right + "', which is not in model.vocab");
    // A repeated rule takes its later rank, as tokenizers' and transformers.js's maps do.
    rules_[pair_key(left_id, right_id)] = {static_cast<int>(rank), merged_id};
  }
}

int BytePairModel::find(const std::string& spelling) const {
  const auto it = vocab_.find(spelling);
  return it == vocab_.end() ? -1 : it->second;
}

void BytePairModel::encode(std::string_view bytes, std::vector<int>& out) const {
  if (bytes.empty()) return;
  if (ignore_merges_) {
    if (const int id = find(byte_level_string(bytes)); id >= 0) {
      out.push_back(id);
      return;
    }
  }
  // Symbols as a linked list over the bytes; a merge keeps the left symbol and empties the right.
  struct Symbol {
    int id;
    int prev, next;  // -1 at the ends
    bool alive;
  };
  std::vector<Symbol> symbols(bytes.size());
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    symbols[i] = {byte_ids_[static_cast<unsigned char>(bytes[i])], static_cast<int>(i) - 1,
                  i + 1 < bytes.size() ? static_cast<int>(i) + 1 : -1, true};
  }
  struct Candidate {
    int rank, pos, merged;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  const auto consider = [&](int pos) {
    const int next = symbols[static_cast<std::size_t>(pos)].next;
    if (next < 0) return;
    const auto it =
        rules_.find(pair_key(symbols[static_cast<std::size_t>(pos)].id, symbols[static_cast<std::size_t>(next)].id));
    if (it != rules_.end()) queue.push({it->second.rank, pos, it->second.merged});
  };
  for (std::size_t i = 0; i + 1 < bytes.size(); ++i) consider(static_cast<int>(i));
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[static_cast<std::size_t>(top.pos)];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = symbols[static_cast<std::size_t>(left.next)];
    // Stale: one side has merged since this candidate was queued.
    const auto it = rules_.find(pair_key(left.id, right.id));
    if (it == rules_.end() || it->second.merged != top.merged) continue;
    left.id = top.merged;
    right.alive = false;
    left.next = right.next;
    if (left.next >= 0) symbols[static_cast<std::size_t>(left.next)].prev = top.pos;
    if (left.prev >= 0) consider(left.prev);
    consider(top.pos);
  }
  for (int i = 0; i >= 0; i = symbols[static_cast<std::size_t>(i)].next)
    out.push_back(symbols[static_cast<std::size_t>(i)].id);
}

}  // namespace attngeom
