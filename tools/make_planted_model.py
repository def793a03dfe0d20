#!/usr/bin/python3
"""The planted model: a LLaMA checkpoint whose head types are known by construction.

  make_planted_model.py [--tokenizer models/organism/tokenizer.model] [--out models/planted]

No training and no random draws: every weight is a closed-form number (the formulas are in
models/planted/MODEL_CARD.md). Writes config.json, model.safetensors (F32), a copy of the
sentencepiece tokenizer and planted_types.csv (layer, head, planted type, construction
parameters). Byte-identical on every run; numpy only.

Residual stream (hidden 128, the same in every layer: o_proj and the MLP are zero):
  dim 0      BOS flag: sqrt(128) in BOS's embedding, 0 in every other token's
  dim 1      constant 8 in every token but BOS
  dims 2-127 token identity: +-8/sqrt(126), signs from a fixed integer hash of the token id
Every row has mean square 1, so RMSNorm (weights 1) leaves it as it is (up to 1/sqrt(1+eps)).
"""
import argparse
import csv
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checkpoint_files import Tensor, spm_vocab_size, write_checkpoint  # noqa: E402
from hf_layouts import hf_config, tensor_shapes  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HIDDEN, LAYERS, HEADS, HEAD_DIM, INTERMEDIATE = 128, 4, 4, 32, 32
ROPE_THETA, RMS_EPS, BOS_ID, EOS_ID = 10000.0, 1e-5, 1, 2
BOS_DIM, CONST_DIM, ID_FIRST = 0, 1, 2
ID_DIMS = HIDDEN - ID_FIRST                  # 126 token-identity dims
CONST = 8.0                                  # the constant component of content tokens
BOS_FLAG = math.sqrt(HIDDEN)                 # BOS's only component
ID_ENTRY = CONST / math.sqrt(ID_DIMS)        # |identity entry|: content rows have norm sqrt(128)
SLOW_DIM = HEAD_DIM // 2 - 1                 # first coordinate of the slowest RoPE pair
PREV_PAIRS = 5                               # fast RoPE pairs that carry the previous-token kernel
VALUE_ID_DIMS = HEAD_DIM - 2                 # value dims 2..31 read the token identity
ROOT_D = math.sqrt(HEAD_DIM)                 # the 1/sqrt(head_dim) of the attention scores

# Planted heads, layer-major. sink/self/prev: the logit each mechanism gives its key (sink:
# BOS; self: the query's own token; prev: the key one position back). nu0, mu: the norms of
# the sink's value and of the content values' common part (their token part has norm NU_ID).
# Types are the labels attngeom's taxonomy gives (controls: unclassified).
PLANTED = [
    # layer 0
    dict(type="retriever", mechanism="self", self=14.0, nu0=0.5, mu=0.0),
    dict(type="reset", mechanism="sink", sink=12.0, nu0=1.0, mu=0.0),
    dict(type="mixer", mechanism="sink", sink=3.9, nu0=1.0, mu=4.0),
    dict(type="unclassified", mechanism="uniform", nu0=0.2, mu=0.0),
    # layer 1
    dict(type="reset", mechanism="sink", sink=8.0, nu0=1.0, mu=0.0),
    dict(type="retriever", mechanism="self", self=10.0, nu0=0.5, mu=0.0),
    dict(type="unclassified", mechanism="prev", prev=16.0, nu0=1.0, mu=0.0),
    dict(type="mixer", mechanism="sink", sink=3.6, nu0=1.0, mu=4.0),
    # layer 2
    dict(type="mixer", mechanism="sink", sink=3.4, nu0=1.0, mu=4.0),
    dict(type="unclassified", mechanism="uniform", nu0=0.2, mu=0.0),
    dict(type="retriever", mechanism="self", self=12.0, nu0=0.5, mu=0.0),
    dict(type="reset", mechanism="sink", sink=10.0, nu0=1.0, mu=0.0),
    # layer 3
    dict(type="unclassified", mechanism="prev", prev=16.0, nu0=1.0, mu=0.0),
    dict(type="mixer", mechanism="sink", sink=4.2, nu0=1.0, mu=4.0),
    dict(type="reset", mechanism="sink", sink=14.0, nu0=1.0, mu=0.0),
    dict(type="retriever", mechanism="self", self=16.0, nu0=0.5, mu=0.0),
]
NU_ID = 1.0  # norm of every content value's token part
T_MIN, T_MAX = 64, 1024  # the sequence lengths the planted types are stated for


def identity_signs(vocab):
    """[vocab, 126] of +-1: entry (t, i) is bit 63 of splitmix64(126 t + i), integers only."""
    z = (np.arange(vocab, dtype=np.uint64)[:, None] * np.uint64(ID_DIMS)
         + np.arange(ID_DIMS, dtype=np.uint64)[None, :] + np.uint64(0x9E3779B97F4A7C15))
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return np.where((z >> np.uint64(63)) == 1, 1.0, -1.0)


def embedding(vocab):
    """[vocab, 128]: BOS = sqrt(128) e_0; any other token = 8 e_1 + its identity signs."""
    e = np.zeros((vocab, HIDDEN))
    e[:, CONST_DIM] = CONST
    e[:, ID_FIRST:] = ID_ENTRY * identity_signs(vocab)
    e[BOS_ID] = 0.0
    e[BOS_ID, BOS_DIM] = BOS_FLAG
    return e


def id_dim(head_index, i, offset):
    """The identity dim that row i of head `head_index` reads (offsets spread the heads)."""
    return ID_FIRST + (37 * head_index + offset + i) % ID_DIMS


def head_weights(index, spec):
    """q, k, v rows of one head: three [32, 128] arrays."""
    q, k, v = (np.zeros((HEAD_DIM, HIDDEN)) for _ in range(3))
    m = spec["mechanism"]
    if m == "sink":
        # q . k(BOS) = 8 * sqrt(128) * sink / 16 = sink * sqrt(32), on the slowest pair.
        q[SLOW_DIM, CONST_DIM] = 1.0
        k[SLOW_DIM, BOS_DIM] = spec["sink"] / 16.0
    elif m == "self":
        # Token code c_t (32 identity entries): q . k = c_a . c_b * gain; c_t . c_t = 32 * 64 / 126.
        gain = spec["self"] * ROOT_D / (HEAD_DIM * ID_ENTRY * ID_ENTRY)
        for i in range(HEAD_DIM):
            q[i, id_dim(index, i, 0)] = 1.0
            k[i, id_dim(index, i, 0)] = gain
    elif m == "prev":
        # Pair p: q = r (cos t_p, -sin t_p), k = (r, 0), so q(i) . k(j) = 64 r^2 cos((i - j - 1) t_p).
        r = math.sqrt(spec["prev"] * ROOT_D / (PREV_PAIRS * CONST * CONST))
        for p in range(PREV_PAIRS):
            t = ROPE_THETA ** (-2.0 * p / HEAD_DIM)
            q[p, CONST_DIM] = r * math.cos(t)
            q[p + HEAD_DIM // 2, CONST_DIM] = -r * math.sin(t)
            k[p, CONST_DIM] = r
    elif m != "uniform":
        raise ValueError(m)
    v[0, BOS_DIM] = spec["nu0"] / BOS_FLAG              # v(BOS) = nu0 e_0
    v[1, CONST_DIM] = spec["mu"] / CONST                # content: mu e_1 + token part
    token_scale = NU_ID / (ID_ENTRY * math.sqrt(VALUE_ID_DIMS))
    for i in range(VALUE_ID_DIMS):
        v[2 + i, id_dim(index, i, 64)] = token_scale
    return q, k, v


def weights(config):
    """{name: float32 array} in Hugging Face layout ([out, in] projections)."""
    w = {}
    for name, shape in tensor_shapes(config):
        w[name] = np.ones(shape) if name.endswith("norm.weight") else np.zeros(shape)
    w["model.embed_tokens.weight"] = embedding(config["vocab_size"])
    for layer in range(LAYERS):
        p = f"model.layers.{layer}.self_attn."
        for h in range(HEADS):
            rows = slice(h * HEAD_DIM, (h + 1) * HEAD_DIM)
            index = layer * HEADS + h
            w[p + "q_proj.weight"][rows], w[p + "k_proj.weight"][rows], w[p + "v_proj.weight"][rows] = \
                head_weights(index, PLANTED[index])
    return {name: a.astype(np.float32) for name, a in w.items()}


def mass_ranges(spec):
    """(sink_lo, sink_hi, last_lo, last_hi): alpha_0 and alpha_L of the last query row of any
    T-token text, T_MIN <= T <= T_MAX (BOS only at position 0). Exact for the sink, prev and
    uniform heads; for self heads the mean-field value over random token codes, its error doubled."""
    T = np.arange(T_MIN, T_MAX + 1, dtype=np.float64)
    norm = 1.0 / (1.0 + RMS_EPS)  # RMSNorm's 1/sqrt(1 + eps) on the query and on the key
    m = spec["mechanism"]
    if m == "sink":
        logit = spec["sink"] * norm * np.cos((T - 1) * ROPE_THETA ** (-2.0 * SLOW_DIM / HEAD_DIM))
        z = np.exp(logit) + T - 1
        sink, last = np.exp(logit) / z, 1.0 / z
    elif m == "prev":
        theta = ROPE_THETA ** (-2.0 * np.arange(PREV_PAIRS) / HEAD_DIM)
        lag = np.arange(T_MAX - 1, dtype=np.float64)  # L - j over the content keys
        kernel = spec["prev"] * norm * np.cos(np.outer(lag - 1.0, theta)).mean(axis=1)
        z = 1.0 + np.cumsum(np.exp(kernel))[T.astype(int) - 2]
        sink, last = 1.0 / z, np.exp(kernel[0]) / z
    elif m == "uniform":
        sink = last = 1.0 / T
    else:
        g = spec["self"]
        mean_field = np.exp(g) / (np.exp(g) + (T - 2) * np.exp(g * g / (2 * HEAD_DIM)))
        return 0.0, math.exp(-g), 1.0 - 2.0 * (1.0 - mean_field.min()), 1.0
    return sink.min(), sink.max(), last.min(), last.max()


def write_types(path):
    """planted_types.csv: the type, the construction and the mass ranges of every head."""
    cols = ["layer", "head", "type", "mechanism", "sink_logit", "self_logit", "prev_logit",
            "sink_value_norm", "common_value_norm", "token_value_norm",
            "sink_mass_min", "sink_mass_max", "last_mass_min", "last_mass_max"]
    with open(path, "w", newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(cols)
        for index, s in enumerate(PLANTED):
            lo_s, hi_s, lo_l, hi_l = mass_ranges(s)
            # Rounded outwards, with a relative 1% for the engine's float arithmetic.
            bounds = [math.floor(lo_s * 0.99 * 1e6) / 1e6, math.ceil(hi_s * 1.01 * 1e6) / 1e6,
                      math.floor(lo_l * 0.99 * 1e6) / 1e6, math.ceil(hi_l * 1.01 * 1e6) / 1e6]
            out.writerow([index // HEADS, index % HEADS, s["type"], s["mechanism"], s.get("sink", 0.0),
                          s.get("self", 0.0), s.get("prev", 0.0), s["nu0"], s["mu"], NU_ID]
                         + [f"{min(b, 1.0):.6f}" for b in bounds])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokenizer", default=os.path.join(REPO, "models", "organism", "tokenizer.model"))
    ap.add_argument("--out", default=os.path.join(REPO, "models", "planted"))
    args = ap.parse_args(argv)
    vocab = spm_vocab_size(args.tokenizer)
    config = hf_config("llama", HIDDEN, INTERMEDIATE, LAYERS, HEADS, HEADS, HEAD_DIM, vocab, "F32",
                       rope_theta=ROPE_THETA, rms_norm_eps=RMS_EPS, max_positions=2048,
                       tie_word_embeddings=True, bos_token_id=BOS_ID, eos_token_id=EOS_ID)
    w = weights(config)
    tensors = [Tensor.from_array(name, "F32", w[name]) for name, _ in tensor_shapes(config)]
    write_checkpoint(args.out, config, tensors, args.tokenizer)
    write_types(os.path.join(args.out, "planted_types.csv"))
    print(f"wrote {args.out}: {LAYERS} layers x {HEADS} heads, vocab {vocab}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
