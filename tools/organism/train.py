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
    """Token streams from prep.py: documents back to back, no separators; BOS only at position 0
    of every window."""

    def __init__(self, work):
        self.train = np.load(os.path.join(work, "train_ids.npy")).astype(np.int64)
        self.held = np.load(os.path.join(work, "heldout_ids.npy")).astype(np.int64)
        self.vocab = [l.split("\t")[0] for l in open(os.path.join(work, "spm.vocab"), encoding="utf-8")]
        self.unseen = np.load(os.path.join(work, "unseen_ids.npy")).astype(np.int64)
        self.unseen_bytes = os.path.getsize(os.path.join(work, "unseen.txt"))

    def batch(self, rng, B, T):
        """B windows [BOS] + T random consecutive training tokens: inputs [B, T], targets [B, T]."""
        starts = rng.integers(0, len(self.train) - T, size=B)
        x = np.stack([np.concatenate([[BOS], self.train[s:s + T]]) for s in starts])
        x = torch.from_numpy(x)
        return x[:, :-1], x[:, 1:]


def windows(stream, T):
    """Non-overlapping windows [BOS] + stream[k*(T-1):(k+1)*(T-1)] (the last one may be shorter)."""
    n = T - 1
    return [np.concatenate([[BOS], stream[i:i + n]]).astype(np.int64) for i in range(0, len(stream), n)]


# ----------------------------------------------------------------------------- eval
@torch.no_grad()
def evaluate(model, stream, T, max_windows=None):
    """Total NLL (nats) and count of the non-BOS tokens, and the per-head BOS attention of the full
    windows: mean of A[t, 0] over queries t >= 1 ([L, H]) and A[T-1, 0] at the last query ([L, H])."""
    model.eval()
    wins = windows(stream, T)[:max_windows]
    tot, cnt, mean_sum, last_sum, full = 0.0, 0, 0, 0, 0
    for w in wins:
        x = torch.from_numpy(w)[None]
        logits, attns = model(x, want_attn=True)
        tot += F.cross_entropy(logits[0, :-1], x[0, 1:], reduction="sum").item()
        cnt += x.shape[1] - 1
        if len(w) == T:
            a = torch.stack([at[0, :, 1:, 0] for at in attns])  # [L, H, T-1]
            mean_sum, last_sum, full = mean_sum + a.mean(-1), last_sum + a[..., -1], full + 1
    model.train()
    return tot, cnt, (mean_sum / full if full else None), (last_sum / full if full else None), full


def unigram_nll(data, T):
    counts = np.bincount(data.train, minlength=len(data.vocab)).astype(np.float64) + 1.0
    p = counts / counts.sum()
    tot, cnt = 0.0, 0
    for w in windows(data.held, T):
        tot += -np.log(p[w[1:]]).sum()
        cnt += len(w) - 1
    return tot / cnt


def bits_per_byte(model, data, T):
    tot, _, _, _, _ = evaluate(model, data.unseen, T)
    return tot / math.log(2) / data.unseen_bytes


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
    """Warmup, constant, then a linear decay over the last decay_frac of the steps to min_lr_frac."""
    if step < a.warmup:
        return a.lr * (step + 1) / a.warmup
    dstart = int(a.steps * (1 - a.decay_frac))
    if step < dstart:
        return a.lr
    return a.lr * (a.min_lr_frac + (1 - a.min_lr_frac) * (a.steps - step) / max(1, a.steps - dstart))


def probe(model, data, a, step, tokens, seconds, ema):
    """One row of the training log: losses, bits per byte on the unseen text, BOS attention per layer."""
    tot, cnt, mean_bos, _, _ = evaluate(model, data.held, a.ctx, a.eval_windows)
    bpb = bits_per_byte(model, data, a.ctx)
    row = {"step": step, "tokens": tokens, "seconds": round(seconds, 1),
           "train_loss": round(ema, 4) if ema else "", "heldout_loss": round(tot / cnt, 4), "unseen_bpb": round(bpb, 4)}
    row.update({"bos_mean_L%d" % i: round(v, 4) for i, v in enumerate(mean_bos.mean(1).tolist())})
    row.update({"bos_max_L%d" % i: round(v, 4) for i, v in enumerate(mean_bos.max(1).values.tolist())})
    print("step %6d tok %10d t %6.0fs train %.4f held %.4f bpb %.4f | BOS mean/layer %s | max head %s" % (
        step, tokens, seconds, ema or float("nan"), tot / cnt, bpb,
        " ".join("%.3f" % v for v in mean_bos.mean(1).tolist()),
        " ".join("%.3f" % v for v in mean_bos.max(1).values.tolist())), flush=True)
    return row


def write_csv(path, rows):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[-1].keys()))
        w.writeheader()
        w.writerows(rows)


def config_of(a, vocab):
    return {"hidden_size": a.hidden, "intermediate_size": a.ffn, "num_hidden_layers": a.layers,
            "num_attention_heads": a.heads, "num_key_value_heads": a.heads, "head_dim": a.hidden // a.heads,
            "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "max_position_embeddings": a.ctx, "vocab_size": vocab}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default=os.path.join(HERE, "work"))
    ap.add_argument("--out", default=None, help="export directory (e.g. models/organism); omit for sweep runs")
    ap.add_argument("--name", default="run", help="sweep run name: the log and checkpoints go to WORK/runs/NAME")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=384)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--decay_frac", type=float, default=0.2)
    ap.add_argument("--min_lr_frac", type=float, default=0.05)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--eval_every", type=int, default=250)
    ap.add_argument("--eval_windows", type=int, default=8)
    ap.add_argument("--golden_len", type=int, default=192)
    ap.add_argument("--bf16", type=int, default=1,
                    help="1: bf16 autocast for the training forward and backward (weights, optimiser, probes and export stay F32)")
    ap.add_argument("--ckpt_every", type=int, default=0,
                    help="save WORK/runs/NAME/last.pt (model, optimiser, data sampler) every N steps")
    ap.add_argument("--resume", action="store_true",
                    help="continue WORK/runs/NAME from last.pt; before the decay starts the learning rate does not "
                         "depend on --steps, so a run extended this way equals a run started with the new --steps")
    ap.add_argument("--export_from", default=None, help="export a saved checkpoint instead of training")
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rng = np.random.default_rng(a.seed)
    data = Data(a.work)
    c = config_of(a, len(data.vocab))
    model = Llama(c)
    nparam = sum(p.numel() for p in model.parameters())
    print("params %d, vocab %d, train tokens %d, args %s" % (nparam, len(data.vocab), len(data.train), vars(a)), flush=True)
    run_dir = os.path.join(a.work, "runs", a.name)
    if a.export_from:
        ck = torch.load(a.export_from)
        model.load_state_dict(ck["model"])
        export(model, data, a, c, ck["rows"], ck["tokens"], ck["seconds"], nparam)
        return
    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    nodecay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.wd}, {"params": nodecay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    rows, ema, tokens, t0, first = [], None, 0, time.time(), 0
    if a.resume:
        ck = torch.load(os.path.join(run_dir, "last.pt"))
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        rng.bit_generator.state = ck["sampler"]
        rows, ema, tokens, first = ck["rows"], ck["ema"], ck["tokens"], ck["step"]
        t0 -= ck["seconds"]
        print("resumed at step %d" % first, flush=True)
    for step in range(first, a.steps + 1):
        if (step % a.eval_every == 0 or step == a.steps) and not (a.resume and step == first):
            rows.append(probe(model, data, a, step, tokens, time.time() - t0, ema))
            write_csv(os.path.join(run_dir, "log.csv"), rows)
        if a.ckpt_every and step > first and step % a.ckpt_every == 0:
            torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "sampler": rng.bit_generator.state,
                        "step": step, "rows": list(rows), "ema": ema, "tokens": tokens, "seconds": time.time() - t0},
                       os.path.join(run_dir, "last.pt.tmp"))
            os.replace(os.path.join(run_dir, "last.pt.tmp"), os.path.join(run_dir, "last.pt"))
        if step == a.steps:
            break
        for g in opt.param_groups:
            g["lr"] = lr_at(step, a)
        x, y = data.batch(rng, a.batch, a.ctx)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bool(a.bf16)):
            logits, _ = model(x)
        loss = F.cross_entropy(logits.float().reshape(-1, c["vocab_size"]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
        opt.step()
        tokens += x.numel()
        ema = loss.item() if ema is None else 0.98 * ema + 0.02 * loss.item()
    train_seconds = time.time() - t0
    print("trained %d tokens in %.0fs (%.0f tok/s)" % (tokens, train_seconds, tokens / train_seconds), flush=True)
    torch.save({"model": model.state_dict(), "step": a.steps, "rows": rows, "tokens": tokens, "seconds": train_seconds},
               os.path.join(run_dir, "final.pt"))
    if a.out:
        export(model, data, a, c, rows, tokens, train_seconds, nparam)


def export(model, data, a, c, rows, tokens, train_seconds, nparam):
    import shutil
    os.makedirs(a.out, exist_ok=True)
    tot, cnt, mean_bos, last_bos, full = evaluate(model, data.held, a.ctx)
    bpb = bits_per_byte(model, data, a.ctx)
    ug = unigram_nll(data, a.ctx)
    save_safetensors(os.path.join(a.out, "model.safetensors"), hf_state(model), {"format": "pt"})
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
           **{k: c[k] for k in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                                "num_key_value_heads", "head_dim", "rms_norm_eps", "rope_theta",
                                "max_position_embeddings", "vocab_size")},
           "bos_token_id": BOS, "eos_token_id": EOS, "tie_word_embeddings": False, "hidden_act": "silu",
           "attention_bias": False, "mlp_bias": False, "initializer_range": 0.02, "torch_dtype": "float32"}
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    write_csv(os.path.join(a.out, "loss.csv"), rows)
    shutil.copy(os.path.join(a.work, "spm.model"), os.path.join(a.out, "tokenizer.model"))
    shutil.copy(os.path.join(a.work, "heldout.txt"), os.path.join(a.out, "heldout.txt"))
    g = windows(data.held, a.golden_len)[0]
    model.eval()
    with torch.no_grad():
        x = torch.from_numpy(g)[None]
        logits, _ = model(x)
        nll = F.cross_entropy(logits[0, :-1], x[0, 1:], reduction="none")
    save_safetensors(os.path.join(a.out, "golden.safetensors"),
                     {"tokens": g.astype(np.int32), "logits": logits[0].float().numpy(), "nll": nll.float().numpy()},
                     {"protocol": "tokens = [BOS] + first %d tokens of the held-out stream; logits[t] predicts tokens[t+1]; nll[t] = -log softmax(logits[t])[tokens[t+1]]" % (a.golden_len - 1)})
    save_safetensors(os.path.join(a.out, "heldout_tokens.safetensors"), {"tokens": data.held.astype(np.int32)},
                     {"protocol": "held-out stream: the spm_encode ids of the lines of heldout.txt, back to back; no BOS, no EOS"})
    hl = tot / cnt
    ev = {"heldout_nll": hl, "heldout_ppl": math.exp(hl), "heldout_predicted_tokens": cnt,
          "heldout_stream_tokens": int(len(data.held)), "unigram_nll": ug, "unigram_ppl": math.exp(ug),
          "unseen_bits_per_byte": bpb, "unseen_tokens": int(len(data.unseen)), "unseen_bytes": data.unseen_bytes,
          "protocol": {"stream": "the spm_encode ids of the lines of heldout.txt, back to back (no EOS, no BOS)",
                       "windows": "non-overlapping: window k = [BOS] + stream[k*(C-1):(k+1)*(C-1)] with C = %d (last window shorter)" % a.ctx,
                       "context": a.ctx, "stride": a.ctx - 1, "bos": "BOS (id 1) at position 0 of every window, never predicted",
                       "scored": "every non-BOS token of every window, predicted from its window prefix; ppl = exp(total nll / count)",
                       "unseen": "GPL-3 from its Preamble to the end of its terms, whitespace collapsed (prep.py unseen_text), windowed the same way; bits per byte = total NLL / ln 2 / UTF-8 bytes",
                       "unigram": "add-one smoothed unigram frequencies of the training stream, scored on the held-out tokens"},
          "bos_attention": {"definition": "per head, attention on position 0 (BOS) averaged over the full held-out windows: mean_over_queries averages queries t >= 1, last_query takes t = C-1",
                            "windows": full, "mean_over_queries": mean_bos.tolist(), "last_query": last_bos.tolist()},
          "train": {"tokens_seen": tokens, "seconds": round(train_seconds, 1), "threads": a.threads,
                    "final_train_loss_ema": rows[-1]["train_loss"], "params": nparam,
                    "args": {k: v for k, v in vars(a).items() if k not in ("work", "out", "ckpt_every", "export_from", "name")}}}
    with open(os.path.join(a.out, "eval.json"), "w") as f:
        json.dump(ev, f, indent=2)
        f.write("\n")
    print(json.dumps({k: ev[k] for k in ("heldout_nll", "heldout_ppl", "unigram_ppl", "unseen_bits_per_byte")}))


if __name__ == "__main__":
    main()
