#!/usr/bin/python3
"""Data preparation for the attngeom model organism.

Builds, deterministically (fixed seed), under --out:
  train.txt           one training document per line
  heldout.txt         one held-out document per line (same sources, never trained on)
  unseen.txt          English prose from a source that is never trained on: the GNU GPL
                      version 3 (/usr/share/common-licenses/GPL-3), from its Preamble to the end
                      of its terms, whitespace collapsed, one line
  spm.model           sentencepiece BPE tokenizer (spm_train on train.txt)
  train_ids.npy       the training stream: the documents' ids back to back (no EOS, no BOS)
  heldout_ids.npy     the held-out stream, packed the same way
  unseen_ids.npy      the unseen text's ids
  sources.json        documents and bytes per source, and the overlap filter's count

Sources (Debian packages; see the model card for their licences): `fortunes`, `bible-kjv`
(printed with the `bible` command), `debian-handbook` (en-US HTML), `debian-reference-en`
(HTML), `python3.11-doc` (HTML), and the README / NEWS / changelog files of every package
under /usr/share/doc. Licence texts are excluded: files named copyright, COPYING or
LICENSE*, and every document that shares a run of 8 words with any file under
/usr/share/common-licenses, so that the unseen text stays unseen.
"""
import argparse, gzip, html.parser, json, os, random, re, subprocess
import numpy as np

FORTUNE_DIR = "/usr/share/games/fortunes"
DOC_DIR = "/usr/share/doc"
LICENCES = "/usr/share/common-licenses"
HTML_TREES = {
    "debian-handbook": "/usr/share/doc/debian-handbook/html/en-US",
    "debian-reference": "/usr/share/debian-reference",
    "python-doc": "/usr/share/doc/python3.11/html",
}
SHINGLE = 8  # words in the runs that the licence-overlap filter compares
DOC_CHARS = (40, 2000)  # documents shorter are dropped, longer are cut at paragraph ends
PER_FILE_CHARS = 20_000  # long changelogs would otherwise dominate the doc source


def clean(s):
    s = "".join(c if 32 <= ord(c) < 127 else " " for c in s.replace("\t", " ").replace("\n", " "))
    return re.sub(r" +", " ", s).strip()


def group(paragraphs):
    """Consecutive paragraphs joined into documents of at most DOC_CHARS[1] characters."""
    docs, cur = [], ""
    for p in (clean(p) for p in paragraphs):
        if not p:
            continue
        if cur and len(cur) + 1 + len(p) > DOC_CHARS[1]:
            docs.append(cur)
            cur = ""
        cur = (cur + " " + p).strip()[:DOC_CHARS[1]]
    if cur:
        docs.append(cur)
    return [d for d in docs if len(d) >= DOC_CHARS[0]]


def fortune_docs():
    docs = []
    for name in sorted(os.listdir(FORTUNE_DIR)):
        p = os.path.join(FORTUNE_DIR, name)
        if name.endswith((".dat", ".u8")) or name == "ascii-art" or os.path.islink(p) or not os.path.isfile(p):
            continue
        for cookie in open(p, encoding="latin-1").read().split("\n%\n"):
            d = clean(cookie.strip("%\n"))
            if DOC_CHARS[0] <= len(d) <= DOC_CHARS[1]:
                docs.append(d)
    return sorted(set(docs))


def kjv_docs(verses_per_doc=3):
    out = subprocess.run(["bible", "-l10000", "Gen1:1-Rev22:21"], capture_output=True, text=True, check=True).stdout
    docs, book, chap, verses = [], None, None, []

    def flush():
        for i in range(0, len(verses), verses_per_doc):
            grp = verses[i:i + verses_per_doc]
            docs.append(clean("%s %s:%d %s" % (book, chap, grp[0][0], " ".join(t for _, t in grp))))

    for line in out.split("\n"):
        m = re.match(r"^(\S.*?) (\d+)$", line)
        if m:
            if verses:
                flush()
            book, chap, verses = m.group(1), m.group(2), []
            continue
        m = re.match(r"^\s+(\d+) (.*)$", line)
        if m:
            verses.append((int(m.group(1)), m.group(2)))
    if verses:
        flush()
    return docs


def package_doc_docs():
    """README, NEWS and changelog files of the installed packages, split at blank lines."""
    keep = re.compile(r"^(readme|news|changelog|changes|faq)([._-].*)?$", re.I)
    docs = []
    for root, dirs, files in os.walk(DOC_DIR):
        dirs[:] = sorted(d for d in dirs if d not in ("debian-handbook", "python3.11"))
        for name in sorted(files):
            if not keep.match(name) or re.search(r"copying|licen[cs]e|copyright", name, re.I):
                continue
            p = os.path.join(root, name)
            if os.path.islink(p) or name.endswith((".html", ".html.gz")):
                continue
            opener = gzip.open if name.endswith(".gz") else open
            try:
                with opener(p, "rt", encoding="utf-8", errors="replace") as f:
                    text = f.read(PER_FILE_CHARS)
            except (OSError, EOFError):
                continue
            docs += group(re.split(r"\n\s*\n", text))
    return docs


class Paragraphs(html.parser.HTMLParser):
    """Text of the blocks that hold prose (p, li, dd, h1-h4, publican's div.para), outside code,
    tables and navigation."""
    BLOCKS = {"p", "li", "dd", "h1", "h2", "h3", "h4"}
    SKIP_TAGS = {"pre", "code", "script", "style", "nav", "table"}
    SKIP_CLASSES = {"related", "sphinxsidebar", "footer", "navheader", "navfooter", "toc", "docnav"}
    VOID = {"br", "img", "meta", "link", "input", "hr", "wbr", "col", "area", "base", "source"}

    def __init__(self):
        super().__init__()
        self.out, self.cur, self.stack = [], [], []  # stack: (tag, is_block, is_skip)

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            return
        classes = set((dict(attrs).get("class") or "").split())
        block = tag in self.BLOCKS or (tag == "div" and "para" in classes)
        if block:
            self.flush()
        self.stack.append((tag, block, tag in self.SKIP_TAGS or bool(classes & self.SKIP_CLASSES)))

    def handle_endtag(self, tag):
        if not any(t == tag for t, _, _ in self.stack):
            return
        while self.stack:
            t, block, _ = self.stack.pop()
            if block:
                self.flush()
            if t == tag:
                break

    def handle_data(self, data):
        if any(b for _, b, _ in self.stack) and not any(s for _, _, s in self.stack):
            self.cur.append(data)

    def flush(self):
        if self.cur:
            self.out.append("".join(self.cur))
            self.cur = []


def html_docs(tree):
    docs = []
    for root, dirs, files in os.walk(tree):
        dirs.sort()
        for name in sorted(files):
            if not name.endswith((".html", ".html.gz")) or name.startswith(("genindex", "py-modindex", "search")):
                continue
            p = os.path.join(root, name)
            opener = gzip.open if name.endswith(".gz") else open
            with opener(p, "rt", encoding="utf-8", errors="replace") as f:
                parser = Paragraphs()
                parser.feed(f.read())
                parser.flush()
            docs += group(parser.out)
    return docs


def licence_shingles():
    shingles = set()
    for name in sorted(os.listdir(LICENCES)):
        words = re.findall(r"[a-z0-9]+", open(os.path.join(LICENCES, name), encoding="utf-8", errors="replace").read().lower())
        shingles.update(tuple(words[i:i + SHINGLE]) for i in range(len(words) - SHINGLE + 1))
    return shingles


def overlaps(doc, shingles):
    words = re.findall(r"[a-z0-9]+", doc.lower())
    return any(tuple(words[i:i + SHINGLE]) in shingles for i in range(len(words) - SHINGLE + 1))


def unseen_text():
    """GPL-3 from its Preamble to the end of its terms, as one line of collapsed whitespace."""
    text = open(os.path.join(LICENCES, "GPL-3"), encoding="utf-8").read()
    start = text.index("Preamble")
    end = text.index("END OF TERMS AND CONDITIONS") + len("END OF TERMS AND CONDITIONS")
    return clean(text[start:end])


def spm_ids(model, path):
    out = subprocess.run(["spm_encode", "--model=" + model, "--output_format=id", "--input=" + path],
                         capture_output=True, text=True, check=True).stdout
    return [int(x) for line in out.split("\n") for x in line.split()]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "work"))
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--heldout_bytes", type=int, default=48000)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    sources = {"fortunes": fortune_docs(), "bible-kjv": kjv_docs(), "package-docs": package_doc_docs()}
    sources.update({name: html_docs(tree) for name, tree in HTML_TREES.items()})
    shingles = licence_shingles()
    report, docs = {}, []
    for name, ds in sources.items():
        kept = [d for d in dict.fromkeys(ds) if not overlaps(d, shingles)]
        report[name] = {"documents": len(kept), "bytes": sum(map(len, kept)), "dropped_licence_overlap": len(set(ds)) - len(kept)}
        docs += kept
        print("%-16s %7d docs %10d bytes (%d dropped for licence overlap)" % (name, len(kept), report[name]["bytes"], report[name]["dropped_licence_overlap"]))
    docs = list(dict.fromkeys(docs))
    random.Random(a.seed).shuffle(docs)
    held, n = [], 0
    while n < a.heldout_bytes:
        held.append(docs.pop())
        n += len(held[-1]) + 1
    for split, ds in (("train", docs), ("heldout", held)):
        with open(os.path.join(a.out, split + ".txt"), "w") as f:
            f.write("\n".join(ds) + "\n")
    with open(os.path.join(a.out, "unseen.txt"), "w") as f:  # one line, no newline: its bytes are the text's
        f.write(unseen_text())
    prefix = os.path.join(a.out, "spm")
    subprocess.run(["spm_train", "--input=" + os.path.join(a.out, "train.txt"), "--model_prefix=" + prefix,
                    "--vocab_size=%d" % a.vocab, "--model_type=bpe", "--character_coverage=1.0",
                    "--normalization_rule_name=identity", "--bos_id=1", "--eos_id=2", "--unk_id=0",
                    "--pad_id=-1", "--num_threads=2", "--input_sentence_size=1000000",
                    "--shuffle_input_sentence=true", "--minloglevel=1"], check=True)
    for split in ("train", "heldout", "unseen"):
        ids = np.array(spm_ids(prefix + ".model", os.path.join(a.out, split + ".txt")), dtype=np.int32)
        np.save(os.path.join(a.out, split + "_ids.npy"), ids)
        report[split + "_tokens"] = int(len(ids))
        print("%s: %d tokens" % (split, len(ids)))
    with open(os.path.join(a.out, "sources.json"), "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
