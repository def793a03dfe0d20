#!/usr/bin/python3
"""Writes a small Hugging Face tokenizer.json (byte-level BPE) and tokenizer_config.json
in the style of LLaMA-3, Qwen2 or GPT-2, trained here on local text (no downloads).

  make_bpe_tokenizer.py OUT_DIR --flavour llama3|qwen2|gpt2|bloom [--merges N] [--text FILE ...]

The merges come from our own small BPE trainer: text is cut into words (a space joins the
word after it, as both flavours' regexes do), each word is written in GPT-2's byte-level
alphabet, and the most frequent adjacent pair is merged, N times (ties: the smallest pair).
The pre-tokenizer, normaliser, added tokens and post-processor are the flavour's own:
  llama3: LLaMA-3's Split regex, ignore_merges (with whole words in the vocab that no merge
          makes, so that it matters), merges as [a, b] pairs, <|begin_of_text|>
          prepended by a TemplateProcessing post-processor, LLaMA-3's special tokens plus
          three test tokens (<|lstrip|>, <|rstrip|>, and <|mark|> / <|mark|>! for the
          longest match);
  qwen2:  Qwen2's Split regex, the NFC normaliser, merges as "a b" strings, no BOS (a
          ByteLevel post-processor), <|endoftext|>, <|im_start|>, <|im_end|>, <tool_call>,
          </tool_call>, and one normalised non-special token (café, matched after NFC);
  gpt2:   no Split step: the ByteLevel pre-tokenizer with GPT-2's own regex (use_regex), no
          normaliser, merges as "a b" strings, no BOS, <|endoftext|> (GPT-2, Pythia, Phi-2);
          with --vocab-merges, GPT-2's older files too: vocab.json, merges.txt and the
          added_tokens_decoder of tokenizer_config.json;
  bloom:  bigscience/bloom's: <unk> <s> </s> <pad> as ids 0-3 ahead of the bytes, its Split regex
          (a nested class in Oniguruma's syntax) then ByteLevel without a regex, no normaliser, merges as
          "a b" strings, no BOS (a ByteLevel post-processor; BloomTokenizerFast adds none), tokenizer_config
          as BLOOM's.
"""
import argparse
import heapq
import json
import os
import re
import sys
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DEFAULT_TEXT = [os.path.join(REPO, "tests", "data", "fixture_corpus.txt"),
                os.path.join(REPO, "tests", "data", "tokenizer_corpus.jsonl")]

# The Split regexes of meta-llama/Llama-3.x and Qwen/Qwen2.5 tokenizer.json.
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")
# bigscience/bloom's Split regex: in Oniguruma one negated class of whitespace, "(", "|", ")" and 11 marks.
BLOOM_PATTERN = " ?[^(\\s|[.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c])]+"
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                 r"|\s*[\r\n]+|\s+(?!\S)|\s+")

# Training words only (Python's re has no \p{L}): letters, digits, other symbols, spaces.
TRAIN_WORDS = re.compile(r" ?[^\W\d_]+| ?\d{1,3}| ?[^\s\w]+|\s+")


def byte_alphabet():
    """GPT-2's bytes_to_unicode."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def read_text(paths):
    texts = []
    for p in paths:
        with open(p, encoding="utf-8") as f:
            for line in f:
                if p.endswith(".jsonl"):
                    texts.append(json.loads(line)["text"])
                else:
                    texts.append(line)
    return texts


def train_merges(texts, n_merges):
    """Byte-level BPE merges, most frequent pair first (ties: the smallest pair)."""
    alphabet = byte_alphabet()
    counts = Counter(w for t in texts for w in TRAIN_WORDS.findall(t))
    words = [[alphabet[b] for b in w.encode("utf-8")] for w in counts]
    freqs = list(counts.values())
    pairs = Counter()
    where = defaultdict(set)
    for i, w in enumerate(words):
        for a, b in zip(w, w[1:]):
            pairs[(a, b)] += freqs[i]
            where[(a, b)].add(i)
    heap = [(-c, p) for p, c in pairs.items()]
    heapq.heapify(heap)
    merges = []
    while heap and len(merges) < n_merges:
        negc, pair = heapq.heappop(heap)
        if pairs.get(pair, 0) != -negc or negc == 0:
            continue  # stale entry
        merges.append(pair)
        merged = pair[0] + pair[1]
        touched = set()
        for i in list(where[pair]):
            w, f = words[i], freqs[i]
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] -= f
                touched.add((a, b))
            out, k = [], 0
            while k < len(w):
                if k + 1 < len(w) and (w[k], w[k + 1]) == pair:
                    out.append(merged)
                    k += 2
                else:
                    out.append(w[k])
                    k += 1
            words[i] = out
            for a, b in zip(out, out[1:]):
                pairs[(a, b)] += f
                where[(a, b)].add(i)
                touched.add((a, b))
        for p in touched:
            if pairs[p] > 0:
                heapq.heappush(heap, (-pairs[p], p))
        pairs.pop(pair, None)
    return merges


def added(content, id_, special=True, normalized=False, lstrip=False, rstrip=False):
    return {"id": id_, "content": content, "single_word": False, "lstrip": lstrip, "rstrip": rstrip,
            "normalized": normalized, "special": special}


def byte_level_step(add_prefix_space=False, trim_offsets=True):
    return {"type": "ByteLevel", "add_prefix_space": add_prefix_space, "trim_offsets": trim_offsets, "use_regex": False}


def whole_words(texts, vocab, count):
    """The most frequent training words of 4 bytes or more that the vocab lacks."""
    alphabet = byte_alphabet()
    counts = Counter(w for t in texts for w in TRAIN_WORDS.findall(t) if len(w.encode("utf-8")) >= 4)
    spelled = ("".join(alphabet[b] for b in w.encode("utf-8")) for w, _ in counts.most_common())
    return [w for w in spelled if w not in vocab][:count]


def tokenizer_json(flavour, merges, texts):
    alphabet = byte_alphabet()
    specials = ["<unk>", "<s>", "</s>", "<pad>"] if flavour == "bloom" else []
    vocab = {name: i for i, name in enumerate(specials)}  # BLOOM's specials ahead of the bytes
    for b in range(256):
        vocab[alphabet[b]] = len(vocab)
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    if flavour == "llama3":
        for w in whole_words(texts, vocab, len(merges) // 8):
            vocab[w] = len(vocab)
    n = len(vocab)
    if flavour == "llama3":
        names = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                 "<|reserved_special_token_1|>", "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>",
                 "<|eot_id|>", "<|python_tag|>"]
        tokens = [added(name, n + i) for i, name in enumerate(names)]
        tokens += [added("<|lstrip|>", n + len(names), lstrip=True),
                   added("<|rstrip|>", n + len(names) + 1, rstrip=True),
                   added("<|mark|>", n + len(names) + 2), added("<|mark|>!", n + len(names) + 3)]
        bos = tokens[0]
        template = {"type": "TemplateProcessing",
                    "single": [{"SpecialToken": {"id": bos["content"], "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                    "pair": [{"SpecialToken": {"id": bos["content"], "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                             {"SpecialToken": {"id": bos["content"], "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
                    "special_tokens": {bos["content"]: {"id": bos["content"], "ids": [bos["id"]], "tokens": [bos["content"]]}}}
        body = {
            "normalizer": None,
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": LLAMA3_PATTERN}, "behavior": "Isolated", "invert": False},
                byte_level_step()]},
            "post_processor": {"type": "Sequence", "processors": [
                {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True}, template]},
            "model_extra": {"ignore_merges": True},
            "merges": [[a, b] for a, b in merges],
        }
        config = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>", "clean_up_tokenization_spaces": True,
                  "model_max_length": 131072, "tokenizer_class": "PreTrainedTokenizerFast"}
    elif flavour == "gpt2":
        tokens = [added("<|endoftext|>", n, normalized=True)]
        body = {
            "normalizer": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
            "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
            "model_extra": {"ignore_merges": False},
            "merges": [f"{a} {b}" for a, b in merges],
        }
        config = {"add_prefix_space": False, "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
                  "unk_token": "<|endoftext|>", "model_max_length": 1024, "tokenizer_class": "GPT2Tokenizer",
                  "added_tokens_decoder": {str(t["id"]): {k: v for k, v in t.items() if k != "id"} for t in tokens}}
    elif flavour == "bloom":
        tokens = [added(name, i) for i, name in enumerate(specials)]
        body = {
            "normalizer": None,
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": BLOOM_PATTERN}, "behavior": "Isolated", "invert": False},
                byte_level_step()]},
            "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                               "use_regex": False},
            "model_extra": {"ignore_merges": False},
            "merges": [f"{a} {b}" for a, b in merges],
        }
        config = {"add_prefix_space": False, "bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>",
                  "unk_token": "<unk>", "padding_side": "left", "tokenizer_class": "BloomTokenizerFast"}
    else:
        names = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
        tokens = [added(name, n + i) for i, name in enumerate(names)]
        tokens += [added("<tool_call>", n + 3, special=False), added("</tool_call>", n + 4, special=False),
                   added("café", n + 5, special=False, normalized=True)]
        body = {
            "normalizer": {"type": "NFC"},
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": QWEN2_PATTERN}, "behavior": "Isolated", "invert": False},
                byte_level_step(trim_offsets=False)]},
            "post_processor": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
            "model_extra": {"ignore_merges": False},
            "merges": [f"{a} {b}" for a, b in merges],
        }
        config = {"add_bos_token": False, "add_prefix_space": False, "bos_token": None, "eos_token": "<|im_end|>",
                  "pad_token": "<|endoftext|>", "errors": "replace", "model_max_length": 131072,
                  "clean_up_tokenization_spaces": False, "tokenizer_class": "Qwen2Tokenizer"}
    model = {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "", "end_of_word_suffix": "",
             "fuse_unk": False, "byte_fallback": False, **body["model_extra"], "vocab": vocab, "merges": body["merges"]}
    tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": tokens,
           "normalizer": body["normalizer"], "pre_tokenizer": body["pre_tokenizer"],
           "post_processor": body["post_processor"],
           "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
           "model": model}
    return tok, config


def write(out_dir, flavour, n_merges=1500, text_paths=None, vocab_merges=False):
    """Writes OUT_DIR/tokenizer.json and tokenizer_config.json, or with vocab_merges (gpt2)
    vocab.json and merges.txt in its place; returns the vocabulary size."""
    texts = read_text(text_paths or DEFAULT_TEXT)
    tok, config = tokenizer_json(flavour, train_merges(texts, n_merges), texts)
    os.makedirs(out_dir, exist_ok=True)
    if vocab_merges:
        if flavour != "gpt2":
            raise ValueError("vocab.json and merges.txt are GPT-2's files: use --flavour gpt2")
        with open(os.path.join(out_dir, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump(tok["model"]["vocab"], f, ensure_ascii=False)
        with open(os.path.join(out_dir, "merges.txt"), "w", encoding="utf-8") as f:
            f.write("#version: 0.2\n" + "".join(m + "\n" for m in tok["model"]["merges"]))
    else:
        with open(os.path.join(out_dir, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(tok, f, ensure_ascii=False, indent=1)
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, ensure_ascii=False, indent=1)
    return 1 + max(list(tok["model"]["vocab"].values()) + [t["id"] for t in tok["added_tokens"]])


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--flavour", choices=["llama3", "qwen2", "gpt2", "bloom"], required=True)
    ap.add_argument("--vocab-merges", action="store_true", help="gpt2: vocab.json + merges.txt, no tokenizer.json")
    ap.add_argument("--merges", type=int, default=1500)
    ap.add_argument("--text", nargs="+", help="training text (.txt lines or .jsonl with a text field)")
    a = ap.parse_args(argv)
    vocab = write(a.out_dir, a.flavour, a.merges, a.text, a.vocab_merges)
    print(f"wrote {a.out_dir} ({a.flavour}, {'vocab.json + merges.txt' if a.vocab_merges else 'tokenizer.json'}, "
          f"{vocab} ids)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
