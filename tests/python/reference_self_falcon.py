"""The reference's self-checks of Falcon (test_reference_self.py): the falcon (Falcon-7B's multi_query
layout), falcon-40b (new_decoder_architecture's kv groups, ln_attn / ln_mlp) and falcon-sequential
fixtures against a second forward written token by token, which finds each head's rows of the fused
query_key_value by index arithmetic from the config alone; then each quirk bites (a reader of another
split, norm or residual gets other attention and logits), and the layouts the engine refuses are
refused here too. The loop forward reads Falcon-RW's ALiBi and biases too (falcon-rw: reference_self_alibi.py)."""
import json
import math
import os

import numpy as np

import reference_forward as rf
from reference_model import Model
from reference_self_gpt import scalar_layer_norm
from reference_self_lib import check, checked_fixture, loop_buffers, read_variants, scalar_rope


def falcon_blocks(cfg):
    """Where FalconAttention._split_heads finds each head in query_key_value (blocks of head_dim rows),
    from the config: {"q": block of query head h, "k" / "v": block of kv head g, "kv_of": query head h's
    kv head}. New architecture: per kv group its H / Hkv query heads, its k, its v; multi_query: all
    query heads, one k, one v; neither: per head q, k, v."""
    H = cfg["num_attention_heads"]
    if cfg.get("new_decoder_architecture"):
        kv = cfg.get("num_kv_heads") or H
        g = H // kv
        return dict(q=[(h // g) * (g + 2) + h % g for h in range(H)], k=[j * (g + 2) + g for j in range(kv)],
                    v=[j * (g + 2) + g + 1 for j in range(kv)], kv_of=[h // g for h in range(H)])
    if cfg.get("multi_query", True):
        return dict(q=list(range(H)), k=[H], v=[H + 1], kv_of=[0] * H)
    return dict(q=[3 * h for h in range(H)], k=[3 * h + 1 for h in range(H)], v=[3 * h + 2 for h in range(H)],
                kv_of=list(range(H)))


def falcon_norms(cfg):
    """(attention's norm, MLP's norm, parallel) of FalconDecoderLayer, from the config."""
    if cfg.get("new_decoder_architecture"):
        two = (cfg.get("num_ln_in_parallel_attn") or 2) == 2
        return ("ln_attn", "ln_mlp", True) if two else ("input_layernorm", "input_layernorm", True)
    if cfg.get("parallel_attn", True):
        return "input_layernorm", "input_layernorm", True
    return "input_layernorm", "post_attention_layernorm", False


def bf16(x):
    """x rounded to 8 significant bits, ties to even (bfloat16, for normal numbers), by frexp and round."""
    mant, exp = math.frexp(x)
    return math.ldexp(round(mant * 256), exp - 8)


def forward_incremental_falcon(m, tokens, slopes=None):
    """Falcon token by token with a KV cache, scalar loops: each head's q, k, v from its own rows of
    query_key_value (falcon_blocks), the pairs (i, i + D/2) turned by pos * theta^(-2i / D) over the
    whole head, scores / sqrt(D), a query head reading its group's k and v; exact gelu; the layer's
    norms and residual by falcon_norms; the head tied to word_embeddings unless lm_head.weight is
    configured. With alibi no turning, the score of key j (q . k + bf16(bf16(slope) bf16(j))) / sqrt(D) for
    `slopes` (float64); with bias each projection's bias rows beside its weight rows."""
    cfg = m.cfg
    blocks, (attn_norm, mlp_norm, parallel) = falcon_blocks(cfg), falcon_norms(cfg)
    T, H, D, L, Hkv = len(tokens), cfg["num_attention_heads"], m.head_dim, m.layers, len(blocks["k"])
    theta, eps = cfg.get("rope_theta", 10000.0), cfg.get("layer_norm_epsilon", 1e-5)
    cache_k, cache_v, attn, logits = loop_buffers(L, H, Hkv, T, m.vocab)
    gelu = lambda vec: np.array([0.5 * u * (1.0 + math.erf(u / math.sqrt(2.0))) for u in vec])
    E = lambda n: m.weight("transformer." + n)
    alibi = [[bf16(bf16(s) * bf16(j)) for j in range(T)] for s in slopes] if cfg.get("alibi") else None

    def rotate(vec, pos):
        return scalar_rope(vec, pos, theta)

    for t, tok in enumerate(tokens):
        x = E("word_embeddings.weight")[tok]
        for layer in range(L):
            W = lambda n: E(f"h.{layer}.{n}")
            B = lambda n: W(n + ".bias") if cfg.get("bias") else 0.0
            norm = lambda vec, name: scalar_layer_norm(vec, W(name + ".weight"), W(name + ".bias"), eps)
            fused, fused_b = W("self_attention.query_key_value.weight"), B("self_attention.query_key_value")
            rows = lambda block, vec: fused[block * D:(block + 1) * D] @ vec + \
                (fused_b[block * D:(block + 1) * D] if cfg.get("bias") else 0.0)
            turn = (lambda vec, pos: vec) if alibi else rotate
            h = norm(x, attn_norm)
            for g in range(Hkv):
                cache_k[layer][g].append(turn(rows(blocks["k"][g], h), t))
                cache_v[layer][g].append(rows(blocks["v"][g], h))
            ctx = np.zeros(H * D)
            for head in range(H):
                g, qh = blocks["kv_of"][head], turn(rows(blocks["q"][head], h), t)
                scores = [(float(np.dot(qh, kj)) + (alibi[head][j] if alibi else 0.0)) / math.sqrt(D)
                          for j, kj in enumerate(cache_k[layer][g])]
                e = [math.exp(sc - max(scores)) for sc in scores]
                for j, ej in enumerate(e):
                    attn[layer, head, t, j] = ej / sum(e)
                    ctx[head * D:(head + 1) * D] += (ej / sum(e)) * cache_v[layer][g][j]
            a = W("self_attention.dense.weight") @ ctx + B("self_attention.dense")
            mlp = lambda vec: W("mlp.dense_4h_to_h.weight") @ gelu(W("mlp.dense_h_to_4h.weight") @ vec +
                                                                    B("mlp.dense_h_to_4h")) + B("mlp.dense_4h_to_h")
            if parallel:
                x = x + (mlp(h if mlp_norm == attn_norm else norm(x, mlp_norm)) + a)
            else:
                x = x + a
                x = x + mlp(norm(x, mlp_norm))
        head = E("word_embeddings.weight") if cfg.get("tie_word_embeddings", True) else m.weight("lm_head.weight")
        logits[t] = head @ scalar_layer_norm(x, E("ln_f.weight"), E("ln_f.bias"), eps)
    values = [np.array([[cache_v[l][g][t] for t in range(T)] for g in range(Hkv)]) for l in range(L)]
    return attn, values, logits


def read_as(d, wrong):
    """A copy of fixture d's model whose query_key_value rows are moved so that the reference, reading
    them its own way, sees what a reader of the `wrong` blocks would see in the stored rows."""
    other = Model(d)
    right, D = falcon_blocks(other.cfg), other.head_dim
    for key in [k for k in other.w if k.endswith("query_key_value.weight")]:
        w, moved = other.w[key], other.w[key].copy()
        for role in "qkv":
            for to, source in zip(right[role], wrong[role]):
                moved[to * D:(to + 1) * D] = w[source * D:(source + 1) * D]
        other.w[key] = moved
    return other


def paired_as(d, kv_of):
    """A copy of fixture d's model with its query heads reordered (their q rows and dense's columns
    alike), so that the reference, pairing the head at position p with group p // (H / Hkv), pairs
    stored head h with kv head kv_of[h]; returns it and each stored head's new position."""
    other = Model(d)
    right, D, H = falcon_blocks(other.cfg), other.head_dim, other.heads
    order = sorted(range(H), key=lambda h: (kv_of[h], h))  # position p holds stored head order[p]
    for layer in range(other.layers):
        p = f"transformer.h.{layer}.self_attention."
        w, dense = other.w[p + "query_key_value.weight"], other.w[p + "dense.weight"]
        moved, cols = w.copy(), dense.copy()
        for pos, head in enumerate(order):
            to, source = right["q"][pos], right["q"][head]
            moved[to * D:(to + 1) * D] = w[source * D:(source + 1) * D]
            cols[:, pos * D:(pos + 1) * D] = dense[:, head * D:(head + 1) * D]
        other.w[p + "query_key_value.weight"], other.w[p + "dense.weight"] = moved, cols
    return other, [order.index(h) for h in range(H)]


def check_bites(name, ref, cases):
    """Each of `cases` {what: (forward, first layer it changes, its position of each head or None)} changes
    attention by > 0.1 on every layer from its first on, and the logits by > 0.1 of their largest."""
    for what, (alt, first, heads) in cases.items():
        pick = (lambda a: a) if heads is None else (lambda a: a[heads])
        da = min(float(np.abs(pick(a) - b).max()) for a, b in list(zip(alt["attn"], ref["attn"]))[first:])
        dl = float(np.abs(alt["logits"] - ref["logits"]).max() / np.abs(ref["logits"]).max())
        check(da > 0.1 and dl > 0.1, f"{name}: {what}: attention changes by >= {da:.2f} on layers {first}.., "
                                     f"the logits by {dl:.2f} of their max")


def falcon_checks(fixture_dir, n_loop):
    """Every Falcon fixture against its loop forward, useful, its quirks biting; then the refusals."""
    seven_b(fixture_dir, n_loop)
    forty_b(fixture_dir, n_loop)
    sequential(fixture_dir, n_loop)
    falcon_refusals(os.path.join(fixture_dir, "falcon"))


def common(fixture_dir, name, n_loop):
    """(dir, model, tokens, reference forward) of a Falcon fixture, its loop forward and usefulness checked."""
    return checked_fixture(fixture_dir, name, n_loop, forward_incremental_falcon)


def layer_norms(m):
    """The LayerNorms of layer 0."""
    return sorted({k.split(".")[3] for k in m.w if k.startswith("transformer.h.0.")} - {"self_attention", "mlp"})


def seven_b(fixture_dir, n_loop):
    """falcon: one kv head (multi_query), [q heads | k | v] rows, one input_layernorm in parallel, tied."""
    d, m, tokens, ref = common(fixture_dir, "falcon", n_loop)
    H, D, rows = m.heads, m.head_dim, m.weight("transformer.h.0.self_attention.query_key_value.weight").shape[0]
    check(m.cfg["multi_query"] and not m.cfg["new_decoder_architecture"] and "num_kv_heads" not in m.cfg
          and m.kv_heads == 1 and ref["values"][0].shape[0] == 1 and rows == (H + 2) * D != 3 * H * D,
          f"falcon: multi_query: one kv head, query_key_value {rows} rows = (H + 2) D (per head q, k, v: {3 * H * D})")
    up = m.weight("transformer.h.0.mlp.dense_h_to_4h.weight").shape[0]
    check("ffn_hidden_size" not in m.cfg and up == m.ffn == 4 * m.hidden and m.tied and not m.has("lm_head.weight")
          and layer_norms(m) == ["input_layernorm"],
          f"falcon: dense_h_to_4h {up} rows (4 x hidden, ffn_hidden_size not written), tied (no lm_head.weight), "
          f"layer norms {layer_norms(m)}")
    blocks = falcon_blocks(m.cfg)
    sequential_model = Model(d)
    sequential_model.parallel = False
    kv_first = dict(blocks, q=[h + 2 for h in range(H)], k=[0], v=[1])
    check_bites("falcon", ref, {
        "k and v read swapped": (rf.forward(read_as(d, dict(blocks, k=blocks["v"], v=blocks["k"])), tokens), 0, None),
        "rows read as [k | v | q heads]": (rf.forward(read_as(d, kv_first), tokens), 0, None),
        "sequential (MLP on x + attn)": (rf.forward(sequential_model, tokens), 1, None)})


def forty_b(fixture_dir, n_loop):
    """falcon-40b: kv groups, multi_query written but ignored, ln_attn / ln_mlp, ffn_hidden_size, untied."""
    d, m, tokens, ref = common(fixture_dir, "falcon-40b", n_loop)
    H, D, kv = m.heads, m.head_dim, m.kv_heads
    rows = m.weight("transformer.h.0.self_attention.query_key_value.weight").shape[0]
    files = [f for f in os.listdir(d) if f.endswith(".safetensors")]
    check(m.cfg["new_decoder_architecture"] and m.cfg["multi_query"] and "num_ln_in_parallel_attn" not in m.cfg
          and kv == m.cfg["num_kv_heads"] == 2 and rows == (H + 2 * kv) * D != (H + 2) * D
          and ref["values"][0].shape[0] == kv and len(files) >= 2,
          f"falcon-40b: new_decoder_architecture: {kv} kv groups of {H // kv} query heads whatever multi_query says, "
          f"query_key_value {rows} rows = (H + 2 Hkv) D (multi_query's {(H + 2) * D}); {len(files)} shards")
    up = m.weight("transformer.h.0.mlp.dense_h_to_4h.weight").shape[0]
    check(up == m.cfg["ffn_hidden_size"] == m.ffn != 4 * m.hidden and not m.tied and m.has("lm_head.weight")
          and layer_norms(m) == ["ln_attn", "ln_mlp"],
          f"falcon-40b: dense_h_to_4h {up} rows = ffn_hidden_size (not 4 x {m.hidden}), untied lm_head, layer norms "
          f"{layer_norms(m)}")
    blocks = falcon_blocks(m.cfg)
    concat = dict(blocks, q=list(range(H)), k=[H + g for g in range(kv)], v=[H + kv + g for g in range(kv)])
    mod_pairing, positions = paired_as(d, [h % kv for h in range(H)])
    one_norm, swapped, seq, tied = Model(d), Model(d), Model(d), Model(d)
    one_norm.mlp_norm = "ln_attn"
    swapped.attn_norm, swapped.mlp_norm = "ln_mlp", "ln_attn"
    seq.parallel = False
    tied.tied = True
    check_bites("falcon-40b", ref, {
        "rows read as [q | k | v] (all queries first)": (rf.forward(read_as(d, concat), tokens), 0, None),
        "query head h paired with kv head h % Hkv": (rf.forward(mod_pairing, tokens), 0, positions),
        "ln_attn feeding the MLP too": (rf.forward(one_norm, tokens), 1, None),
        "ln_attn and ln_mlp swapped": (rf.forward(swapped, tokens), 0, None),
        "sequential (MLP on x + attn)": (rf.forward(seq, tokens), 1, None)})
    dl = float(np.abs(rf.forward(tied, tokens)["logits"] - ref["logits"]).max() / np.abs(ref["logits"]).max())
    check(dl > 0.1, f"falcon-40b: word_embeddings as the head change the logits by {dl:.2f} of their max")


def sequential(fixture_dir, n_loop):
    """falcon-sequential: per-head [q | k | v] rows, attention then the MLP from post_attention_layernorm."""
    d, m, tokens, ref = common(fixture_dir, "falcon-sequential", n_loop)
    H, D = m.heads, m.head_dim
    rows = m.weight("transformer.h.0.self_attention.query_key_value.weight").shape[0]
    check(not m.cfg["multi_query"] and not m.cfg["parallel_attn"] and m.kv_heads == H and rows == 3 * H * D
          and layer_norms(m) == ["input_layernorm", "post_attention_layernorm"],
          f"falcon-sequential: {H} kv heads, query_key_value {rows} rows, layer norms {layer_norms(m)}")
    concat = dict(falcon_blocks(m.cfg), q=list(range(H)), k=[H + h for h in range(H)], v=[2 * H + h for h in range(H)])
    parallel, one_norm = Model(d), Model(d)
    parallel.parallel = True
    one_norm.mlp_norm = "input_layernorm"
    check_bites("falcon-sequential", ref, {
        "rows read as [q | k | v] (GPT-2's c_attn)": (rf.forward(read_as(d, concat), tokens), 0, None),
        "parallel (MLP on x)": (rf.forward(parallel, tokens), 1, None),
        "input_layernorm feeding the MLP": (rf.forward(one_norm, tokens), 1, None)})


def falcon_refusals(d):
    """The layouts the engine refuses (HF would build no such layer), refused here; the readings beside them:
    Falcon2-11B's one norm in the new architecture, the RW names, alibi and bias (Falcon-RW's) on this layout."""
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    new = dict(cfg, new_decoder_architecture=True)
    refused = {"num_kv_heads 2 without multi_query": dict(cfg, multi_query=False, num_kv_heads=2),
               "parallel_attn false in the new architecture": dict(new, parallel_attn=False),
               "num_ln_in_parallel_attn 2 in the old one": dict(cfg, num_ln_in_parallel_attn=2),
               "num_ln_in_parallel_attn 3": dict(new, num_ln_in_parallel_attn=3)}
    layout = lambda m: (m.layers, m.heads, m.kv_heads, m.attn_norm, m.mlp_norm, m.parallel)
    got = read_variants(d, refused, layout)
    check(set(got.values()) == {"refused"}, "falcon: refused: " + ", ".join(f"{k} {v}" for k, v in got.items()))
    names = {k: v for k, v in cfg.items() if k not in ("num_hidden_layers", "num_attention_heads")}
    read = {"num_kv_heads 4, num_ln_in_parallel_attn 1": dict(new, num_kv_heads=4, num_ln_in_parallel_attn=1),
            "n_layer 2, n_head 4, n_head_kv 2": dict(names, n_layer=2, n_head=4, n_head_kv=2,
                                                     new_decoder_architecture=True),
            "alibi, bias": dict(cfg, alibi=True, bias=True)}
    layout = lambda m: (m.layers, m.heads, m.kv_heads, m.attn_norm, m.mlp_norm, m.parallel) + \
        ((m.rotary, m.linear_bias) if m.alibi else ())
    got = read_variants(d, read, layout)
    want = [(3, 8, 4, "input_layernorm", "input_layernorm", True), (2, 4, 2, "ln_attn", "ln_mlp", True),
            (3, 8, 1, "input_layernorm", "input_layernorm", True, False, True)]
    check(list(got.values()) == want, "falcon: read: " + "; ".join(f"{k}: {v}" for k, v in got.items()))
