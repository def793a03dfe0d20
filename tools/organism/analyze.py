#!/usr/bin/python3
"""Where does the last query's attention go? Loads an exported organism (HF safetensors) into the
training model class and reports, per layer/head, averaged over the full held-out windows, the last
query's attention mass on BOS (position 0), on the current and previous token, and on the rest.
Usage: analyze.py MODEL_DIR [CTX]"""
import json, os, struct, sys
import numpy as np, torch
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data import windows
from model import Llama


def load_st(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    return {k: np.frombuffer(b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]],
                             dtype={"F32": np.float32, "I32": np.int32}[v["dtype"]]).reshape(v["shape"])
            for k, v in h.items() if k != "__metadata__"}


d = sys.argv[1]
c = json.load(open(os.path.join(d, "config.json")))
W = {k: torch.from_numpy(v.copy()) for k, v in load_st(os.path.join(d, "model.safetensors")).items()}
held = load_st(os.path.join(d, "heldout_tokens.safetensors"))["tokens"].astype(np.int64)
T = int(sys.argv[2]) if len(sys.argv) > 2 else c["max_position_embeddings"]
m = Llama(c)
with torch.no_grad():
    m.embed_tokens.weight.copy_(W["model.embed_tokens.weight"])
    m.norm.weight.copy_(W["model.norm.weight"]); m.lm_head.weight.copy_(W["lm_head.weight"])
    for i, L in enumerate(m.layers):
        p = "model.layers.%d." % i
        L.input_layernorm.weight.copy_(W[p + "input_layernorm.weight"])
        L.post_attention_layernorm.weight.copy_(W[p + "post_attention_layernorm.weight"])
        L.qkv.weight.copy_(torch.cat([W[p + "self_attn.%s_proj.weight" % s] for s in "qkv"]))
        L.o_proj.weight.copy_(W[p + "self_attn.o_proj.weight"])
        L.gate_up.weight.copy_(torch.cat([W[p + "mlp.gate_proj.weight"], W[p + "mlp.up_proj.weight"]]))
        L.down_proj.weight.copy_(W[p + "mlp.down_proj.weight"])
m.eval()
wins = [w for w in windows(held, T) if len(w) == T]
acc = {k: 0 for k in ("bos", "self", "prev", "rest")}
with torch.no_grad():
    for w in wins:
        _, att = m(torch.from_numpy(w)[None], want_attn=True)
        A = torch.stack([a[0, :, -1, :] for a in att]).numpy()  # [L, H, T]
        acc["bos"] = acc["bos"] + A[:, :, 0]
        acc["self"] = acc["self"] + A[:, :, T - 1]
        acc["prev"] = acc["prev"] + A[:, :, T - 2]
        acc["rest"] = acc["rest"] + A[:, :, 1:T - 2].sum(-1)
print("%d full windows of %d tokens; last query's attention mass (mean over windows)" % (len(wins), T))
for k in acc:
    v = acc[k] / len(wins)
    print("%-5s " % k + " | ".join("L%d: %s (mean %.3f)" % (i, " ".join("%.2f" % x for x in r), r.mean()) for i, r in enumerate(v)))

# head roles: previous-token score (mean attention to t-1 over all queries of the held-out windows),
# BOS mass over all queries, and induction score on BOS + R + R with R = 100 random word tokens
# (mean attention of second-copy queries to the token after the query's earlier occurrence)
prev = 0; bos_all = 0
with torch.no_grad():
    for w in wins:
        _, att = m(torch.from_numpy(w)[None], want_attn=True)
        A = torch.stack([a[0] for a in att])  # [L, H, T, T]
        prev = prev + A.diagonal(offset=-1, dim1=-2, dim2=-1).mean(-1).numpy()
        bos_all = bos_all + A[:, :, 1:, 0].mean(-1).numpy()
    prev /= len(wins); bos_all /= len(wins)
    g = torch.Generator().manual_seed(0)
    ind = 0
    for r in range(8):
        R = torch.randint(100, c["vocab_size"], (100,), generator=g)
        seq = torch.cat([torch.tensor([1]), R, R])[None]
        _, att = m(seq, want_attn=True)
        A = torch.stack([a[0] for a in att])  # [L, H, 201, 201]
        q = torch.arange(101, 201)
        ind = ind + A[:, :, q, q - 99].mean(-1).numpy()
    ind /= 8
for name, v in (("prev-token score (all queries)", prev), ("BOS mass (all queries)", bos_all),
                ("induction score (random repeated tokens)", ind)):
    print(name)
    for i, r in enumerate(v):
        print("  L%d: %s" % (i, " ".join("%.2f" % x for x in r)))
