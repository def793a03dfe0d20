#!/usr/bin/python3
"""Write models/organism/MODEL_CARD.md from eval.json, config.json and loss.csv.

Usage: make_card.py MODEL_DIR NOTES_MD
NOTES_MD is a markdown fragment (what was tried, observations) inserted verbatim.
"""
import csv, json, os, sys

d = sys.argv[1]
notes = open(sys.argv[2]).read() if len(sys.argv) > 2 else ""
ev = json.load(open(os.path.join(d, "eval.json")))
cfg = json.load(open(os.path.join(d, "config.json")))
rows = list(csv.DictReader(open(os.path.join(d, "loss.csv"))))
a = ev["train"]["args"]
sm = ev["sink_mass"]
sizes = {f: os.path.getsize(os.path.join(d, f)) for f in sorted(os.listdir(d))}

L = []
w = L.append
w("# attngeom model organism (`models/organism`)\n")
w("A small LLaMA-architecture language model trained from scratch on CPU, shipped so that attngeom's")
w("demo and tests have a real trained checkpoint with attention structure (issue 7). It is a toy:")
w("it writes fortune-cookie / King-James-flavoured English and is not useful for anything else.\n")
w("## Files\n")
w("| file | bytes | what |")
w("|---|---:|---|")
desc = {"config.json": "HF `LlamaForCausalLM` config",
        "model.safetensors": "weights, F32, HF tensor names",
        "tokenizer.model": "sentencepiece BPE model (`spm_train`)",
        "heldout.txt": "held-out split, one document per line (never trained on)",
        "heldout_tokens.safetensors": "`tokens` I32: the held-out token stream (see protocol)",
        "golden.safetensors": "`tokens` I32 [T], `logits` F32 [T, vocab], `nll` F32 [T-1] from torch",
        "eval.json": "held-out perplexity, unigram baseline, sink masses, recipe (machine-readable)",
        "loss.csv": "loss log: step, tokens, seconds, train loss (EMA), held-out loss, per-layer sink mass",
        "MODEL_CARD.md": "this file",
        "attention_roles.txt": "output of `tools/organism/analyze.py models/organism`: where attention goes"}
for f, s in sizes.items():
    w("| `%s` | %d | %s |" % (f, s, desc.get(f, "")))
w("")
w("## Data and licence\n")
w("- **fortunes** (Debian package `fortunes`, files in `/usr/share/games/fortunes`, all files except")
w("  `ascii-art`): BSD-licensed fortune-cookie collection from fortune-mod (copyright The Regents of the")
w("  University of California and contributors; see `/usr/share/doc/fortunes/copyright`), which permits")
w("  redistribution with or without modification provided the notice is retained. Each cookie (text between")
w("  `%` lines) is one document; whitespace and newlines are collapsed to single spaces, non-ASCII")
w("  characters become spaces, duplicates are removed, documents shorter than 20 or longer than 2000")
w("  characters are dropped.")
w("- **King James Bible** (Debian package `bible-kjv-text`, printed with `bible -l10000 Gen1:1-Rev22:21`):")
w("  public domain (translation of 1611, copyright expired; see `/usr/share/doc/bible-kjv-text/copyright`).")
w("  Each document is a run of %d consecutive verses of one chapter, prefixed by its reference, e.g." % 3)
w("  `Genesis 1:1-3 In the beginning God created ...`.")
w("- All documents are shuffled with seed 1234; documents are popped into the held-out split until it holds")
w("  48 000 bytes (%d tokens); the rest is the training split (about 2.09M tokens). The held-out split is" % ev["heldout_stream_tokens"])
w("  `heldout.txt` (one document per line) and is never trained on (nor used for the tokenizer).\n")
w("## Tokenizer\n")
w("`spm_train --model_type=bpe --vocab_size=%d --character_coverage=1.0 --normalization_rule_name=identity" % cfg["vocab_size"])
w("--bos_id=1 --eos_id=2 --unk_id=0 --pad_id=-1` on the training split (one document per line). Ids are")
w("exactly those of `spm_encode --output_format=id`. A token stream is built as: for each document (line),")
w("its `spm_encode` ids followed by EOS (id 2). Every model window is `[BOS=1] + a slice of a stream`.\n")
w("## Architecture\n")
w("LLaMA: pre-RMSNorm (eps %g), RoPE (theta %g, Hugging Face `rotate_half` convention, full head dim)," % (cfg["rms_norm_eps"], cfg["rope_theta"]))
w("SwiGLU MLP (`down(silu(gate(x)) * up(x))`), no biases, untied input embedding and `lm_head`")
w("(`tie_word_embeddings: false`), multi-head attention (no GQA).\n")
w("| | |\n|---|---|")
for k in ("num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim",
          "intermediate_size", "vocab_size", "max_position_embeddings"):
    w("| %s | %s |" % (k, cfg[k]))
w("| parameters | %d |" % ev["train"]["params"])
w("")
w("## Training recipe\n")
w("Training windows have %d tokens: BOS at position 0, then documents drawn uniformly at random (with" % a["ctx"])
w("replacement) from the training split and packed back to back, each followed by EOS; the first document")
w("of a window starts at a random offset inside it (as the held-out windows do). With probability")
w("p_repeat + p_kv + p_filler a drawn document is replaced by a synthetic one:")
w("- **repeat** (p_repeat=%g): a random 8-48-token span of a training document, `;`, the same span again" % a["p_repeat"])
w("  (grows copying / induction heads);")
w("- **key-value recall** (p_kv=%g): 4-12 pairs `key = value ,` of random word tokens, then `;` and" % a["p_kv"])
w("  2-n recalled pairs `key = value ;` (value predictable only by looking up the key);")
w("- **filler** (p_filler=%g): a training document with a run of 16-96 `.` tokens inserted at a random" % a["p_filler"])
w("  position (a predictable span where attention has nothing useful to do).")
w("")
w("Loss: next-token cross-entropy on every position (BOS is never a target). Optimiser AdamW")
w("(betas 0.9/0.95, eps 1e-8), weight decay %g on matrices (not on norms), peak lr %g, linear warmup %d steps," % (a["wd"], a["lr"], a["warmup"]))
w(("constant, then linear decay over the last %d%% of steps to %g x peak;" % (round(100 * a["decay_frac"]), a["min_lr_frac"]) if a["decay_frac"] > 0 else "then constant (no decay, so a checkpoint at step N equals a run with --steps N);") + " gradient clipping %g; batch %d" % (a["clip"], a["batch"]))
w("windows x %d tokens; %d steps = %d tokens seen; init N(0, 0.02), `o_proj`/`down_proj` scaled by" % (a["ctx"], a["steps"], ev["train"]["tokens_seen"]))
w("1/sqrt(2 x layers); seed %d; no dropout; bf16 autocast for the training forward/backward: %s (F32 master weights, optimiser, evaluation and export). Wall time of the shipped run: %.0f s with %d torch thread(s)" % (a["seed"], "yes" if a.get("bf16") else "no", ev["train"]["seconds"], ev["train"]["threads"]))
w("on a shared, heavily loaded 2-core machine.\n")
w("## Loss curve\n")
w("Train loss is an exponential moving average (0.98) of the batch loss; held-out loss during training is on")
w("the first %d held-out windows (the full-protocol number is in the next section). Sink = mean over heads" % a["eval_windows"])
w("of the last query's attention to BOS on those windows.\n")
nl = cfg["num_hidden_layers"]
w("| step | tokens | train loss | held-out loss | " + " | ".join("sink L%d" % i for i in range(nl)) + " |")
w("|---:|---:|---:|---:|" + "---:|" * nl)
step_rows = rows if len(rows) <= 25 else [r for i, r in enumerate(rows) if i % max(1, len(rows) // 20) == 0 or i == len(rows) - 1]
for r in step_rows:
    w("| %s | %s | %s | %s | " % (r["step"], r["tokens"], r["train_loss"], r["heldout_loss"]) +
      " | ".join(r.get("sink_L%d" % i, "") for i in range(nl)) + " |")
w("\nFull log: `loss.csv`.\n")
w("## Held-out perplexity\n")
p = ev["protocol"]
w("- **Held-out perplexity: %.3f** (mean NLL %.4f nats/token over %d predicted tokens)." % (ev["heldout_ppl"], ev["heldout_nll"], ev["heldout_predicted_tokens"]))
w("- **Unigram baseline: %.3f** (%s)." % (ev["unigram_ppl"], p["unigram"]))
w("- Protocol: stream = %s (%d tokens, also stored in `heldout_tokens.safetensors`);" % (p["stream"], ev["heldout_stream_tokens"]))
w("  windows = %s; %s; %s." % (p["windows"], p["bos"], p["scored"]))
w("  (Context length %d, stride %d: each stream token is scored exactly once, with the context reset at each window.)\n" % (p["context"], p["stride"]))
w("## Attention sinks\n")
w(sm["definition"][0].upper() + sm["definition"][1:] + ". Rows: layers; columns: heads.\n")
H = cfg["num_attention_heads"]
w("| layer | " + " | ".join("h%d" % h for h in range(H)) + " | mean | std | min | max |")
w("|---|" + "---:|" * (H + 4))
for i, r in enumerate(sm["per_head"]):
    w("| %d | " % i + " | ".join("%.3f" % v for v in r) + " | **%.3f** | %.3f | %.3f | %.3f |" % (
        sm["per_layer_mean"][i], sm["per_layer_std"][i], sm["per_layer_min"][i], sm["per_layer_max"][i]))
w("\nA uniform causal attention at the last query would give 1/%d = %.4f.\n" % (a["ctx"], 1.0 / a["ctx"]))
if notes:
    w(notes.rstrip() + "\n")
w("## Golden file\n")
w("`golden.safetensors`: `tokens` = [BOS] + the first %d tokens of the held-out stream, `logits` = torch F32" % (a["golden_len"] - 1))
w("logits of the shipped model at every position, `nll[t] = -log softmax(logits[t])[tokens[t+1]]`.\n")
w("## Reproduction\n")
w("```sh")
w("/usr/bin/python3 tools/organism/prep.py")
cmd = "/usr/bin/python3 tools/organism/train.py --threads 2 --out models/organism --log models/organism/loss.csv"
for k in ("layers", "hidden", "heads", "ffn", "ctx", "batch", "steps", "lr", "wd", "warmup", "decay_frac",
          "min_lr_frac", "p_repeat", "p_kv", "p_filler", "bf16", "seed", "eval_every", "eval_windows", "golden_len"):
    cmd += " --%s %s" % (k, a[k])
w(cmd)
w("/usr/bin/python3 tools/organism/make_card.py models/organism tools/organism/notes.md")
w("```\n")
w("Needs Debian `python3-torch` (1.13, CPU), `python3-numpy`, `sentencepiece`, `fortunes`, `bible-kjv`. `--bf16 1` is fast only")
w("on CPUs with AMX / AVX512-BF16; elsewhere use the same command (it is emulated, slower) or drop it (F32, slightly different numbers).")
w("`tools/organism/verify.py models/organism` re-checks the export with an independent numpy forward pass.")
if ev["train"].get("note"):
    w("The shipped run: " + ev["train"]["note"] + ".")
w("Everything is seeded; the shipped checkpoint was produced with `--threads %d`. A different thread count" % ev["train"]["threads"])
w("changes only floating-point summation order (results agree closely but not bitwise). On 2 unloaded cores")
w("the run should take well under 45 minutes (estimated from throughput measured early on; 2.66M tokens at >= 2,500 tokens/s is under 18 minutes; not timed on an unloaded machine).")
open(os.path.join(d, "MODEL_CARD.md"), "w").write("\n".join(L) + "\n")
print("wrote", os.path.join(d, "MODEL_CARD.md"))
