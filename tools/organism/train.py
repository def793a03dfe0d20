#!/usr/bin/python3
"""Train, evaluate and export the attngeom model organism (issue 7; GPU training: issue 43).

A small LLaMA-architecture language model (RMSNorm, RoPE with the Hugging Face
rotate_half convention, SwiGLU MLP, no biases) trained with torch on packed
documents (see prep.py), on the CPU (the default) or a CUDA GPU (--device cuda).
Every training window starts with BOS at position 0.

Run prep.py first. See MODEL_CARD.md for the exact command, README.md for the GPU.
"""
import argparse, csv, json, math, os, random, re, struct, subprocess, sys, time
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

    def forward(self, x, cos, sin, mask, want_attn=False, sdpa=False):
        B, T, D = x.shape
        h = self.input_layernorm(x)
        q, k, v = self.qkv(h).view(B, T, 3, self.H, self.hd).permute(2, 0, 3, 1, 4)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if sdpa and not want_attn:  # the same causal softmax attention in one fused kernel (torch >= 2.0);
            # under autocast v is bf16 and q, k are F32 after RoPE, as they are for the explicit product
            a, y = None, F.scaled_dot_product_attention(q.to(v.dtype), k.to(v.dtype), v, is_causal=True)
        else:
            s = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(self.hd)) + mask
            a = torch.softmax(s, dim=-1)
            y = torch.matmul(a, v)
        y = y.transpose(1, 2).reshape(B, T, self.H * self.hd)
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
        self.sdpa = False  # training forward through F.scaled_dot_product_attention (probes never use it)
        std = 0.02
        for n, p in self.named_parameters():
            if p.dim() == 2:
                s = std / math.sqrt(2 * c["num_hidden_layers"]) if n.endswith(("o_proj.weight", "down_proj.weight")) else std
                nn.init.normal_(p, 0.0, s)

    def mask(self, T):
        dev = self.cos.device
        if (T, dev) not in self._masks:
            self._masks[(T, dev)] = torch.full((T, T), float("-inf"), device=dev).triu(1)
        return self._masks[(T, dev)]

    def forward(self, idx, want_attn=False):
        B, T = idx.shape
        x = self.embed_tokens(idx)
        cos, sin, m = self.cos[:T], self.sin[:T], self.mask(T)
        attns = []
        for L in self.layers:
            x, a = L(x, cos, sin, m, want_attn, self.sdpa)
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

    def batch(self, rng, B, T, device=None):
        """B windows [BOS] + T random consecutive training tokens: inputs [B, T], targets [B, T]."""
        starts = rng.integers(0, len(self.train) - T, size=B)
        x = np.empty((B, T + 1), dtype=np.int64)
        x[:, 0] = BOS
        x[:, 1:] = self.train[starts[:, None] + np.arange(T)]
        x = torch.from_numpy(x)
        if device is not None and device.type == "cuda":
            x = x.pin_memory().to(device, non_blocking=True)
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
    dev = model.cos.device
    wins = windows(stream, T)[:max_windows]
    tot, cnt, mean_sum, last_sum, full = 0.0, 0, 0, 0, 0
    for w in wins:
        x = torch.from_numpy(w)[None].to(dev)
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
    return {k: v.detach().float().cpu().contiguous().numpy() for k, v in out.items()}


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


def device_of(s):
    if not re.fullmatch(r"cpu|cuda(:\d+)?", s):
        raise argparse.ArgumentTypeError("cpu, cuda or cuda:N")
    return s


def hardware(dev, a):
    if dev.type == "cuda":
        return "%s, torch %s" % (torch.cuda.get_device_name(dev), torch.__version__)
    return "CPU, %d torch thread(s), torch %s" % (a.threads, torch.__version__)


def load_optimizer(opt, sd):
    """Load an AdamW state saved on any device, by any torch version: the moments follow the
    parameters' device (torch does that), and the implementation flags (fused, foreach, capturable)
    are this run's own, set before loading so that torch puts the step counts where they belong."""
    groups = []
    for g in sd["param_groups"]:
        g = {k: v for k, v in g.items() if k == "params" or k in opt.defaults}
        for k, v in opt.defaults.items():
            if k not in g or k in ("foreach", "fused", "capturable", "differentiable"):
                g[k] = v
        groups.append(g)
    opt.load_state_dict({"state": sd["state"], "param_groups": groups})


def check_sdpa(model, data, a, dev):
    """The fused attention kernel against the explicit softmax on two training windows (F32, at
    initialisation): True if the logits agree. Uses its own random generator, not the sampler."""
    x, _ = data.batch(np.random.default_rng(0), 2, a.ctx, dev)
    with torch.no_grad():
        model.sdpa = False
        ref, _ = model(x)
        model.sdpa = True
        got, _ = model(x)
    err = (got - ref).abs().max().item()
    ok = err <= 1e-4 + 1e-3 * ref.abs().max().item()
    print("attention: fused kernel vs explicit softmax, max |logit difference| %.2e: %s" % (
        err, "ok" if ok else "TOO LARGE, training with the explicit softmax"), flush=True)
    model.sdpa = ok
    return ok


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default=os.path.join(HERE, "work"))
    ap.add_argument("--out", default=None, help="export directory (e.g. models/organism); omit for sweep runs")
    ap.add_argument("--name", default="run", help="sweep run name: the log and checkpoints go to WORK/runs/NAME")
    ap.add_argument("--device", type=device_of, default="cpu",
                    help="cpu (the default) or cuda[:N]: where the model, the batches and the probes live; the "
                         "export always runs on the CPU")
    ap.add_argument("--attn", choices=("auto", "explicit", "sdpa"), default="auto",
                    help="training forward's attention: explicit softmax (as the probes), or "
                         "F.scaled_dot_product_attention (torch >= 2.0; checked against the explicit one at the "
                         "start); auto: sdpa on cuda where torch has it, explicit on the CPU")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=384)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--minutes", type=float, default=0,
                    help="wall-clock budget of the training loop (probes included): --steps is replaced by an "
                         "estimate taken at the end of the warmup (the schedule does not depend on --steps before "
                         "the decay), and the run stops at the budget if it overruns")
    ap.add_argument("--probes", type=int, default=0,
                    help="with --minutes: once the step count is estimated, probe about this many times in all "
                         "(sets --eval_every)")
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
                    help="continue WORK/runs/NAME from last.pt (saved on any device); before the decay starts the "
                         "learning rate does not depend on --steps, so a run extended this way equals a run started "
                         "with the new --steps")
    ap.add_argument("--export_from", default=None,
                    help="export a saved checkpoint (final.pt or last.pt, from any device) instead of training; the "
                         "shape and recipe come from the checkpoint where it records them")
    a = ap.parse_args()

    ck = None
    if a.export_from:
        ck = torch.load(a.export_from, map_location="cpu", weights_only=False)
        own = ("work", "out", "name", "threads", "export_from", "resume", "ckpt_every", "golden_len")
        for k, v in ck.get("args", {}).items():  # the run's shape and recipe (older checkpoints: the command line's)
            if k not in own:
                setattr(a, k, v)
    dev = torch.device("cpu" if a.export_from else a.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        sys.exit("train.py: --device %s: no CUDA GPU is usable here (torch %s, torch.cuda.is_available() is False)"
                 % (a.device, torch.__version__))
    sdpa = a.attn == "sdpa" or (a.attn == "auto" and dev.type == "cuda" and hasattr(F, "scaled_dot_product_attention"))
    if sdpa and not hasattr(F, "scaled_dot_product_attention") and not a.export_from:
        sys.exit("train.py: --attn sdpa: torch %s has no F.scaled_dot_product_attention (torch >= 2.0)" % torch.__version__)

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rng = np.random.default_rng(a.seed)
    data = Data(a.work)
    c = config_of(a, len(data.vocab))
    model = Llama(c)  # initialised on the CPU, so every device starts from the same weights
    nparam = sum(p.numel() for p in model.parameters())
    print("params %d, vocab %d, train tokens %d, args %s" % (nparam, len(data.vocab), len(data.train), vars(a)), flush=True)
    run_dir = os.path.join(a.work, "runs", a.name)
    if a.export_from:
        model.load_state_dict(ck["model"])
        export(model, data, a, c, ck["rows"], ck["tokens"], ck["seconds"], nparam,
               ck.get("hardware"), ck.get("step", a.steps))
        return
    model.to(dev)
    print("device %s: %s" % (dev, hardware(dev, a)), flush=True)
    if sdpa and not a.export_from:
        check_sdpa(model, data, a, dev)
    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    nodecay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.wd}, {"params": nodecay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8, **({"fused": True} if dev.type == "cuda" else {}))
    rows, ema, tokens, t0, first = [], None, 0, time.time(), 0
    if a.resume:
        ck = torch.load(os.path.join(run_dir, "last.pt"), map_location="cpu", weights_only=False)
        model.load_state_dict(ck["model"])
        load_optimizer(opt, ck["optimizer"])
        rng.bit_generator.state = ck["sampler"]
        rows, ema, tokens, first = ck["rows"], ck["ema"], ck["tokens"], ck["step"]
        t0 -= ck["seconds"]
        print("resumed at step %d" % first, flush=True)
    os.makedirs(run_dir, exist_ok=True)

    def save(path, step, full, seconds=None):
        ck = {"model": model.state_dict(), "step": step, "rows": list(rows), "tokens": tokens,
              "seconds": time.time() - t0 if seconds is None else seconds, "args": dict(vars(a)),
              "hardware": hardware(dev, a)}
        if full:
            ck.update({"optimizer": opt.state_dict(), "sampler": rng.bit_generator.state,
                       "ema": None if ema is None else float(ema)})
        torch.save(ck, path + ".tmp")
        os.replace(path + ".tmp", path)

    # --minutes: the step count is estimated at step `est` (the end of the warmup, at least 20 steps in)
    # from the speed over the second half of the steps before it and the last probe's duration
    budget = a.minutes * 60
    est = max(a.warmup, first + 20) if budget else -1
    mid = first + (est - first) // 2
    if budget:
        a.steps = 1 << 40  # not used before `est`: the schedule is warmup then constant until the decay
    t_loop, probe_s, last_probe_s, tm, planned = time.time(), 0.0, 0.0, None, None
    step = first
    while True:
        if budget and step < a.steps and time.time() - t_loop > budget:
            print("time budget of %g min reached at step %d (%s): the run stops here" % (
                a.minutes, step, "%d planned" % a.steps if a.steps < 1 << 40 else "before the step count was estimated"),
                flush=True)
            planned, a.steps = (a.steps if a.steps < 1 << 40 else None), step
        if (step % a.eval_every == 0 or step == a.steps) and not (a.resume and step == first):
            tp = time.time()
            rows.append(probe(model, data, a, step, tokens, time.time() - t0, None if ema is None else float(ema)))
            write_csv(os.path.join(run_dir, "log.csv"), rows)
            last_probe_s = time.time() - tp
            probe_s += last_probe_s
        if a.ckpt_every and step > first and step % a.ckpt_every == 0:
            save(os.path.join(run_dir, "last.pt"), step, True)
        if step == a.steps:
            break
        if step == mid and budget:
            sync(dev)
            tm = (time.time(), probe_s)
        if step == est:
            sync(dev)
            per_step = (time.time() - tm[0] - (probe_s - tm[1])) / (est - mid)
            left = budget - (time.time() - t_loop) - last_probe_s
            if a.probes:
                more = (left - a.probes * last_probe_s) / per_step
            else:
                more = left / (per_step + last_probe_s / a.eval_every)
            a.steps = est + max(1, int(0.97 * more))
            if a.probes:  # and the last step on the probes' grid
                a.eval_every = max(1, a.steps // a.probes)
                a.steps = max(est + 1, a.steps // a.eval_every * a.eval_every)
            print("--minutes %g: %.1f ms a step, %.2f s a probe: %d steps (eval_every %d)%s" % (
                a.minutes, 1e3 * per_step, last_probe_s, a.steps, a.eval_every,
                "" if est < int(a.steps * (1 - a.decay_frac)) else "; WARNING: the decay phase starts before this "
                "estimate, so the steps before it ran at the constant learning rate"), flush=True)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, a)
        x, y = data.batch(rng, a.batch, a.ctx, dev)
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=bool(a.bf16)):
            logits, _ = model(x)
        loss = F.cross_entropy(logits.float().reshape(-1, c["vocab_size"]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
        opt.step()
        tokens += x.numel()
        if dev.type == "cuda":  # no host sync each step: the average stays on the GPU until a probe reads it
            l = loss.detach().double()
            ema = l if ema is None else 0.98 * ema + 0.02 * l
        else:
            ema = loss.item() if ema is None else 0.98 * ema + 0.02 * loss.item()
        step += 1
    sync(dev)
    train_seconds = time.time() - t0
    print("trained %d tokens in %.0fs (%.0f tok/s)" % (tokens, train_seconds, tokens / train_seconds), flush=True)
    if planned:
        a.steps = planned  # the records keep the schedule that ran; final.pt's step says where it stopped
    save(os.path.join(run_dir, "final.pt"), step, False, train_seconds)
    if a.out:
        export(model, data, a, c, rows, tokens, train_seconds, nparam, hardware(dev, a), step)


def export(model, data, a, c, rows, tokens, train_seconds, nparam, hw=None, stopped_at=None):
    """Everything on the CPU in F32 with the explicit attention, whichever device trained the model."""
    import shutil
    os.makedirs(a.out, exist_ok=True)
    model.to("cpu")
    model.sdpa = False
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
    if hw:
        ev["train"]["hardware"] = hw
    if stopped_at is not None and stopped_at < a.steps:
        ev["train"]["stopped_at_step"] = stopped_at  # --minutes ran out before the planned steps
    with open(os.path.join(a.out, "eval.json"), "w") as f:
        json.dump(ev, f, indent=2)
        f.write("\n")
    print(json.dumps({k: ev[k] for k in ("heldout_nll", "heldout_ppl", "unigram_ppl", "unseen_bits_per_byte")}))


if __name__ == "__main__":
    main()
