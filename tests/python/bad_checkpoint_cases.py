"""Hostile checkpoints, configs, tokenizers and texts for `attngeom capture`
(docs/robustness.md): overflow, non-finite weights, shard paths, link loops, FIFOs,
0-byte files, absurd config values and flags. Registered into test_bad_inputs.py's
CASES; each corrupts ctx.model and returns (needles_any, needles_all)."""
import json
import os

import numpy as np

from bad_input_lib import L0, L1, ST, case, edit_json, edit_offsets, read_raw, rewrite


@case()
def header_shape_overflow(ctx):
    def edit(h, size):
        h["evil.weight"] = {"dtype": "F32", "shape": [2**40, 2**40], "data_offsets": [0, 0]}
    edit_offsets(ctx.path(ST), edit)
    return ["evil.weight"], ["overflows"]


@case()
def header_declared_huge(ctx):
    """A header length of 200 MB in a file that really has it: over the parser's limit."""
    p = ctx.path(ST)
    n = 200 << 20
    with open(p, "wb") as f:
        f.write(n.to_bytes(8, "little"))
        f.truncate(8 + n + 16)  # sparse: no 200 MB written
    return [ST], ["limit"]


@case()
def nan_in_weights(ctx):
    t = L0 + "self_attn.q_proj.weight"

    def edit(ts):
        a = ts[t][1].copy()
        a[3, 5] = np.nan
        ts[t] = (ts[t][0], a)
    rewrite(ctx.path(ST), edit)
    return [t], ["NaN/Inf"]


@case()
def inf_in_norm_weight(ctx):
    t = "model.norm.weight"

    def edit(ts):
        a = ts[t][1].copy()
        a[-1] = -np.inf
        ts[t] = (ts[t][0], a)
    rewrite(ctx.path(ST), edit)
    return [t], ["NaN/Inf"]


@case()
def finite_weights_overflowing_activations(ctx):
    """Finite but huge q/k weights pass the NaN/Inf scan; the scores they make overflow."""
    def edit(ts):
        for t in (L0 + "self_attn.q_proj.weight", L0 + "self_attn.k_proj.weight"):
            ts[t] = (ts[t][0], ts[t][1] * np.float32(1e25))
    rewrite(ctx.path(ST), edit)
    return ["model.layers.0"], ["overflow float32"]


@case("gemma")
def nan_in_bf16_shard(ctx):
    """Sharded BF16: a NaN bit pattern (0x7fc0) patched straight into the shard's bytes."""
    with open(ctx.path(ST + ".index.json")) as f:
        weight_map = json.load(f)["weight_map"]
    t = L1 + "mlp.up_proj.weight"
    p = ctx.path(weight_map[t])
    header, _ = read_raw(p)
    n = int.from_bytes(open(p, "rb").read(8), "little")
    with open(p, "r+b") as f:
        f.seek(8 + n + header[t]["data_offsets"][0] + 2 * 17)
        f.write((0x7fc0).to_bytes(2, "little"))
    return [t], ["NaN/Inf"]


@case("gemma")
def shard_path_traversal(ctx):
    edit_json(ctx.path(ST + ".index.json"),
              lambda i: i["weight_map"].update({"model.norm.weight": "../outside.safetensors"}))
    return ["../outside.safetensors"], ["plain file name"]


@case("gemma")
def shard_absolute_path(ctx):
    edit_json(ctx.path(ST + ".index.json"),
              lambda i: i["weight_map"].update({"model.norm.weight": "/etc/passwd"}))
    return ["/etc/passwd"], ["plain file name"]


@case()
def symlink_loop_weights(ctx):
    os.remove(ctx.path(ST))
    os.symlink(ctx.path("loop-b"), ctx.path("loop-a"))
    os.symlink(ctx.path("loop-a"), ctx.path("loop-b"))
    os.symlink(ctx.path("loop-a"), ctx.path(ST))
    return [ST], ["symbolic links"]


@case()
def symlink_loop_model_dir(ctx):
    loop = os.path.join(ctx.tmp, "model-loop")
    os.symlink(loop, loop)
    ctx.model = loop
    return ["model-loop"], ["symbolic links"]


@case()
def zero_byte_weights(ctx):
    open(ctx.path(ST), "wb").close()
    return [ST], ["0 bytes"]


@case()
def zero_byte_config(ctx):
    open(ctx.path("config.json"), "wb").close()
    return ["config.json"], []


@case()
def zero_byte_tokenizer(ctx):
    open(ctx.path("tokenizer.model"), "wb").close()
    return ["tokenizer.model"], []


@case()
def config_is_fifo(ctx):
    """A named pipe must be refused at once, not block waiting for a writer."""
    os.remove(ctx.path("config.json"))
    os.mkfifo(ctx.path("config.json"))
    return ["config.json"], ["not a regular file"]


@case()
def weights_is_directory(ctx):
    os.remove(ctx.path(ST))
    os.mkdir(ctx.path(ST))
    return [ST], ["not a regular file"]


@case()
def config_absurd_layers(ctx):
    edit_json(ctx.path("config.json"), lambda c: c.update(num_hidden_layers=2**30))
    return ["num_hidden_layers"], []


@case()
def config_eps_beyond_float(ctx):
    edit_json(ctx.path("config.json"), lambda c: c.update(rms_norm_eps=1e300))
    return ["rms_norm_eps"], []


@case()
def tensor_name_with_newline(ctx):
    """A hostile tensor name must not break the one-line message."""
    def edit(h, size):
        h["evil\nname"] = {"dtype": "Q99", "shape": [1], "data_offsets": [0, 1]}
    edit_offsets(ctx.path(ST), edit)
    return ["evil\\nname"], ["Q99"]


@case()
def invalid_utf8_text(ctx):
    bad = os.path.join(ctx.tmp, "bad_utf8.txt")
    with open(bad, "wb") as f:
        f.write(b"valid start \xc0\xaf overlong slash")
    ctx.args = ["--text", bad]
    return ["bad_utf8.txt"], ["invalid UTF-8 at byte 12"]


@case()
def text_file_too_large(ctx):
    big = os.path.join(ctx.tmp, "huge_prompt.txt")
    with open(big, "wb") as f:
        f.truncate(20 << 20)
    ctx.args = ["--text", big]
    return ["huge_prompt.txt"], ["limit"]


@case()
def sequence_beyond_max_positions(ctx):
    ids = os.path.join(ctx.tmp, "long_ids.txt")
    with open(ids, "w") as f:
        f.write(" ".join(["5"] * 2100))  # the fixture's max_position_embeddings is 2048
    ctx.args = ["--tokens", ids]
    return ["max_position_embeddings"], ["--force"]


@case()
def absurd_max_tokens(ctx):
    ctx.args += ["--max-tokens", "-3"]
    return ["--max-tokens"], []


@case()
def out_is_directory(ctx):
    ctx.out = os.path.join(ctx.tmp, "a_directory")
    os.mkdir(ctx.out)
    return ["a_directory"], ["is a directory"]


# --- model families: what is refused, and by which field ---

@case()
def config_rope_type_dynamic(ctx):
    edit_json(ctx.path("config.json"), lambda c: c.update(rope_scaling={"rope_type": "dynamic", "factor": 4.0}))
    return ["rope_scaling.rope_type", "dynamic"], ["not supported"]


@case("llama-yarn")
def config_yarn_negative_beta_fast(ctx):
    edit_json(ctx.path("config.json"), lambda c: c["rope_scaling"].update(beta_fast=-4))
    return ["rope_scaling.beta_fast"], ["positive"]


@case("llama3")
def config_llama3_rope_without_low_freq_factor(ctx):
    edit_json(ctx.path("config.json"), lambda c: c["rope_scaling"].pop("low_freq_factor"))
    return ["rope_scaling.low_freq_factor"], ["missing"]


@case()
def config_moe_num_local_experts(ctx):
    edit_json(ctx.path("config.json"), lambda c: c.update(num_local_experts=8, num_experts_per_tok=2))
    return ["num_local_experts"], ["mixture-of-experts"]


@case("qwen2")
def config_moe_num_experts(ctx):
    edit_json(ctx.path("config.json"), lambda c: c.update(num_experts=60))
    return ["num_experts"], ["mixture-of-experts"]


@case("qwen3")
def config_partial_rotary(ctx):
    edit_json(ctx.path("config.json"), lambda c: c.update(partial_rotary_factor=0.5))
    return ["partial_rotary_factor"], ["partial rotary"]


@case("gemma2")
def config_layer_types_wrong_length(ctx):
    edit_json(ctx.path("config.json"), lambda c: c.update(layer_types=["sliding_attention"]))
    return ["layer_types"], ["num_hidden_layers"]


@case("gemma3")
def config_multimodal_without_text_config(ctx):
    edit_json(ctx.path("config.json"), lambda c: c.pop("text_config"))
    return ["text_config"], []


@case("gemma3")
def multimodal_text_tensor_missing(ctx):
    """The text tower's tensors live under language_model.: one missing is named in full."""
    with open(ctx.path(ST + ".index.json")) as f:
        weight_map = json.load(f)["weight_map"]
    t = "language_model.model.layers.1.self_attn.k_norm.weight"

    def edit(ts):
        del ts[t]
    rewrite(ctx.path(weight_map[t]), edit)
    return [t], ["missing"]
