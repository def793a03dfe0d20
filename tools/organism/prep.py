#!/usr/bin/python3
"""Data preparation for the attngeom model organism (issue 7).

Builds, deterministically (fixed seed):
  work/train.txt      one training document per line (fortunes + KJV chunks)
  work/heldout.txt    one held-out document per line (never trained on)
  work/spm.model      sentencepiece BPE tokenizer (spm_train)
  work/train_ids.npy  packed token stream: for each doc: ids(doc) + [EOS]
  work/train_doc_off.npy  start offsets of each doc in the stream
  work/heldout_ids.npy    held-out stream, same packing (no BOS; BOS is added per window)

Sources (Debian packages): `fortunes` (BSD-licensed fortune cookie files,
/usr/share/games/fortunes) and `bible-kjv-text` (King James Version, public
domain), printed with the `bible` command.
"""
import argparse, os, re, random, subprocess, sys
import numpy as np

FORTUNE_DIR = "/usr/share/games/fortunes"
SKIP = {"ascii-art"}  # pictures, not English text


def clean(s):
    s = s.replace("\t", " ").replace("\r", " ").replace("\n", " ")
    s = "".join(c if 32 <= ord(c) < 127 else " " for c in s)
    return re.sub(r" +", " ", s).strip()


def fortune_docs():
    docs = []
    for name in sorted(os.listdir(FORTUNE_DIR)):
        if name.endswith((".dat", ".u8")) or name in SKIP:
            continue
        p = os.path.join(FORTUNE_DIR, name)
        if os.path.islink(p) or not os.path.isfile(p):
            continue
        txt = open(p, encoding="latin-1").read()
        cur = []
        for line in txt.split("\n"):
            if line.strip() == "%":
                d = clean("\n".join(cur))
                if 20 <= len(d) <= 2000:
                    docs.append(d)
                cur = []
            else:
                cur.append(line)
        d = clean("\n".join(cur))
        if 20 <= len(d) <= 2000:
            docs.append(d)
    return docs


def kjv_docs(verses_per_doc):
    out = subprocess.run(["bible", "-l10000", "Gen1:1-Rev22:21"], capture_output=True,
                         text=True, check=True).stdout
    docs, book, chap, verses = [], None, None, []

    def flush():
        for i in range(0, len(verses), verses_per_doc):
            grp = verses[i:i + verses_per_doc]
            ref = "%s %s:%d-%d" % (book, chap, grp[0][0], grp[-1][0]) if len(grp) > 1 \
                else "%s %s:%d" % (book, chap, grp[0][0])
            docs.append(clean(ref + " " + " ".join(t for _, t in grp)))

    for line in out.split("\n"):
        m = re.match(r"^(\S.*?) (\d+)$", line)
        if m and not line.startswith(" "):
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


def spm_encode(model, path):
    out = subprocess.run(["spm_encode", "--model=" + model, "--output_format=id", "--input=" + path],
                         capture_output=True, text=True, check=True).stdout
    lines = out.split("\n")
    if lines and lines[-1] == "":
        lines = lines[:-1]
    return [[int(x) for x in l.split()] for l in lines]


def pack(docs_ids, eos):
    stream, off = [], []
    for ids in docs_ids:
        off.append(len(stream))
        stream.extend(ids)
        stream.append(eos)
    return np.array(stream, dtype=np.int32), np.array(off, dtype=np.int64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "work"))
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--heldout_bytes", type=int, default=48000)
    ap.add_argument("--kjv_verses_per_doc", type=int, default=3)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    fd, kd = fortune_docs(), kjv_docs(a.kjv_verses_per_doc)
    print("fortune docs %d (%d bytes), kjv docs %d (%d bytes)" % (
        len(fd), sum(map(len, fd)), len(kd), sum(map(len, kd))))
    docs = sorted(set(fd)) + kd  # dedup fortunes (some files repeat cookies)
    rng = random.Random(a.seed)
    rng.shuffle(docs)
    held, n = [], 0
    while n < a.heldout_bytes:
        d = docs.pop()
        held.append(d)
        n += len(d) + 1
    heldset = set(held)
    train = [d for d in docs if d not in heldset]
    with open(os.path.join(a.out, "train.txt"), "w") as f:
        f.write("\n".join(train) + "\n")
    with open(os.path.join(a.out, "heldout.txt"), "w") as f:
        f.write("\n".join(held) + "\n")
    print("train docs %d, heldout docs %d (%d bytes)" % (len(train), len(held), n))
    prefix = os.path.join(a.out, "spm")
    subprocess.run(["spm_train", "--input=" + os.path.join(a.out, "train.txt"), "--model_prefix=" + prefix,
                    "--vocab_size=%d" % a.vocab, "--model_type=bpe", "--character_coverage=1.0",
                    "--normalization_rule_name=identity", "--bos_id=1", "--eos_id=2", "--unk_id=0",
                    "--pad_id=-1", "--num_threads=1", "--input_sentence_size=2000000",
                    "--shuffle_input_sentence=true", "--seed_sentencepiece_size=200000",
                    "--minloglevel=1"], check=True)
    for split in ("train", "heldout"):
        ids = spm_encode(prefix + ".model", os.path.join(a.out, split + ".txt"))
        s, off = pack(ids, 2)
        np.save(os.path.join(a.out, split + "_ids.npy"), s)
        np.save(os.path.join(a.out, split + "_doc_off.npy"), off)
        print("%s: %d tokens, %d docs, %.1f tokens/doc" % (split, len(s), len(off), len(s) / len(off)))


if __name__ == "__main__":
    main()
