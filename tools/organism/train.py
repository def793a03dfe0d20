#!/usr/bin/python3
"""Train, evaluate and export the attngeom model organism (issue 7).

A small LLaMA-architecture language model (RMSNorm, RoPE with the Hugging Face
rotate_half convention, SwiGLU MLP, no biases) trained on CPU with torch on packed
short documents (fortunes + KJV chunks, see prep.py) with optional synthetic
segments. Every training window starts with BOS at position 0.

Run prep.py first (or use --prep). See MODEL_CARD.md for the exact command.
"""
import argparse, csv, json, math, os, random, struct, subprocess, sys, time
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
BOS, EOS = 1, 2


# ----------------------------------------------------------------------------- model
class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(T, hd, theta):
    inv = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
    t = torch.arange(T, dtype=torch.float32)
    f = torch.outer(t, inv)
    emb = torch.cat([f, f], dim=-1)  # HF convention
    return emb.cos(), emb.sin()


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, H, hd, ff = c["hidden_size"], c["num_attention_heads"], c["head_dim"], c["intermediate_size"]
        self.H, self.hd = H, hd
        self.input_layernorm = RMSNorm(d, c["rms_norm_eps"])
        self.qkv = nn.Linear(d, 3 * H * hd, bias=False)  # fused q,k,v (split on export)
        self.o_proj = nn.Linear(H * hd, d, bias=False)
        self.post_attention_layernorm = RMSNorm(d, c["rms_norm_eps"])
        self.gate_up = nn.Linear(d, 2 * ff, bias=False)  # fused gate,up (split on export)
        self.down_proj = nn.Linear(ff, d, bias=False)
        self.ff = ff

    def forward(self, x, cos, sin, mask, want_attn=False):
        B, T, D = x.shape
        h = self.input_layernorm(x)
        q, k, v = self.qkv(h).view(B, T, 3, self.H, self.hd).permute(2, 0, 3, 1, 4)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        s = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(self.hd)) + mask
        a = torch.softmax(s, dim=-1)
        y = torch.matmul(a, v).transpose(1, 2).reshape(B, T, self.H * self.hd)
        x = x + self.o_proj(y)
        g, u = self.gate_up(self.post_attention_layernorm(x)).split(self.ff, dim=-1)
        x = x + self.down_proj(F.silu(g) * u)
        return x, (a if want_attn else None)


class Llama(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList([Block(c) for _ in range(c["num_hidden_layers"])])
        self.norm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.lm_head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)
        cos, sin = rope_tables(c["max_position_embeddings"], c["head_dim"], c["rope_theta"])
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        self._masks = {}
        std = 0.02
        for n, p in self.named_parameters():
            if p.dim() == 2:
                s = std / math.sqrt(2 * c["num_hidden_layers"]) if n.endswith(("o_proj.weight", "down_proj.weight")) else std
                nn.init.normal_(p, 0.0, s)

    def mask(self, T):
        if T not in self._masks:
            self._masks[T] = torch.full((T, T), float("-inf")).triu(1)
        return self._masks[T]

    def forward(self, idx, want_attn=False):
        B, T = idx.shape
        x = self.embed_tokens(idx)
        cos, sin, m = self.cos[:T], self.sin[:T], self.mask(T)
        attns = []
        for L in self.layers:
            x, a = L(x, cos, sin, m, want_attn)
            attns.append(a)
        return self.lm_head(self.norm(x)), attns


# ----------------------------------------------------------------------------- data
class Data:
    def __init__(self, work, args):
        self.train = np.load(os.path.join(work, "train_ids.npy"))
        off = np.load(os.path.join(work, "train_doc_off.npy"))
        self.docs = [self.train[off[i]:(off[i + 1] if i + 1 < len(off) else len(self.train))] for i in range(len(off))]
        self.held = np.load(os.path.join(work, "heldout_ids.npy"))
        self.a = args
        vocab = [l.split("\t")[0] for l in open(os.path.join(work, "spm.vocab"), encoding="utf-8")]
        self.vocab = vocab
        self.word_ids = np.array([i for i, p in enumerate(vocab) if p.startswith("\u2581") and len(p) >= 3 and p[1:].isalpha()])
        self.tok = {p: i for i, p in enumerate(vocab)}
        self.dot = self.tok.get(".", 0)
        self.eq = self.tok.get("=", 0)
        self.comma = self.tok.get(",", 0)
        self.semi = self.tok.get(";", 0)

    def synth(self, rng):
        a = self.a
        r = rng.random()
        if r < a.p_repeat / (a.p_repeat + a.p_kv + a.p_filler):
            d = self.docs[rng.randrange(len(self.docs))][:-1]
            L = rng.randint(8, 48)
            s = rng.randrange(max(1, len(d) - L + 1))
            ch = list(d[s:s + L])
            return ch + [self.semi] + ch + [EOS]
        if r < (a.p_repeat + a.p_kv) / (a.p_repeat + a.p_kv + a.p_filler):
            n = rng.randint(4, 12)
            ks = [int(x) for x in rng.sample(list(self.word_ids), 2 * n)]
            keys, vals = ks[:n], ks[n:]
            out = []
            for k, v in zip(keys, vals):
                out += [k, self.eq, v, self.comma]
            out[-1] = self.semi
            for j in rng.sample(range(n), rng.randint(2, n)):
                out += [keys[j], self.eq, vals[j], self.semi]
            return out + [EOS]
        # predictable filler: a natural doc with a run of '.' tokens inserted
        d = list(self.docs[rng.randrange(len(self.docs))][:-1])
        p = rng.randrange(len(d) + 1)
        return d[:p] + [self.dot] * rng.randint(16, 96) + d[p:] + [EOS]

    def window(self, rng, T):
        a = self.a
        out = [BOS]
        first = True
        psyn = a.p_repeat + a.p_kv + a.p_filler
        while len(out) < T + 1:
            if psyn > 0 and rng.random() < psyn:
                d = self.synth(rng)
            else:
                d = list(self.docs[rng.randrange(len(self.docs))])
            if first:  # start mid-document, like the held-out windows
                d = d[rng.randrange(len(d)):]
                first = False
            out += d
        return out[:T + 1]

    def batch(self, rng, B, T):
        x = torch.tensor([self.window(rng, T) for _ in range(B)], dtype=torch.long)
        return x[:, :-1], x[:, 1:]

    def held_windows(self, T):
        """Non-overlapping held-out windows: [BOS] + stream[k*(T-1):(k+1)*(T-1)] (last one may be shorter)."""
        n = T - 1
        return [np.concatenate([[BOS], self.held[i:i + n]]).astype(np.int64) for i in range(0, len(self.held), n)]


# ----------------------------------------------------------------------------- eval
@torch.no_grad()
def evaluate(model, data, T, max_windows=None, with_sinks=True):
    model.eval()
    wins = data.held_windows(T)
    if max_windows:
        wins = wins[:max_windows]
    tot, cnt = 0.0, 0
    Lh = model.c["num_hidden_layers"]
    sink_sum = None
    nsink = 0
    for w in wins:
        x = torch.from_numpy(w)[None]
        logits, attns = model(x, want_attn=with_sinks)
        nll = F.cross_entropy(logits[0, :-1], x[0, 1:], reduction="sum")
        tot += nll.item()
        cnt += x.shape[1] - 1
        if with_sinks and len(w) == T:  # full windows only
            s = torch.stack([a[0, :, -1, 0] for a in attns])  # [L, H]
            sink_sum = s if sink_sum is None else sink_sum + s
            nsink += 1
    model.train()
    return tot / cnt, cnt, (sink_sum / nsink if nsink else None), nsink


def unigram_nll(data, T):
    counts = np.bincount(data.train, minlength=len(data.vocab)).astype(np.float64) + 1.0
    p = counts / counts.sum()
    tot, cnt = 0.0, 0
    for w in data.held_windows(T):
        tot += -np.log(p[w[1:]]).sum()
        cnt += len(w) - 1
    return tot / cnt


# ----------------------------------------------------------------------------- export
def save_safetensors(path, tensors, meta=None):
    hdr, off, blobs = {}, 0, []
    for name, t in tensors.items():
        arr = np.ascontiguousarray(t)
        dt = {np.dtype("float32"): "F32", np.dtype("int32"): "I32"}[arr.dtype]
        b = arr.tobytes()
        hdr[name] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    if meta:
        hdr["__metadata__"] = meta
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def hf_state(model):
    c = model.c
    H, hd, ff = c["num_attention_heads"], c["head_dim"], c["intermediate_size"]
    out = {"model.embed_tokens.weight": model.embed_tokens.weight}
    for i, L in enumerate(model.layers):
        p = "model.layers.%d." % i
        q, k, v = L.qkv.weight.split(H * hd, dim=0)
        g, u = L.gate_up.weight.split(ff, dim=0)
        out.update({p + "input_layernorm.weight": L.input_layernorm.weight,
                    p + "self_attn.q_proj.weight": q, p + "self_attn.k_proj.weight": k,
                    p + "self_attn.v_proj.weight": v, p + "self_attn.o_proj.weight": L.o_proj.weight,
                    p + "post_attention_layernorm.weight": L.post_attention_layernorm.weight,
                    p + "mlp.gate_proj.weight": g, p + "mlp.up_proj.weight": u,
                    p + "mlp.down_proj.weight": L.down_proj.weight})
    out["model.norm.weight"] = model.norm.weight
    out["lm_head.weight"] = model.lm_head.weight
    return {k: v.detach().float().contiguous().numpy() for k, v in out.items()}


# ----------------------------------------------------------------------------- main
def lr_at(step, a):
    if step < a.warmup:
        return a.lr * (step + 1) / a.warmup
    dstart = int(a.steps * (1 - a.decay_frac))
    if step < dstart:
        return a.lr
    return a.lr * (a.min_lr_frac + (1 - a.min_lr_frac) * (a.steps - step) / max(1, a.steps - dstart))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default=os.path.join(HERE, "work"))
    ap.add_argument("--out", default=None, help="export directory (e.g. models/organism); omit for experiments")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=384)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--decay_frac", type=float, default=0.3)
    ap.add_argument("--min_lr_frac", type=float, default=0.1)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--p_repeat", type=float, default=0.0)
    ap.add_argument("--p_kv", type=float, default=0.0)
    ap.add_argument("--p_filler", type=float, default=0.0)
    ap.add_argument("--eval_every", type=int, default=100)
    ap.add_argument("--eval_windows", type=int, default=8)
    ap.add_argument("--log", default=None, help="loss CSV path")
    ap.add_argument("--golden_len", type=int, default=192)
    ap.add_argument("--ckpt_every", type=int, default=0,
                    help="save work/ckpt/step_N.pt every N steps (with --decay_frac 0 the model at step N equals "
                         "that of a run with --steps N, so any checkpoint can be exported with --export_from)")
    ap.add_argument("--bf16", type=int, default=0,
                    help="1: bf16 autocast for the training forward/backward (weights, optimiser, eval and export stay F32)")
    ap.add_argument("--export_from", default=None, help="export a saved checkpoint instead of training")
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rng = random.Random(a.seed)
    data = Data(a.work, a)
    V = len(data.vocab)
    c = {"hidden_size": a.hidden, "intermediate_size": a.ffn, "num_hidden_layers": a.layers,
         "num_attention_heads": a.heads, "num_key_value_heads": a.heads, "head_dim": a.hidden // a.heads,
         "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "max_position_embeddings": a.ctx, "vocab_size": V}
    model = Llama(c)
    nparam = sum(p.numel() for p in model.parameters())
    print("params %d, vocab %d, args %s" % (nparam, V, vars(a)), flush=True)
    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    nodecay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.wd}, {"params": nodecay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    if a.export_from:
        ck = torch.load(a.export_from)
        model.load_state_dict(ck["model"])
        a.steps = ck["step"]
        print("exporting checkpoint of step %d" % a.steps, flush=True)
        export(model, data, a, c, ck["rows"], ck["tokens"], ck["seconds"], nparam)
        return
    rows = []
    t0 = time.time()
    ema = None
    tokens = 0
    for step in range(a.steps + 1):
        if step % a.eval_every == 0 or step == a.steps:
            hl, _, sinks, ns = evaluate(model, data, a.ctx, a.eval_windows)
            per_layer = sinks.mean(1).tolist() if sinks is not None else []
            el = time.time() - t0
            print("step %5d tok %9d t %6.0fs train %.4f held %.4f | sink/layer %s | max head %s" % (
                step, tokens, el, ema if ema else float("nan"), hl,
                " ".join("%.3f" % s for s in per_layer),
                " ".join("%.2f" % s for s in sinks.max(1).values.tolist())), flush=True)
            rows.append({"step": step, "tokens": tokens, "seconds": round(el, 1),
                         "train_loss": round(ema, 4) if ema else "", "heldout_loss": round(hl, 4),
                         **{"sink_L%d" % i: round(s, 4) for i, s in enumerate(per_layer)}})
            if a.log:
                os.makedirs(os.path.dirname(os.path.abspath(a.log)), exist_ok=True)
                with open(a.log, "w", newline="") as f:
                    w = csv.DictWriter(f, fieldnames=list(rows[-1].keys()))
                    w.writeheader()
                    w.writerows(rows)
            if a.ckpt_every and step > 0 and step % a.ckpt_every == 0:
                cdir = os.path.join(a.work, "ckpt", os.path.basename(os.path.normpath(a.out or "exp")))
                os.makedirs(cdir, exist_ok=True)
                torch.save({"model": model.state_dict(), "step": step, "rows": list(rows), "tokens": tokens,
                            "seconds": time.time() - t0}, os.path.join(cdir, "step_%d.pt" % step))
        if step == a.steps:
            break
        for g in opt.param_groups:
            g["lr"] = lr_at(step, a)
        x, y = data.batch(rng, a.batch, a.ctx)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bool(a.bf16)):
            logits, _ = model(x)
        loss = F.cross_entropy(logits.float().reshape(-1, V), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
        opt.step()
        tokens += x.numel()
        ema = loss.item() if ema is None else 0.98 * ema + 0.02 * loss.item()
    train_seconds = time.time() - t0
    print("trained %d tokens in %.0fs (%.0f tok/s)" % (tokens, train_seconds, tokens / train_seconds), flush=True)
    if a.out:
        export(model, data, a, c, rows, tokens, train_seconds, nparam)


def export(model, data, a, c, rows, tokens, train_seconds, nparam):
    import shutil
    os.makedirs(a.out, exist_ok=True)
    V = c["vocab_size"]
    # full held-out evaluation
    hl, cnt, sinks, ns = evaluate(model, data, a.ctx)
    ug = unigram_nll(data, a.ctx)
    tensors = hf_state(model)
    meta = {"format": "pt"}
    save_safetensors(os.path.join(a.out, "model.safetensors"), tensors, meta)
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
           "hidden_size": c["hidden_size"], "intermediate_size": c["intermediate_size"],
           "num_hidden_layers": c["num_hidden_layers"], "num_attention_heads": c["num_attention_heads"],
           "num_key_value_heads": c["num_key_value_heads"], "head_dim": c["head_dim"],
           "rms_norm_eps": c["rms_norm_eps"], "rope_theta": c["rope_theta"],
           "max_position_embeddings": c["max_position_embeddings"], "vocab_size": V,
           "bos_token_id": BOS, "eos_token_id": EOS, "tie_word_embeddings": False,
           "hidden_act": "silu", "attention_bias": False, "mlp_bias": False,
           "initializer_range": 0.02, "torch_dtype": "float32"}
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    with open(os.path.join(a.out, "loss.csv"), "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows[-1].keys()))
        wr.writeheader()
        wr.writerows(rows)
    shutil.copy(os.path.join(a.work, "spm.model"), os.path.join(a.out, "tokenizer.model"))
    shutil.copy(os.path.join(a.work, "heldout.txt"), os.path.join(a.out, "heldout.txt"))
    # golden: first held-out window of golden_len tokens
    g = data.held_windows(a.golden_len)[0]
    model.eval()
    with torch.no_grad():
        x = torch.from_numpy(g)[None]
        logits, _ = model(x)
        nll = F.cross_entropy(logits[0, :-1], x[0, 1:], reduction="none")
    save_safetensors(os.path.join(a.out, "golden.safetensors"),
                     {"tokens": g.astype(np.int32), "logits": logits[0].float().numpy(),
                      "nll": nll.float().numpy()},
                     {"protocol": "tokens = [BOS] + first %d tokens of the held-out stream; logits[t] predicts tokens[t+1]; nll[t] = -log softmax(logits[t])[tokens[t+1]]" % (a.golden_len - 1)})
    save_safetensors(os.path.join(a.out, "heldout_tokens.safetensors"),
                     {"tokens": data.held.astype(np.int32)},
                     {"protocol": "held-out stream: for each line of heldout.txt: spm_encode ids + [EOS=2]; no BOS"})
    ev = {"heldout_nll": hl, "heldout_ppl": math.exp(hl), "heldout_predicted_tokens": cnt,
          "heldout_stream_tokens": int(len(data.held)),
          "unigram_nll": ug, "unigram_ppl": math.exp(ug),
          "protocol": {"stream": "for each line of heldout.txt in order: spm_encode(line) ids followed by EOS (id 2); no BOS in the stream",
                       "windows": "non-overlapping: window k = [BOS] + stream[k*(C-1):(k+1)*(C-1)] with C = %d (last window shorter)" % a.ctx,
                       "context": a.ctx, "stride": a.ctx - 1, "bos": "BOS (id 1) at position 0 of every window, never predicted",
                       "scored": "every non-BOS token of every window, predicted from its window prefix; ppl = exp(total nll / count)",
                       "unigram": "add-one smoothed unigram frequencies of the training stream, scored on the same tokens"},
          "sink_mass": {"definition": "attention weight of the last query (position C-1) on position 0 (BOS), averaged over the %d full held-out windows" % ns,
                        "windows": ns, "per_head": sinks.tolist(), "per_layer_mean": sinks.mean(1).tolist(),
                        "per_layer_std": sinks.std(1, unbiased=False).tolist(),
                        "per_layer_min": sinks.min(1).values.tolist(), "per_layer_max": sinks.max(1).values.tolist()},
          "train": {"tokens_seen": tokens, "seconds": round(train_seconds, 1), "threads": a.threads,
                    "final_train_loss_ema": rows[-1]["train_loss"], "params": nparam,
                    "args": {k: v for k, v in vars(a).items() if k not in ("work", "out", "log", "ckpt_every", "export_from")}}}
    with open(os.path.join(a.out, "eval.json"), "w") as f:
        json.dump(ev, f, indent=2)
        f.write("\n")
    print(json.dumps({k: ev[k] for k in ("heldout_nll", "heldout_ppl", "unigram_ppl")}))
    print("sink mass (last query -> BOS), rows = layers, cols = heads:")
    for i, r in enumerate(sinks.tolist()):
        print("  L%d: %s   mean %.3f std %.3f" % (i, " ".join("%.3f" % v for v in r), sum(r) / len(r), float(sinks[i].std(unbiased=False))))


if __name__ == "__main__":
    main()
