#!/usr/bin/python3
"""Independent check of an exported organism: a plain-numpy LLaMA forward pass built only from
config.json + model.safetensors (HF names) must reproduce golden.safetensors, and spm_encode of
heldout.txt (the lines' ids back to back) must reproduce heldout_tokens.safetensors.
Usage: verify.py MODEL_DIR"""
import json, os, struct, subprocess, sys
import numpy as np

def load_st(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    out = {}
    for k, v in h.items():
        if k == "__metadata__":
            continue
        dt = {"F32": np.float32, "I32": np.int32}[v["dtype"]]
        s, e = v["data_offsets"]
        out[k] = np.frombuffer(b[8 + n + s:8 + n + e], dtype=dt).reshape(v["shape"])
    return out

d = sys.argv[1]
c = json.load(open(os.path.join(d, "config.json")))
W = load_st(os.path.join(d, "model.safetensors"))
g = load_st(os.path.join(d, "golden.safetensors"))
H, hd, eps = c["num_attention_heads"], c["head_dim"], c["rms_norm_eps"]
toks = g["tokens"].astype(np.int64)
T = len(toks)
def rms(x, w): return (x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + eps)) * w
inv = 1.0 / (c["rope_theta"] ** (np.arange(0, hd, 2) / hd))
f = np.outer(np.arange(T), inv); emb = np.concatenate([f, f], -1); cos, sin = np.cos(emb), np.sin(emb)
def rot(x): return np.concatenate([-x[..., hd // 2:], x[..., :hd // 2]], -1)
x = W["model.embed_tokens.weight"][toks].astype(np.float64)
mask = np.triu(np.full((T, T), -np.inf), 1)
for i in range(c["num_hidden_layers"]):
    p = "model.layers.%d." % i
    h = rms(x, W[p + "input_layernorm.weight"])
    q = (h @ W[p + "self_attn.q_proj.weight"].T).reshape(T, H, hd).transpose(1, 0, 2)
    k = (h @ W[p + "self_attn.k_proj.weight"].T).reshape(T, H, hd).transpose(1, 0, 2)
    v = (h @ W[p + "self_attn.v_proj.weight"].T).reshape(T, H, hd).transpose(1, 0, 2)
    q = q * cos + rot(q) * sin; k = k * cos + rot(k) * sin
    s = q @ k.transpose(0, 2, 1) / np.sqrt(hd) + mask
    a = np.exp(s - s.max(-1, keepdims=True)); a /= a.sum(-1, keepdims=True)
    x = x + (a @ v).transpose(1, 0, 2).reshape(T, H * hd) @ W[p + "self_attn.o_proj.weight"].T
    h = rms(x, W[p + "post_attention_layernorm.weight"])
    gg = h @ W[p + "mlp.gate_proj.weight"].T; u = h @ W[p + "mlp.up_proj.weight"].T
    x = x + (gg / (1 + np.exp(-gg)) * u) @ W[p + "mlp.down_proj.weight"].T
lw = W["model.embed_tokens.weight"] if c["tie_word_embeddings"] else W["lm_head.weight"]
logits = rms(x, W["model.norm.weight"]) @ lw.T
rel = np.abs(logits - g["logits"]).max() / np.abs(g["logits"]).max()
ls = logits - logits.max(-1, keepdims=True); ls = ls - np.log(np.exp(ls).sum(-1, keepdims=True))
nll = -ls[np.arange(T - 1), toks[1:]]
print("golden logits max rel diff (vs max |logit|): %.2e; nll max abs diff %.2e" % (rel, np.abs(nll - g["nll"]).max()))
ids = subprocess.run(["spm_encode", "--model=" + os.path.join(d, "tokenizer.model"), "--output_format=id",
                      "--input=" + os.path.join(d, "heldout.txt")], capture_output=True, text=True, check=True).stdout
stream = []
for line in ids.rstrip("\n").split("\n"):
    stream += [int(t) for t in line.split()]
ht = load_st(os.path.join(d, "heldout_tokens.safetensors"))["tokens"]
print("heldout stream tokens: %d, matches spm_encode: %s" % (len(ht), np.array_equal(np.array(stream), ht)))
assert rel < 1e-4 and np.array_equal(np.array(stream), ht)
print("OK")
