"""Token ids of a text under a byte-level BPE tokenizer.json shaped as bigscience/bloom's (make_bpe_tokenizer.py's
bloom flavour): no normaliser, the Split regex BLOOM_PATTERN (Isolated), ByteLevel without a regex of its own, the
merges applied lowest rank first (leftmost first among equals), a ByteLevel post-processor that adds no token.
Written from the tokenizers library's documented behaviour, independent of the engine's reader: the test suite's
expected ids for a fixture carrying such a tokenizer.json. Any other shape is refused (AssertionError).

  bpe_encode.py TOKENIZER_JSON TEXT_FILE     prints the ids
"""
import json
import re
import sys

from make_bpe_tokenizer import BLOOM_PATTERN, byte_alphabet

# Oniguruma reads BLOOM_PATTERN's [^(\s|[...])] as ONE negated class: whitespace, the literals "(", "|", ")" and
# the nested class's marks (PCRE and Python have no nested classes, so it is written out flat here).
BLOOM_PIECE = re.compile(" ?[^\\s()|.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c]+")


def pieces(text):
    """Split(behavior Isolated): each match of the regex, and each stretch between matches, in order."""
    out, at = [], 0
    for match in BLOOM_PIECE.finditer(text):
        if match.start() > at:
            out.append(text[at:match.start()])
        out.append(match.group())
        at = match.end()
    return out + ([text[at:]] if at < len(text) else [])


def merge(word, ranks):
    """BPE on one piece's byte-level symbols: the adjacent pair of lowest merge rank, leftmost among equals,
    joined until no pair has a rank."""
    while len(word) > 1:
        rank, i = min((ranks.get(pair, len(ranks)), i) for i, pair in enumerate(zip(word, word[1:])))
        if rank == len(ranks):
            break
        word = word[:i] + [word[i] + word[i + 1]] + word[i + 2:]
    return word


def encode(path, text):
    """The ids of `text` (a ByteLevel post-processor adds no BOS, so with and without special tokens alike)."""
    with open(path, encoding="utf-8") as f:
        tok = json.load(f)
    steps = (tok.get("pre_tokenizer") or {}).get("pretokenizers") or []
    assert tok.get("normalizer") is None and [s["type"] for s in steps] == ["Split", "ByteLevel"], "pre-tokenizer"
    assert steps[0]["pattern"] == {"Regex": BLOOM_PATTERN} and steps[0]["behavior"] == "Isolated" \
        and not steps[0]["invert"], "not BLOOM's Split"
    assert not steps[1]["add_prefix_space"] and not steps[1]["use_regex"], "ByteLevel step"
    assert (tok.get("post_processor") or {}).get("type") == "ByteLevel", "a post-processor adding tokens"
    assert not any(t["content"] in text for t in tok["added_tokens"]), "added tokens in the text"
    model = tok["model"]
    assert model["type"] == "BPE" and not model.get("ignore_merges") and not model.get("byte_fallback"), "model"
    ranks = {tuple(m.split(" ") if isinstance(m, str) else m): r for r, m in enumerate(model["merges"])}
    alphabet = byte_alphabet()
    return [model["vocab"][s] for piece in pieces(text)
            for s in merge([alphabet[b] for b in piece.encode("utf-8")], ranks)]


if __name__ == "__main__":
    with open(sys.argv[2], encoding="utf-8") as f:
        print(" ".join(map(str, encode(sys.argv[1], f.read()))))
