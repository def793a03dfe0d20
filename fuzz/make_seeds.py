#!/usr/bin/python3
"""Writes the seed corpora of the fuzz targets into fuzz/corpus/<target>/.

  fuzz/make_seeds.py            (re)writes the generated seeds; files named crash-* or
                                found-* (inputs a fuzzer found, kept as regressions) stay.

Each seed is a small, meaningful input: valid files the parsers accept and near misses
(truncations, overflows, traversal, bad UTF-8) that must fail cleanly. Deterministic.
"""
import gzip
import json
import os
import shutil
import struct
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")


def safetensors(tensors, metadata=None, header_override=None):
    """tensors: [(name, dtype, shape, bytes)] -> a safetensors file as bytes."""
    header, data = {}, b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata is not None:
        header["__metadata__"] = metadata
    blob = header_override if header_override is not None else json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    return struct.pack("<Q", len(blob)) + blob + data


def f32(*values):
    return struct.pack(f"<{len(values)}f", *values)


def safetensors_seeds():
    good = safetensors([("a", "F32", [2, 2], f32(1, 2, 3, 4)), ("b", "BF16", [3], b"\x80\x3f" * 3),
                        ("c", "I64", [0], b"")], {"format": "pt"})
    index = {"metadata": {"total_size": 24}, "weight_map": {"a": "model-00001-of-00002.safetensors",
                                                            "b": "model-00002-of-00002.safetensors"}}
    return {
        "valid.safetensors": good,
        "empty_header.safetensors": safetensors([]),
        "truncated.safetensors": good[: len(good) - 5],
        "header_len_huge.safetensors": struct.pack("<Q", 2**64 - 16) + good[8:],
        "header_len_past_eof.safetensors": struct.pack("<Q", len(good)) + good[8:],
        "overlap.safetensors": safetensors([], header_override=json.dumps(
            {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
             "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}).encode()) + f32(1, 2, 3),
        "shape_overflow.safetensors": safetensors([], header_override=json.dumps(
            {"a": {"dtype": "F64", "shape": [2**40, 2**40], "data_offsets": [0, 0]}}).encode()),
        "negative_offset.safetensors": safetensors([], header_override=json.dumps(
            {"a": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}}).encode()),
        "metadata_not_string.safetensors": safetensors([("a", "F32", [1], f32(1))], {"n": 5}),
        "deep_nesting.safetensors": safetensors([], header_override=b"[" * 5000 + b"]" * 5000),
        "index.json": json.dumps(index).encode(),
        "index_traversal.json": json.dumps({"weight_map": {"a": "../outside.safetensors"}}).encode(),
        "index_absolute.json": json.dumps({"weight_map": {"a": "/etc/passwd"}}).encode(),
        "index_dotdot.json": json.dumps({"weight_map": {"a": ".."}}).encode(),
        "index_nul.json": b'{"weight_map": {"a": "x\\u0000y.safetensors"}}',
        "name_with_newline.safetensors": safetensors([("evil\nname", "Q99", [1], b"\0")]),
        "index_not_string.json": json.dumps({"weight_map": {"a": 3}}).encode(),
        "index_empty.json": b'{"weight_map": {}}',
    }


def config(**overrides):
    c = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 176, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 512, "max_position_embeddings": 2048,
         "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "bos_token_id": 1, "torch_dtype": "float32",
         "hidden_act": "silu", "tie_word_embeddings": False, "rope_scaling": None}
    c.update(overrides)
    return json.dumps({k: v for k, v in c.items() if v != "DROP"}).encode()


def config_seeds():
    return {
        "llama.json": config(),
        "mistral_window.json": config(model_type="mistral", sliding_window=32),
        "gemma_head_dim.json": config(model_type="gemma", hidden_size=96, head_dim=32, hidden_activation="gelu_pytorch_tanh",
                                      hidden_act="DROP", torch_dtype="bfloat16"),
        "eps_overflow.json": config(rms_norm_eps=1e300),
        "layers_huge.json": config(num_hidden_layers=2**30),
        "heads_times_dim_overflow.json": config(num_attention_heads=2**20, num_key_value_heads=1, head_dim=2**20),
        "kv_not_dividing.json": config(num_key_value_heads=3),
        "negative_vocab.json": config(vocab_size=-5),
        "unsigned_huge.json": config(hidden_size=2**64 - 1),
        "missing_model_type.json": config(model_type="DROP"),
        "llama3_rope.json": config(rope_theta=500000.0, rope_scaling={
            "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192}),
        "qwen2_window.json": config(model_type="qwen2", use_sliding_window=True, sliding_window=16, max_window_layers=1),
        "gemma2_caps.json": config(model_type="gemma2", head_dim=16, query_pre_attn_scalar=24, sliding_window=8,
                                   attn_logit_softcapping=50.0, final_logit_softcapping=30.0),
        "gemma3_multimodal.json": json.dumps({"model_type": "gemma3", "text_config": json.loads(config(
            model_type="gemma3_text", head_dim=16, sliding_window_pattern=2,
            rope_scaling={"rope_type": "linear", "factor": 8.0}))}).encode(),
        "olmo2.json": config(model_type="olmo2"),
        "gptj.json": json.dumps({"model_type": "gptj", "n_embd": 64, "n_head": 4, "n_layer": 2, "n_positions": 128,
                                 "vocab_size": 100, "n_inner": None, "rotary_dim": 8,
                                 "activation_function": "gelu_new", "bos_token_id": 1}).encode(),
        "smollm3_nope.json": config(model_type="smollm3", num_hidden_layers=4, no_rope_layers=[1, 0, 1, 0],
                                    use_sliding_window=True, sliding_window=16),
        "gpt_neo.json": json.dumps({"model_type": "gpt_neo", "hidden_size": 64, "num_layers": 2, "num_heads": 4,
                                    "vocab_size": 100, "max_position_embeddings": 128, "window_size": 16,
                                    "attention_types": [[["global", "local"], 1]],
                                    "attention_layers": ["global", "local"], "bos_token_id": 1}).encode(),
        "olmo3_yarn.json": config(model_type="olmo3", num_hidden_layers=4, sliding_window=16, max_position_embeddings=65536,
                                  rope_scaling={"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 8192,
                                                "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0,
                                                "truncate": False}),
        "moe.json": config(model_type="mixtral", num_local_experts=8),
        "olmoe.json": config(model_type="olmoe", num_experts=4, num_experts_per_tok=2, norm_topk_prob=False,
                             clip_qkv=None),
        "qwen3_moe_layers.json": config(model_type="qwen3_moe", num_experts=4, num_experts_per_tok=2,
                                        moe_intermediate_size=32, num_hidden_layers=4, decoder_sparse_step=2, mlp_only_layers=[3],
                                        norm_topk_prob=True),
        "qwen2_moe_shared.json": config(model_type="qwen2_moe", num_experts=4, num_experts_per_tok=2,
                                        moe_intermediate_size=32, shared_expert_intermediate_size=48,
                                        num_hidden_layers=3, mlp_only_layers=[1], qkv_bias=True),
        "opt.json": json.dumps({"model_type": "opt", "hidden_size": 64, "num_hidden_layers": 2,
                                "num_attention_heads": 4, "ffn_dim": 160, "vocab_size": 100,
                                "max_position_embeddings": 128, "do_layer_norm_before": True,
                                "word_embed_proj_dim": 64, "activation_function": "relu"}).encode(),
        "falcon_40b.json": json.dumps({"model_type": "falcon", "hidden_size": 64, "n_layer": 2, "n_head": 8,
                                       "n_head_kv": 2, "new_decoder_architecture": True, "vocab_size": 100,
                                       "bos_token_id": 1}).encode(),
        "bloom.json": json.dumps({"model_type": "bloom", "n_embed": 64, "n_layer": 2, "n_head": 6,
                                  "vocab_size": 100, "layer_norm_epsilon": 1e-5}).encode(),
        "mpt.json": json.dumps({"model_type": "mpt", "d_model": 64, "n_heads": 4, "n_layers": 2, "vocab_size": 100,
                                "max_seq_len": 128, "no_bias": True,
                                "attn_config": {"alibi": True, "alibi_bias_max": 8, "softmax_scale": None}}).encode(),
        "olmo.json": config(model_type="olmo", clip_qkv=8.0, bos_token_id=None),
        "starcoder2.json": config(model_type="starcoder2", norm_epsilon=1e-5, use_bias=True, sliding_window=16),
        "gpt_bigcode.json": json.dumps({"model_type": "gpt_bigcode", "n_embd": 64, "n_layer": 2, "n_head": 4,
                                        "n_positions": 128, "n_inner": None, "vocab_size": 100,
                                        "multi_query": False}).encode(),
        "stablelm_parallel.json": config(model_type="stablelm", layer_norm_eps=1e-5, partial_rotary_factor=0.25,
                                         use_qkv_bias=True, use_parallel_residual=True),
        "granite.json": config(model_type="granite", embedding_multiplier=12.0, attention_multiplier=0.0078125,
                               residual_multiplier=0.22, logits_scaling=16.0),
        "not_object.json": b"[1, 2, 3]",
        "truncated.json": config()[:40],
    }


def tokenizer_seeds():
    model = open(os.path.join(HERE, "data", "tokenizer.model"), "rb").read()
    text = "Hello, world! The quick brown fox jumps over the lazy dog. 12345\nnaïve café — ok".encode()
    return {
        "text_ascii": b"\x00" + b"the cat sat on the mat",
        "text_utf8": b"\x00" + text,
        "text_long_words": b"\x06" + b"supercalifragilistic " * 20,
        "text_no_spaces": b"\x02" + "ééééééééééééééééééé".encode() + b"abc" * 30,
        "invalid_overlong": b"\x00" + b"ok \xc0\xaf no",
        "invalid_surrogate": b"\x00" + b"ok \xed\xa0\x80 no",
        "invalid_truncated": b"\x00" + b"ok \xe2\x82",
        "invalid_beyond_max": b"\x00" + b"\xf4\x90\x80\x80",
        "invalid_continuation": b"\x00" + b"\x80abc",
        "model_valid": b"\x01" + model,
        "model_truncated": b"\x01" + model[: len(model) // 2],
        "model_garbage": b"\x01" + b"this is not a sentencepiece model\n" * 4,
    }


def zstd(raw):
    if shutil.which("zstd") is None:
        return None
    return subprocess.run(["zstd", "-q", "-c", "-19"], input=raw, stdout=subprocess.PIPE, check=True).stdout


def corpus_seeds():
    lines = b"first line of text\nsecond line\n\n   \nthird \xff\xfe bad\nfourth line here\r\n"
    jsonl = b'{"text": "alpha beta gamma"}\n{"body": "x"}\nnot json\n{"text": ""}\n{"text": "\\u00e9t\\u00e9 delta"}\n'
    seeds = {
        "text_plain": b"\x00\xff\x05\x00" + b"one whole document with several words in it",
        "lines_plain": b"\x01\xff\x03\x01" + lines,
        "lines_long_line": b"\x01\x02\x03\x00" + b"x" * 300 + b"\nshort\n",
        "jsonl_plain": b"\x02\xff\x04\x81" + jsonl,
        "lines_gzip": b"\x01\xff\x03\x00" + gzip.compress(lines, mtime=0),
        "lines_gzip_concat": b"\x01\xff\x03\x00" + gzip.compress(b"one\n", mtime=0) + gzip.compress(b"two\n", mtime=0),
        "lines_gzip_truncated": b"\x01\xff\x03\x00" + gzip.compress(lines, mtime=0)[:-7],
        "text_gzip_trailing": b"\x00\xff\x03\x00" + gzip.compress(b"abc", mtime=0) + b"\x00\x00junk",
        "gzip_bomb": b"\x00\xff\x03\x00" + gzip.compress(b"a" * (3 << 20), mtime=0),
    }
    for name, raw in {"jsonl_zstd": b"\x02\xff\x04\x00" + b"%s", "zstd_high_ratio": b"\x00\xff\x03\x00%s"}.items():
        payload = jsonl if name == "jsonl_zstd" else b"b" * (900 << 10)
        packed = zstd(payload)
        if packed is not None:
            seeds[name] = raw.replace(b"%s", b"") + packed
    packed = zstd(lines)
    if packed is not None:
        seeds["lines_zstd_truncated"] = b"\x01\xff\x03\x00" + packed[:-4]
    return seeds


def main():
    for target, seeds in [("safetensors", safetensors_seeds()), ("config", config_seeds()),
                          ("tokenizer", tokenizer_seeds()), ("corpus", corpus_seeds())]:
        folder = os.path.join(CORPUS, target)
        os.makedirs(folder, exist_ok=True)
        for name in os.listdir(folder):
            if not name.startswith(("crash-", "found-")):
                os.remove(os.path.join(folder, name))
        for name, data in seeds.items():
            with open(os.path.join(folder, name), "wb") as f:
                f.write(data)
        print(f"{target}: {len(seeds)} seeds")


if __name__ == "__main__":
    main()
