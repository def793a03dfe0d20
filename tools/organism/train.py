#!/usr/bin/python3
"""Train, evaluate and export the attngeom model organism (issue 7; GPU training: issue 43).

A small LLaMA-architecture language model (RMSNorm, RoPE with the Hugging Face
rotate_half convention, SwiGLU MLP, no biases) trained with torch on packed
documents (see prep.py), on the CPU (the default) or a CUDA GPU (--device cuda).
Every training window starts with BOS at position 0.

Run prep.py first. See MODEL_CARD.md for the exact command, README.md for the GPU. The network
is in model.py, the data and evaluation in data.py, the export in export.py.
"""
import argparse, os, re, sys, time
import numpy as np
import torch
import torch.nn.functional as F

from data import Data, bits_per_byte, evaluate
from export import export, write_csv
from model import Llama

HERE = os.path.dirname(os.path.abspath(__file__))


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



if __name__ == "__main__":
    main()
