"""Shared helpers for the end-to-end tests: running `attngeom capture`, tokenizing with
sentencepiece's own CLI, and checking a capture dump's layout."""
import json
import os
import subprocess
import sys

import numpy as np

import st_reader

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tools"))
import bpe_encode  # noqa: E402

PROMPT = os.path.join(REPO, "tests", "data", "fixture_prompt.txt")
COMPARE_FIXTURES = ["llama", "mistral", "gemma", "mistral-nowindow", "llama3", "llama-linear", "llama-yarn", "qwen2",
                    "qwen3", "gemma2", "gemma3-text", "gemma3", "olmo2", "olmo3", "olmo3-v5", "pythia",
                    "pythia-sequential", "pythia-v5", "gpt2", "gptj", "gpt-neo", "phi", "phi3", "phi3-v5", "llama3-v5",
                    "mixtral", "olmoe", "qwen3-moe", "mixtral-v5", "qwen3-moe-v5", "smollm3", "smollm3-windowed", "opt",
                    "opt-bare", "qwen2-moe", "qwen2-moe-v5", "falcon", "falcon-40b", "falcon-sequential", "falcon-rw",
                    "bloom", "bloom-prefixed", "mpt", "mpt-clip", "olmo", "olmo-noclip", "olmoe-clip", "starcoder2",
                    "gpt-bigcode", "gpt-bigcode-mha", "stablelm", "stablelm-parallel", "granite"]
# One fixture per family (no config-only variants), for the slower checks.
FAMILY_FIXTURES = ["llama", "mistral", "gemma", "llama3", "qwen2", "qwen3", "gemma2", "gemma3-text", "gemma3",
                   "olmo2", "olmo3", "pythia", "gpt2", "gptj", "gpt-neo", "phi", "phi3", "mixtral", "olmoe",
                   "qwen3-moe", "smollm3", "opt", "qwen2-moe", "falcon", "falcon-40b", "falcon-sequential", "falcon-rw",
                   "bloom", "mpt", "olmo", "starcoder2", "gpt-bigcode", "gpt-bigcode-mha", "stablelm",
                   "stablelm-parallel", "granite"]


def spm_ids(tokenizer, text_path):
    """Token ids from sentencepiece's own encoder (no BOS). spm_encode encodes line by
    line and drops the line terminator, so the text must be a single line."""
    with open(text_path, "rb") as f:
        if b"\n" in f.read().rstrip(b"\n"):
            raise ValueError(f"{text_path}: must be one line for spm_encode to match a whole-text encoding")
        f.seek(0)
        out = subprocess.run(["spm_encode", f"--model={tokenizer}", "--output_format=id"],
                             stdin=f, check=True, stdout=subprocess.PIPE).stdout
    return [int(t) for t in out.split()]


def prompt_ids(model_dir, bos, text_path=PROMPT):
    """(the ids `capture --text` must give, the text's ids alone): with a tokenizer.model, spm_encode's ids after
    the config's BOS; with a tokenizer.json (BLOOM's shape), bpe_encode's of the text less one final line ending,
    as capture reads it, and no BOS (its ByteLevel post-processor adds none)."""
    if os.path.exists(os.path.join(model_dir, "tokenizer.model")):
        ids = spm_ids(os.path.join(model_dir, "tokenizer.model"), text_path)
        return [bos] + ids, ids
    with open(text_path, encoding="utf-8", newline="") as f:
        text = f.read()
    text = text[:-2] if text.endswith("\r\n") else text[:-1] if text.endswith("\n") else text
    ids = bpe_encode.encode(os.path.join(model_dir, "tokenizer.json"), text)
    return ids, ids


# The device the engine runs on in these tests: ATTNGEOM_TEST_DEVICE (the GPU variants of the
# tests, label `cuda` in tests/python/CMakeLists.txt, set it to cuda), else the CPU.
DEVICE = os.environ.get("ATTNGEOM_TEST_DEVICE", "cpu")
SKIPPED = 77  # ctest's SKIP_RETURN_CODE for these scripts


def device_flags():
    return [] if DEVICE == "cpu" else ["--device", DEVICE]


def require_device(binary):
    """Exits with SKIPPED when the test device is a GPU that this build or machine lacks (with
    ATTNGEOM_EXPECT_GPU set, fails instead)."""
    if DEVICE == "cpu":
        return
    lines = subprocess.run([binary, "devices"], capture_output=True, text=True, check=True).stdout.splitlines()
    if not any(line.startswith(DEVICE if ":" in DEVICE else DEVICE + ":0:") for line in lines):
        if os.environ.get("ATTNGEOM_EXPECT_GPU"):  # a machine lent for its GPU: none is a failure
            sys.exit(f"FAIL: ATTNGEOM_EXPECT_GPU is set, but there is no {DEVICE} here ({'; '.join(lines)})")
        print(f"skipped: no {DEVICE} here ({'; '.join(lines)})")
        sys.exit(SKIPPED)


def fp32_kernel(requested, bf16_weights):
    """The fp32 matmul kernel a dump names: bf16x3 runs only on bf16 weights, and only on the CPU."""
    if DEVICE != "cpu":
        return "cublas-sgemm"
    return f"onednn-{requested if bf16_weights else 'sgemm'}"


def capture(binary, model_dir, out, *flags, text=PROMPT, tokens=None, timeout=300):
    """Runs `attngeom capture` on the test device; returns the CompletedProcess (text mode)."""
    cmd = [binary, "capture", "--model", model_dir, "--out", out]
    cmd += ["--tokens", tokens] if tokens is not None else ["--text", text]
    cmd += device_flags() + list(flags)
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=timeout)


def describe(proc):
    return (f"exit {proc.returncode}; cmd: {' '.join(proc.args)}\n"
            f"stderr: {proc.stderr.strip()[:2000]}\nstdout: {proc.stdout.strip()[:500]}")


# GPT2Config's, GPTNeoConfig's, BloomConfig's and MptConfig's attribute_maps (and BLOOM's n_embed): the standard
# key, and the one their config.json writes.
CONFIG_ALIASES = [("hidden_size", "n_embd"), ("num_hidden_layers", "n_layer"), ("num_attention_heads", "n_head"),
                  ("max_position_embeddings", "n_positions"), ("num_hidden_layers", "num_layers"),
                  ("num_attention_heads", "num_heads"), ("hidden_size", "n_embed"), ("hidden_size", "d_model"),
                  ("num_hidden_layers", "n_layers"), ("num_attention_heads", "n_heads")]


def load_config(model_dir):
    """config.json, with GPT-2's, GPT-Neo's, BLOOM's, MPT's and GPTBigCode's key names also under the standard ones,
    and Falcon's kv heads (falcon_kv_heads) and GPTBigCode's (one with multi_query, its default) as
    num_key_value_heads."""
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    for std, alias in CONFIG_ALIASES:
        if std not in cfg and alias in cfg:
            cfg[std] = cfg[alias]
    if cfg.get("model_type") == "falcon":
        cfg.setdefault("num_key_value_heads", falcon_kv_heads(cfg))
    if cfg.get("model_type") == "gpt_bigcode":
        cfg.setdefault("num_key_value_heads", 1 if cfg.get("multi_query", True) else cfg["num_attention_heads"])
    return cfg


def falcon_kv_heads(cfg):
    """FalconAttention's kv heads (the value heads a dump holds): num_kv_heads (or n_head_kv) under
    new_decoder_architecture, else one with multi_query (default true), one per head without."""
    heads = cfg["num_attention_heads"]
    if cfg.get("new_decoder_architecture"):
        return cfg.get("num_kv_heads", cfg.get("n_head_kv")) or heads
    return 1 if cfg.get("multi_query", True) else heads


def moe_layers(cfg):
    """(layers routed through experts, experts, top_k) of a mixture of experts; ([], 0, 0) else.
    Mixtral and OLMoE route every layer; Qwen3-MoE and Qwen2-MoE every decoder_sparse_step-th layer
    outside mlp_only_layers (transformers 4.57 Qwen3MoeDecoderLayer, Qwen2MoeDecoderLayer)."""
    cfg = cfg.get("text_config", cfg)
    L, mt = cfg["num_hidden_layers"], cfg.get("model_type")
    if mt == "mixtral":
        return list(range(L)), cfg.get("num_local_experts", 8), cfg.get("num_experts_per_tok", 2)
    # Qwen3MoeConfig in transformers 5.x writes its count as num_local_experts
    experts = cfg.get("num_experts", cfg.get("num_local_experts"))
    if mt not in ("olmoe", "qwen3_moe", "qwen2_moe") or not experts:
        return [], 0, 0
    step, dense = cfg.get("decoder_sparse_step", 1), set(cfg.get("mlp_only_layers") or [])
    layers = [l for l in range(L) if l not in dense and (l + 1) % step == 0]
    return layers, experts, cfg["num_experts_per_tok"]


def layout_problems(path, cfg, n_tokens, n_queries, with_logits):
    """Checks names, dtypes and shapes of a capture dump; returns (tensors, meta, problems)."""
    tensors, meta, dtypes = st_reader.read(path)
    cfg = cfg.get("text_config", cfg)  # a multimodal config's text tower
    L, H = cfg["num_hidden_layers"], cfg["num_attention_heads"]
    Hkv = cfg.get("num_key_value_heads") or H
    D = cfg.get("head_dim") or cfg["hidden_size"] // H
    want = {"tokens": ("I32", (n_tokens,)), "query_positions": ("I32", (n_queries,))}
    for layer in range(L):
        want[f"layers.{layer}.attn"] = ("F32", (H, n_queries, n_tokens))
        want[f"layers.{layer}.values"] = ("F32", (Hkv, n_tokens, D))
    routed, experts, top_k = moe_layers(cfg)
    for layer in routed:
        want[f"layers.{layer}.experts"] = ("I32", (n_tokens, top_k))
        want[f"layers.{layer}.expert_weights"] = ("F32", (n_tokens, top_k))
        want[f"layers.{layer}.expert_load"] = ("I32", (experts,))
        if (meta or {}).get("precision") != "fp32":
            want[f"layers.{layer}.routing_flipped"] = ("I32", (n_tokens,))
    if with_logits:
        want["logits"] = ("F32", (n_tokens, cfg["vocab_size"]))
    problems = []
    if set(tensors) != set(want):
        problems.append(f"tensor names: extra {sorted(set(tensors) - set(want))}, "
                        f"missing {sorted(set(want) - set(tensors))}")
    for name, (dtype, shape) in want.items():
        if name in tensors and (dtypes[name], tuple(tensors[name].shape)) != (dtype, shape):
            problems.append(f"{name}: {dtypes[name]} {list(tensors[name].shape)}, "
                            f"expected {dtype} {list(shape)}")
    if not meta or not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
        problems.append(f"__metadata__ must be a non-empty map of strings, got {meta!r}")
    return tensors, meta, problems


def worst(err):
    """Index tuple of the largest entry of an error array."""
    return tuple(int(i) for i in np.unravel_index(np.argmax(err), err.shape))
