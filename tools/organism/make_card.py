#!/usr/bin/python3
"""Write MODEL_CARD.md and sink_growth.svg of an exported organism.

Usage: make_card.py MODEL_DIR NOTES_MD RUNS_DIR [SEED_CLAIMS_MD]
  NOTES_MD        what the training showed (markdown, inserted verbatim)
  RUNS_DIR        WORK/runs: one folder per sweep run with its log.csv (train.py --name)
  SEED_CLAIMS_MD  the output of tools/seed_claims.py on the demo's run (optional)
"""
import csv, json, os, sys

d, notes_path, runs_dir = sys.argv[1:4]
claims = open(sys.argv[4]).read() if len(sys.argv) > 4 else ""
ev = json.load(open(os.path.join(d, "eval.json")))
cfg = json.load(open(os.path.join(d, "config.json")))
sources = json.load(open(os.path.join(d, "sources.json")))
rows = list(csv.DictReader(open(os.path.join(d, "loss.csv"))))
runs = {name: list(csv.DictReader(open(os.path.join(runs_dir, name, "log.csv"))))
        for name in sorted(os.listdir(runs_dir)) if os.path.exists(os.path.join(runs_dir, name, "log.csv"))}
a = ev["train"]["args"]
nl, H = cfg["num_hidden_layers"], cfg["num_attention_heads"]
layers_of = lambda rs: sum(1 for k in rs[0] if k.startswith("bos_mean_L"))
nl_runs = max([nl] + [layers_of(rs) for rs in runs.values()])  # a sweep run may be deeper than the shipped model
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]


def sink_svg(path, shipped):
    """Mean attention to BOS (over heads and queries t >= 1) per layer against tokens seen, one panel
    per layer: the top row compares the CPU runs over the CPU sweep's range, the second row is the
    whole shipped run, and a third row, where there are GPU runs (gpu_sweep.sh: runs named gpu_*),
    compares those over their whole range. As many panels as the deepest run has layers."""
    W, Hh, pad = 300, 200, 40
    gpu = {name: rs for name, rs in runs.items() if name.startswith("gpu_")}
    cpu = {name: rs for name, rs in runs.items() if name not in gpu}
    sweep_end = max(int(r["tokens"]) for name, rs in cpu.items() if name != shipped for r in rs)
    rows_spec = [("sweep: first %.1fM tokens" % (sweep_end / 1e6), cpu, sweep_end),
                 ("shipped run", {shipped: runs[shipped]}, max(int(r["tokens"]) for r in runs[shipped]))]
    if gpu:
        rows_spec.append(("GPU runs", gpu, max(int(r["tokens"]) for rs in gpu.values() for r in rs)))
    top = lambda group: max(0.05, max(float(r["bos_mean_L%d" % i]) for rs in group.values() for r in rs for i in range(layers_of(rs))))
    ymax_cpu = top(cpu)  # the CPU rows share a scale; the GPU row has its own
    names = list(runs)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">'
           % (W * nl_runs, len(rows_spec) * Hh + 30 + 16 * (len(names) // 4 + 1)), '<rect width="100%" height="100%" fill="white"/>']
    for row, (title, group, xmax) in enumerate(rows_spec):
        y0 = row * Hh
        ymax = top(group) if group is gpu else ymax_cpu
        for L in range(nl_runs):
            x0 = L * W
            sx = lambda t: x0 + pad + (W - pad - 10) * t / xmax
            sy = lambda v: y0 + 10 + (Hh - 40) * (1 - v / ymax)
            out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>' % (x0 + pad, y0 + 10, W - pad - 10, Hh - 40))
            out.append('<text x="%d" y="%d">layer %d, %s</text>' % (x0 + pad + 4, y0 + 24, L, title))
            for t in (0, ymax / 2, ymax):
                out.append('<text x="%d" y="%.1f" text-anchor="end">%.2f</text>' % (x0 + pad - 3, sy(t) + 4, t))
            out.append('<text x="%d" y="%d" text-anchor="middle">tokens seen (0 to %sM)</text>' % (x0 + W / 2 + pad / 2, y0 + Hh - 14, "%.1f" % (xmax / 1e6) if xmax < 1e8 else "%.0f" % (xmax / 1e6)))
            for name, rs in group.items():
                if L >= layers_of(rs):
                    continue
                pts = " ".join("%.1f,%.1f" % (sx(int(r["tokens"])), sy(float(r["bos_mean_L%d" % L])))
                               for r in rs if int(r["tokens"]) <= xmax)
                out.append('<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>' % (COLOURS[names.index(name) % len(COLOURS)], pts))
    for k, name in enumerate(names):
        out.append('<text x="%d" y="%d" fill="%s">%s</text>' % (pad + 280 * (k % 4), len(rows_spec) * Hh + 16 * (k // 4 + 1), COLOURS[k % len(COLOURS)], name))
    out.append("</svg>")
    open(path, "w").write("\n".join(out) + "\n")


sink_svg(os.path.join(d, "sink_growth.svg"), "organism")
L = []
w = L.append
w("# attngeom model organism (`models/organism`)\n")
gpu_trained = str(a.get("device", "cpu")).startswith("cuda")
w("A small LLaMA-architecture language model trained from scratch on %s for attngeom's demo and tests:" % ("a GPU" if gpu_trained else "CPU"))
w("a real trained checkpoint whose attention the tools can be checked on. It is a toy that writes")
w("English in the style of fortune cookies, the King James Bible and Debian documentation.\n")
w("## Files\n")
w("| file | bytes | what |")
w("|---|---:|---|")
desc = {"config.json": "HF `LlamaForCausalLM` config",
        "model.safetensors": "weights, F32, HF tensor names",
        "tokenizer.model": "sentencepiece BPE model (`spm_train`)",
        "heldout.txt": "held-out split, one document per line (never trained on)",
        "heldout_tokens.safetensors": "`tokens` I32: the held-out token stream (see protocol)",
        "golden.safetensors": "`tokens` I32 [T], `logits` F32 [T, vocab], `nll` F32 [T-1] from torch",
        "eval.json": "held-out perplexity, unseen-text bits per byte, BOS attention per head, recipe",
        "loss.csv": "the shipped run's log: losses, bits per byte, BOS attention per layer",
        "sources.json": "documents and bytes per training source",
        "sink_growth.svg": "mean attention to BOS per layer against steps, every sweep run",
        "MODEL_CARD.md": "this file",
        "attention_roles.txt": "output of `tools/organism/analyze.py models/organism`: where attention goes"}
for f in sorted(os.listdir(d)):
    w("| `%s` | %d | %s |" % (f, os.path.getsize(os.path.join(d, f)), desc.get(f, "")))
w("")
w("## Data and licences\n")
w("All text comes from Debian 12 packages (`tools/organism/prep.py`). Non-ASCII characters become spaces and")
w("whitespace is collapsed. Documents are deduplicated, shuffled (seed %d) and packed back to back." % 1234)
w("")
w("| source | Debian package | licence | documents | bytes |")
w("|---|---|---|---:|---:|")
lic = {"fortunes": ("`fortunes` (`/usr/share/games/fortunes`, all but `ascii-art`; one cookie per document)", "BSD (fortune-mod; `/usr/share/doc/fortunes/copyright`)"),
       "bible-kjv": ("`bible-kjv` (`bible -l10000 Gen1:1-Rev22:21`; 3 verses per document)", "public domain (`/usr/share/doc/bible-kjv-text/copyright`)"),
       "package-docs": ("README, NEWS and changelog files under `/usr/share/doc` (first 20,000 characters of each; paragraphs grouped up to 2,000 characters)", "each package's own, in its `/usr/share/doc/PKG/copyright`; all Debian main, so free to redistribute"),
       "debian-handbook": ("`debian-handbook` (en-US HTML, prose paragraphs)", "GPL-2+ or CC-BY-SA-3.0"),
       "debian-reference": ("`debian-reference-en` (HTML, prose paragraphs)", "GPL-2+"),
       "python-doc": ("`python3.11-doc` (HTML, prose paragraphs, code blocks dropped)", "PSF licence (Python documentation)")}
for k, (pkg, l) in lic.items():
    w("| %s | %s | %s | %d | %d |" % (k, pkg, l, sources[k]["documents"], sources[k]["bytes"]))
w("")
w("Never trained on: `/usr/share/common-licenses` (files named copyright, COPYING or LICENSE are skipped, and")
w("%d documents that share a run of 8 words with any licence there were dropped), and the held-out split" % sum(v.get("dropped_licence_overlap", 0) for v in sources.values() if isinstance(v, dict)))
w("(documents popped from the shuffled list until it held 48,000 bytes: `heldout.txt`, %d tokens)." % ev["heldout_stream_tokens"])
w("Training stream: %d tokens.\n" % sources["train_tokens"])
w("## Tokenizer\n")
w("`spm_train --model_type=bpe --vocab_size=%d --character_coverage=1.0 --normalization_rule_name=identity" % cfg["vocab_size"])
w("--bos_id=1 --eos_id=2 --unk_id=0 --pad_id=-1` on the training split (one document per line). A token stream")
w("is the `spm_encode` ids of the documents back to back: no EOS between documents. BOS (id 1) is only ever at")
w("position 0 of a window.\n")
w("## Architecture\n")
w("LLaMA: pre-RMSNorm (eps %g), RoPE (theta %g, Hugging Face `rotate_half` convention, full head dim)," % (cfg["rms_norm_eps"], cfg["rope_theta"]))
w("SwiGLU MLP, no biases, untied embedding and `lm_head`, multi-head attention (no GQA).\n")
w("| | |\n|---|---|")
for k in ("num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim",
          "intermediate_size", "vocab_size", "max_position_embeddings"):
    w("| %s | %s |" % (k, cfg[k]))
w("| parameters | %d |" % ev["train"]["params"])
w("")
w("## Training recipe\n")
w("Each training window is BOS followed by %d consecutive tokens from a uniformly random offset of the" % a["ctx"])
w("training stream; next-token cross-entropy on every position after BOS. AdamW (betas 0.9/0.95, eps 1e-8),")
w("weight decay %g on matrices, peak lr %g, linear warmup %d steps, constant, then linear decay over the" % (a["wd"], a["lr"], a["warmup"]))
w("last %d%% of steps to %g x peak; gradient clipping %g; batch %d windows; %d steps = %d tokens; init" % (round(100 * a["decay_frac"]), a["min_lr_frac"], a["clip"], a["batch"], a["steps"], ev["train"]["tokens_seen"]))
w("N(0, 0.02), `o_proj` and `down_proj` scaled by 1/sqrt(2 x layers); seed %d; bf16 autocast for the training" % a["seed"])
if gpu_trained:  # tools/organism/gpu_sweep.sh, exported on the CPU with train.py --export_from
    w("forward and backward (F32 weights, optimiser, probes and export), fused AdamW. Wall time %.0f s on %s;" % (ev["train"]["seconds"], ev["train"].get("hardware", "a CUDA GPU")))
    w("exported on the CPU.\n")
else:
    w("forward and backward (F32 weights, optimiser, probes and export). Wall time %.0f s on %d torch thread(s)," % (ev["train"]["seconds"], ev["train"]["threads"]))
    w("Debian's `python3-torch` 1.13 with OpenBLAS (`libopenblas0-openmp`) and jemalloc, on a 2-core AMD EPYC")
    w("(Zen 5) shared with other work.\n")
w("## Results\n")
p = ev["protocol"]
w("- **Unseen English prose: %.3f bits per byte** (%d tokens, %d UTF-8 bytes). %s." % (ev["unseen_bits_per_byte"], ev["unseen_tokens"], ev["unseen_bytes"], p["unseen"][0].upper() + p["unseen"][1:]))
w("  `attngeom perplexity --model models/organism --text T --context %d` prints the same figure." % a["ctx"])
w("- **Held-out perplexity: %.3f** (mean NLL %.4f nats over %d tokens; unigram baseline %.1f)." % (ev["heldout_ppl"], ev["heldout_nll"], ev["heldout_predicted_tokens"], ev["unigram_ppl"]))
w("  Protocol: %s; windows = %s; %s; %s.\n" % (p["stream"], p["windows"], p["bos"], p["scored"]))
ba = ev["bos_attention"]
w("### Attention to BOS per head\n")
w(ba["definition"][0].upper() + ba["definition"][1:] + " (%d windows). Uniform causal attention would give" % ba["windows"])
w("about %.4f averaged over queries.\n" % (sum(1.0 / t for t in range(2, a["ctx"] + 1)) / (a["ctx"] - 1)))
w("| layer | " + " | ".join("h%d mean / last" % h for h in range(H)) + " |")
w("|---|" + "---:|" * H)
for i in range(nl):
    w("| %d | " % i + " | ".join("%.3f / %.3f" % (ba["mean_over_queries"][i][h], ba["last_query"][i][h]) for h in range(H)) + " |")
w("")
w("## Sink growth: the sweep\n")
w("Every run below starts from the same seed and data order; each logs, on 8 held-out windows, the mean")
w("attention to BOS over the queries t >= 1 of each head. The plot shows the mean over a layer's heads;")
w("the table gives the layer means at each run's last logged step and the largest head after layer 0 at any")
w("logged step. The sweep runs keep a constant learning rate after warmup; the shipped run decays it over its")
w("last %d%% of steps. Logs: `tools/organism/runs/NAME/log.csv`.\n" % round(100 * a["decay_frac"]))
w("![mean attention to BOS per layer against steps](sink_growth.svg)\n")
w("| run | steps | tokens | held-out loss | unseen bits/byte | " + " | ".join("BOS L%d" % i for i in range(nl_runs)) + " | best head after L0 |")
w("|---|---:|---:|---:|---:|" + "---:|" * nl_runs + "---:|")
for name, rs in runs.items():
    r = rs[-1]
    best = max(float(x["bos_max_L%d" % i]) for x in rs for i in range(1, layers_of(rs)))
    w("| %s | %s | %s | %s | %s | " % (name, r["step"], r["tokens"], r["heldout_loss"], r["unseen_bpb"]) +
      " | ".join(r.get("bos_mean_L%d" % i, "") for i in range(nl_runs)) + " | %.3f |" % best)
w("")
w("### The shipped run's log\n")
w("| step | tokens | train loss | held-out loss | unseen bits/byte | " + " | ".join("BOS L%d (max head)" % i for i in range(nl)) + " |")
w("|---:|---:|---:|---:|---:|" + "---:|" * nl)
for r in rows:
    w("| %s | %s | %s | %s | %s | " % (r["step"], r["tokens"], r["train_loss"], r["heldout_loss"], r["unseen_bpb"]) +
      " | ".join("%s (%s)" % (r["bos_mean_L%d" % i], r["bos_max_L%d" % i]) for i in range(nl)) + " |")
w("")
w(open(notes_path).read().rstrip() + "\n")
if claims:
    w(claims.rstrip() + "\n")
w("## Golden file\n")
w("`golden.safetensors`: `tokens` = [BOS] + the first %d tokens of the held-out stream, `logits` = torch F32" % (a["golden_len"] - 1))
w("logits of the shipped model at every position, `nll[t] = -log softmax(logits[t])[tokens[t+1]]`.\n")
w("## Reproduction\n")
w("`make organism` installs the packages, prepares the data, trains, exports to `models/organism`, and")
w("rewrites `attention_roles.txt` and this card (`tools/organism/build.sh`; about %d minutes on one core)." % round(ev["train"]["seconds"] / 60 + 3))
w("The training command it runs:\n")
w("```sh")
cmd = "tools/organism/train.py --out models/organism --name organism"
for k in ("threads", "layers", "hidden", "heads", "ffn", "ctx", "batch", "steps", "lr", "wd", "warmup", "decay_frac",
          "min_lr_frac", "clip", "bf16", "seed", "eval_every", "eval_windows", "golden_len"):
    cmd += " --%s %s" % (k, a[k])
w(cmd)
w("```\n")
w("Everything is seeded. A different thread count or CPU changes the floating-point summation order, so")
w("a rerun agrees closely, not bitwise. `tools/organism/verify.py models/organism` re-checks the export with")
w("an independent numpy forward pass.")
open(os.path.join(d, "MODEL_CARD.md"), "w").write("\n".join(L) + "\n")
print("wrote", os.path.join(d, "MODEL_CARD.md"))
