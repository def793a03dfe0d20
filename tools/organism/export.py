"""The organism's export, always on the CPU in F32: a Hugging Face LLaMA checkpoint
(config.json, model.safetensors, tokenizer.model) with its golden logits, held-out tokens,
training log and evaluation (eval.json)."""
import csv
import json
import math
import os
import shutil
import struct

import numpy as np
import torch
import torch.nn.functional as F

from data import BOS, EOS, bits_per_byte, evaluate, unigram_nll, windows


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



def write_csv(path, rows):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[-1].keys()))
        w.writeheader()
        w.writerows(rows)


def export(model, data, a, c, rows, tokens, train_seconds, nparam, hw=None, stopped_at=None):
    """Everything on the CPU in F32 with the explicit attention, whichever device trained the model."""
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


