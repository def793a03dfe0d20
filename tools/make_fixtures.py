#!/usr/bin/python3
"""Tiny random Hugging Face checkpoints that exercise every quirk the engine reads.

  make_fixtures.py OUT_DIR

Writes OUT_DIR/<fixture>/ (config.json, safetensors, tokenizer.model) and
OUT_DIR/fixtures.json (a summary). The fixtures are specified in fixture_specs.py. Tokenizers are trained with
spm_train on tests/data/fixture_corpus.txt, the weights drawn by fixture_weights.py; everything is seeded and
deterministic. Every family quirk is active, sized to bite at the prompt's length (~300 tokens):

  llama    MHA, F32, one model.safetensors, untied lm_head, head_dim not written
  mistral  GQA 4/2, F16, sliding_window 64 (< prompt length), 3 layers
  gemma    MQA 4/1, BF16, sharded (>= 3 files) + index, head_dim 32 (4 * 32 != hidden 96), tied,
           (1 + w) norms, sqrt(hidden) embedding scale, tanh GELU, bos id 2
  mistral-nowindow  the mistral weights with "sliding_window": null
  llama3   GQA 4/2, BF16, rope_scaling llama3 with original_max_position_embeddings 64 (every
           band of frequencies in use: kept, blended, slowed), rope_theta 500000
  llama-linear  the llama3 weights with rope_scaling linear, factor 4
  llama-yarn  the llama3 weights with rope_scaling yarn: factor 8 (explicit; max_position_embeddings
           / original would give 2), original 2048, DeepSeek's attention factor from mscale 1 /
           mscale_all_dim 0.5 (1.094, not 0.1 ln 8 + 1), beta_fast 16 / beta_slow 2 and truncate
           false: the ramp runs over the unrounded pair indices 1.84 .. 3.11, so pairs 2 and 3 blend
           by 0.13 and 0.92 (truncated: 1 .. 4, 1/3 and 2/3), 0 and 1 keep their frequencies, 4 .. 7
           are slowed 8x
  qwen2    GQA 4/2, BF16, q/k/v biases (o_proj none), tied, use_sliding_window with window 48
           on layers >= max_window_layers 1
  qwen3    GQA 4/2, F16, head_dim 32 (4 * 32 != hidden 64), per-head q/k RMSNorm,
           attention_bias true (q, k, v and o biases)
  gemma2   GQA 4/2, BF16, four norms, query_pre_attn_scalar 24 (!= head_dim 32), attention
           and final soft-caps below the scores and logits they cap, window 40 on even layers
  gemma3-text  MQA 4/1, F32, per-head (1 + w) q/k norms, layer_types (one global layer),
           window 32, local RoPE base 10000 and global 1e6 with linear scaling 4
  gemma3   the multimodal layout: text_config, weights under language_model., BF16,
           sliding_window_pattern 3 over 4 layers, and vision tensors (holding NaN) that must
           never be read
  olmo2    GQA 4/2, F32, post-norms only, q/k RMSNorm over the whole projection
  olmo3    OLMo-2's layer, GQA 4/2, BF16, 4 layers with layer_types not written (layers 0-2 slide
           with window 40, layer 3 is full), rope_scaling yarn on the full layer only: factor 4
           (explicit; max_position_embeddings / original would give 2), original 2048, so pairs 0
           and 1 keep their frequencies, 2 and 3 blend by 1/3 and 2/3, 4 .. 7 are slowed 4x, and
           cos and sin are times 0.1 ln 4 + 1 = 1.139; plain RoPE at rope_theta 500000 on the
           sliding layers; variant olmo3-v5 (rope_parameters per layer type, layer_types written)
  pythia   GPT-NeoX, F16, LayerNorms with biases, fused per-head query_key_value with biases,
           rotary_pct 0.5 (8 of head_dim 16 rotated), gelu MLP with biases, parallel residual;
           variants pythia-sequential (use_parallel_residual false), pythia-v5 and phi3-v5 (rope_parameters)
  gpt2     BF16, Conv1D weights [in, out], c_attn fused as [q | k | v], learned positions (wpe),
           LayerNorms and every projection with biases, gelu_new MLP, tied, n_inner written
  phi3     Phi-4-mini's layout, BF16: fused qkv_proj (GQA 4/2) and gate_up_proj, partial_rotary_factor
           0.75, longrope (original_max_position_embeddings 256 below the prompt: long factors,
           attention factor from max_position_embeddings 1024; the 100-token run uses the short
           ones), sliding_window 200
  phi      Phi-2's layout, F32: one input LayerNorm feeding attention and MLP in parallel,
           partial_rotary_factor 0.4 (8 of head_dim 20), biases everywhere incl. lm_head, gelu_new
  gptj     GPT-J, F16: one LayerNorm feeding attention and MLP in parallel, q/k/v/out_proj without
           biases, rotary_dim 8 of head_dim 16 turned in GPT-J's interleaved pairs (0, 1), (2, 3), ..
           (rotate_every_two, not rotate_half's (i, i + 4)) at the fixed base 10000 (head 0's content
           row, channel 7, in the slowest pair (6, 7)), fc_in / fc_out with biases, gelu_new, n_inner
           null (4 * 64), untied lm_head with a bias
  gpt-neo  GPT-Neo, BF16: GPT-2's sequential layer with learned positions (wpe, max_position_embeddings
           2048) and nn.Linear weights, q/k/v under attn.attention. without biases, out_proj and the
           c_fc / c_proj MLP with biases, scores not divided by sqrt(head_dim) (q rows at NEO_Q_GAIN,
           so heads still run from diffuse to peaky), attention_types [[["global", "local"], 2]] with
           attention_layers written out: layers 1 and 3 see window_size 40 keys, 0 and 2 all;
           intermediate_size null (4 * 64), gelu_new, tied (no lm_head.weight)
  smollm3  SmolLM3, BF16: LLaMA's layer, GQA 4/2, tied, rope_theta 2000000 (written), 4 layers with
           no_rope_layers not written, so no_rope_layer_interval 4 makes layer 3 NoPE (q and k not
           rotated); variant smollm3-windowed (no_rope_layers [1, 0, 1, 0], use_sliding_window true,
           sliding_window 48, layer_types not written: the NoPE layers 1 and 3 slide, 0 and 2 are full)
  mixtral  GQA 4/2, BF16, sliding_window 80, 8 experts per layer and top-2 routing with the weights
           renormalised; the router scaled so that its choices are decisive (every expert gets
           tokens, and no near-tie that fp32 and float64 could break differently)
  olmoe    GQA 4/2, F32, q/k RMSNorm over the whole projection after q/k/v/o biases
           (attention_bias true), 8 experts of 48 per layer, top-3 NOT renormalised
           (norm_topk_prob false); the router scaled as mixtral's
  qwen3-moe  GQA 4/2, BF16, two shards + index, head_dim 32 (4 * 32 != hidden 64), per-head q/k
           RMSNorm, 6 layers of which decoder_sparse_step 2 makes 1, 3, 5 sparse and mlp_only_layers
           [3] takes 3 back: experts (8 of moe_intermediate_size 48, top-2 renormalised) on 1 and 5,
           dense MLPs of intermediate_size 160 on 0, 2, 3, 4
  opt      OPT, F16: pre-LN (do_layer_norm_before), learned positions embed_positions of
           max_position_embeddings 2048 + 2 rows, token t reading row t + 2 (every row drawn on its own, so
           reading row t fails clearly), q/k/v/out_proj, fc1 / fc2 of ffn_dim 160 (not 4 * 64) and
           LayerNorms all with biases, ReLU, the query scaled by head_dim^-0.5 before the product, tied (no
           lm_head.weight), bos "</s>" id 2 (bos_token_id 2, eos 2, pad 1); variant opt-bare: the same
           tensors without the leading "model." (decoder.*), as the released facebook/opt-* files write them
  qwen2-moe  Qwen2-MoE, BF16, sharded (3 files) + index: Qwen2's attention (GQA 4/2, q/k/v biases by qkv_bias,
           o_proj none), sliding_window 48 with max_window_layers 1 but use_sliding_window false (no window
           anywhere), 3 layers of which mlp_only_layers [1] makes 1 dense (intermediate_size 160) and 0, 2
           sparse: 8 experts of moe_intermediate_size 48, top-4 NOT renormalised (norm_topk_prob false), and
           a shared expert of shared_expert_intermediate_size 80 scaled per token by sigmoid(shared_expert_gate)
           (from ~0.1 to ~0.9 over the prompt); the router scaled as mixtral's
  falcon   Falcon-7B's layout, BF16: multi_query (one kv head) in the old decoder, the fused
           query_key_value [q heads 0..7 | k | v] of 8 heads of head_dim 8, RoPE on every channel, one
           input_layernorm feeding attention and MLP in parallel (parallel_attn), ffn_hidden_size not
           written (4 * 64), exact gelu, no linear biases, LayerNorms with biases, tied
  falcon-40b  Falcon-40B's layout, BF16, sharded (3 files) + index: new_decoder_architecture, num_kv_heads 2
           of 8 heads (head_dim 16): query_key_value per kv group [its 4 q heads | k | v], query head h
           reading group h // 4; ln_attn and ln_mlp (num_ln_in_parallel_attn not written: 2), config keys
           as tiiuae/falcon-40b's converted config.json names them (num_hidden_layers, num_attention_heads,
           num_kv_heads), multi_query true written but ignored there, ffn_hidden_size 192 (not 4 * 128),
           untied lm_head
  falcon-sequential  F16: multi_query and parallel_attn false, so query_key_value per head [q | k | v]
           and a sequential layer: attention from input_layernorm, the MLP from post_attention_layernorm
  falcon-rw  Falcon-RW-1B's layout, BF16: falcon-sequential's, with alibi and bias true (no RoPE keys written):
           12 heads (not a power of 2; ALiBi slopes 2^-1 .. 2^-8, then 2^-0.5 .. 2^-3.5, which bfloat16 rounds) of
           head_dim 8, the bias (q.k + slope * j) / sqrt(head_dim), every FalconLinear (query_key_value, dense,
           dense_h_to_4h, dense_4h_to_h) with a bias, exact gelu MLP of 4 x 96, tied
  bloom    BLOOM, BF16, tensors without "transformer." as the released bigscience/bloom* files hold them: 6 heads
           (not a power of 2: ALiBi slopes 4^-1 .. 4^-4, then 2^-1 and 2^-3) of head_dim 16, word_embeddings_layernorm
           on the embeddings, query_key_value per head [q | k | v] with biases, every projection and LayerNorm with
           biases, BLOOM's tanh gelu MLP of 4 x 96, tied; config keys n_embed, n_layer, n_head, pretraining_tp 4
           (slow_but_exact false), n_inner null; a tokenizer.json with BLOOM's Split regex and no BOS (ids as its
           ByteLevel post-processor leaves them); variant bloom-prefixed: the same tensors under "transformer."
           as BloomForCausalLM.save_pretrained writes them
  mpt      MPT-7B's layout, BF16: 8 heads of head_dim 8, slopes 2^-1 .. 2^-8 (alibi_bias_max 8) relative to the
           last key, Wqkv [q | k | v], LayerNorms without bias, no linear biases (no_bias), exact gelu MLP of
           expansion_ratio 4, tied; config keys d_model, n_heads, n_layers, max_seq_len 2048, attn_config with
           softmax_scale, clip_qkv null and qk_ln false, layer_norm_epsilon not written; variant mpt-clip:
           attn_config.clip_qkv 2.5, Wqkv's output clamped before the split (over the prompt 3 % of its entries:
           q 5.5 %, k 2.3 %, v 1.5 %)
  olmo     OLMo-1, BF16: LLaMA's layer, GQA 4/2, every norm a LayerNorm without weight or bias at eps 1e-5 (no norm
           tensors in the file, no rms_norm_eps key), clip_qkv 2.5: q, k and v each clamped before RoPE (k and v
           rows at 1.5x: over the prompt 13 % of the entries are clamped, q 16 %, k 11 %, v 10 %), no biases
           (attention_bias false), untied; variant olmo-noclip (clip_qkv null)
  olmoe-clip  the olmoe weights with clip_qkv 3: the clamp after the q/k RMSNorms (over the prompt 9 % of the
           entries: q 12 %, k 11 %, v 0.7 %)
  starcoder2  StarCoder2, BF16: GQA 4/2, LayerNorms with biases at norm_epsilon 1e-6 (rms_norm_eps 1e-5 written
           beside it, as starcoder2-15b's config does; not read), q/k/v/o_proj and the non-gated MLP
           c_proj(tanh gelu(c_fc)) of 192 with biases (use_bias), RoPE over the whole head at rope_theta 100000
           (written), sliding_window 48 on every layer, tied (no lm_head.weight)
  gpt-bigcode  GPTBigCode (StarCoder's layout), BF16: GPT-2's sequential layer with learned positions (wpe) and
           nn.Linear weights [out, in] under transformer., multi_query: c_attn [q heads | k | v] of hidden + 2 x 16
           rows, one kv head for all 4 query heads, biases everywhere, n_inner null (4 x 64), tanh gelu, tied,
           q rows at 2x (BIGCODE_Q_GAIN) so that every layer keeps peaky heads
  gpt-bigcode-mha  F16: multi_query false: c_attn per head [q | k | v] (GPT-NeoX's layout, not GPT-2's), n_inner
           192 written
  stablelm  StableLM-2-1.6B's layout, BF16: LLaMA's names, GQA 4/2 of head_dim 32 (hidden 128; no head_dim key),
           every norm an nn.LayerNorm with weight and bias at layer_norm_eps 1e-6 (not StableLmConfig's 1e-5, which
           moves layer 0's values by 3 % of their max at the small BOS embedding; no rms_norm_eps key), q/k/v_proj
           biases (use_qkv_bias; none on o_proj or the gated SiLU MLP), RoPE on the first 8 of the 32 channels of each
           head (partial_rotary_factor 0.25; head 0's content row, channel 15, unturned), sequential
           (post_attention_layernorm), untied
  stablelm-parallel  F16, MHA of head_dim 16: use_parallel_residual (one input_layernorm feeding attention and
           MLP, x + attn(ln x) + mlp(ln x); no post_attention_layernorm tensors), partial_rotary_factor 0.5 (8 of 16
           channels), no biases but the LayerNorms' (use_qkv_bias false), layer_norm_eps 1e-5 written
  granite  Granite-3.x's layout, BF16: LLaMA's layer, GQA 4/2 of head_dim 16, RMSNorm at rms_norm_eps 1e-5,
           rope_theta 1e7 (3.1's), tied, no biases; embedding_multiplier 12 (the embeddings drawn at 1/12),
           attention_multiplier 1/32 in place of 1 / sqrt(16) (q rows at 8x, so the scores are the other fixtures';
           1 / sqrt(16) in its place sharpens them 8x), residual_multiplier 0.22 on the attention and the MLP
           branch, logits_scaling 8; on the prompt's first 160 tokens leaving out the embedding, attention or residual
           multiplier changes attention by >= 0.89 (from layer 1 on for the embedding's and the residual's) and the
           logits by >= 0.13 of their max
  mixtral-v5, qwen3-moe-v5, qwen2-moe-v5  the same weights as transformers 5.x holds them and its
           save_pretrained(save_original_format=False) writes them: experts fused into
           mlp.experts.gate_up_proj [E, 2 I, H] and mlp.experts.down_proj [E, H, I], the router under
           mlp.gate (Mixtral's renamed from block_sparse_moe.gate), rope_parameters; qwen3-moe's
           expert count under num_local_experts (Qwen3MoeConfig's attribute_map in 5.x); qwen2-moe's shared
           expert and its gate under their 4.x names, layer_types written (all full_attention)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bpe_encode import encode as bpe_ids  # noqa: E402
from checkpoint_files import Tensor, tokenizer_vocab_size, write_checkpoint  # noqa: E402
from fixture_specs import FIXTURES, FUSED_VARIANTS, STRIPPED, VARIANTS, VISION_TENSORS  # noqa: E402
from fixture_weights import random_weights  # noqa: E402
from hf_layouts import fuse_experts, hf_config, tensor_shapes, text_config  # noqa: E402
from make_bpe_tokenizer import write as write_bpe_tokenizer  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(REPO, "tests", "data", "fixture_corpus.txt")
PROMPT = os.path.join(REPO, "tests", "data", "fixture_prompt.txt")
MIN_PROMPT_TOKENS = 256

# spm_train options per tokenizer; ids as in LLaMA (unk 0, bos 1, eos 2) or Gemma.
TOKENIZERS = {
    "llama-bpe": ["--model_type=bpe", "--vocab_size=512", "--byte_fallback=true",
                  "--split_digits=true", "--normalization_rule_name=identity",
                  "--remove_extra_whitespaces=false",
                  "--unk_id=0", "--bos_id=1", "--eos_id=2", "--pad_id=-1"],
    "mistral-bpe": ["--model_type=bpe", "--vocab_size=400",
                    "--unk_id=0", "--bos_id=1", "--eos_id=2", "--pad_id=-1"],
    "gemma-unigram": ["--model_type=unigram", "--vocab_size=384",
                      "--pad_id=0", "--eos_id=1", "--bos_id=2", "--unk_id=3"],
}
# tokenizer.json tokenizers (make_bpe_tokenizer.py): flavour and merges (a vocabulary near the others').
BPE_TOKENIZERS = {"bloom-bpe": ("bloom", 252)}

# The standard keys GPT-2 (n_embd, n_layer, n_head), GPT-Neo (num_layers, num_heads), Falcon (num_kv_heads), BLOOM
# (n_embed) and MPT (d_model, n_layers, n_heads) spell their own way.
CONFIG_ALIASES = [("hidden_size", "n_embd"), ("num_hidden_layers", "n_layer"), ("num_attention_heads", "n_head"),
                  ("num_hidden_layers", "num_layers"), ("num_attention_heads", "num_heads"),
                  ("num_key_value_heads", "num_kv_heads"), ("hidden_size", "n_embed"), ("hidden_size", "d_model"),
                  ("num_hidden_layers", "n_layers"), ("num_attention_heads", "n_heads")]


def train_tokenizer(name, out_path):
    # Relative paths in a scratch dir: the model file records them, so it stays
    # byte-identical wherever the repository lives.
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copyfile(CORPUS, os.path.join(tmp, "corpus.txt"))
        cmd = ["spm_train", "--input=corpus.txt", f"--model_prefix={name}",
               "--character_coverage=1.0", "--num_threads=1", "--random_seed=1234",
               "--minloglevel=2"] + TOKENIZERS[name]
        subprocess.run(cmd, check=True, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        shutil.copyfile(os.path.join(tmp, name + ".model"), out_path)


def tokenizer(tok_dir, name):
    """The path of tokenizer `name` under tok_dir, made on first use: a sentencepiece model or a tokenizer.json."""
    if name in BPE_TOKENIZERS:
        path = os.path.join(tok_dir, name, "tokenizer.json")
        if not os.path.exists(path):
            write_bpe_tokenizer(os.path.dirname(path), *BPE_TOKENIZERS[name])
        return path
    path = os.path.join(tok_dir, name + ".model")
    if not os.path.exists(path):
        train_tokenizer(name, path)
    return path


def spm_ids(tokenizer, text_path):
    with open(text_path, "rb") as f:
        res = subprocess.run(["spm_encode", f"--model={tokenizer}", "--output_format=id"],
                             stdin=f, check=True, stdout=subprocess.PIPE)
    return [int(t) for t in res.stdout.split()]


def stripped(prefix):
    """Tensor names as the base model (OPTModel, BloomModel) saves them: no leading `prefix` (lm_head keeps its)."""
    return lambda name: name[len(prefix):] if prefix and name.startswith(prefix) else name


def write_fixture(out_dir, spec, tokenizer_path, config_overrides=None, fused_experts=False, strip=None):
    cfg = hf_config(dtype=spec["dtype"], vocab=tokenizer_vocab_size(tokenizer_path), **spec["config"])
    weights = random_weights(cfg, spec["seed"])
    if fused_experts:
        weights = fuse_experts(cfg, weights)
    cfg.update(config_overrides or {})
    for key in [k for k, v in (config_overrides or {}).items()
                if v is None and k in ("rotary_pct", "rotary_emb_base", "rope_theta", "rope_scaling", "num_experts")]:
        del cfg[key]  # a key the other layout does not write
    rename = stripped(strip)
    tensors = [Tensor.from_array(rename(name), spec["dtype"], weights[name])
               for name, _ in tensor_shapes(cfg, fused_experts)]
    if spec.get("vision"):
        tensors += [Tensor.from_array(name, spec["dtype"], np.full(shape, np.nan, np.float32))
                    for name, shape in VISION_TENSORS]
    total = sum(t.nbytes for t in tensors)
    max_shard = None if spec["shards"] == 1 else -(-total // spec["shards"])
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    files = write_checkpoint(out_dir, cfg, tensors, tokenizer_path, max_shard)
    if len(files) < spec["shards"]:
        raise RuntimeError(f"{out_dir}: expected {spec['shards']} shards, got {len(files)}")
    return cfg, files


def main(argv):
    if len(argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    out = os.path.abspath(argv[1])
    os.makedirs(out, exist_ok=True)
    tok_dir = os.path.join(out, "tokenizers")
    os.makedirs(tok_dir, exist_ok=True)
    summary = {"prompt": PROMPT, "fixtures": {}}
    todo = [(n, s, None) for n, s in FIXTURES.items()] + \
           [(n, FIXTURES[base], over) for n, (base, over) in VARIANTS.items()]
    for name, spec, overrides in todo:
        tok = tokenizer(tok_dir, spec["tokenizer"])
        cfg, files = write_fixture(os.path.join(out, name), spec, tok, overrides, name in FUSED_VARIANTS,
                                   STRIPPED.get(name))
        if tok.endswith(".json"):  # BLOOM's: its tokenizer_config.json beside it; no BOS
            shutil.copyfile(os.path.join(os.path.dirname(tok), "tokenizer_config.json"),
                            os.path.join(out, name, "tokenizer_config.json"))
            with open(PROMPT, encoding="utf-8") as f:
                n_tokens = len(bpe_ids(tok, f.read().removesuffix("\n")))
        else:
            n_tokens = len(spm_ids(tok, PROMPT)) + 1  # + BOS
        if n_tokens < MIN_PROMPT_TOKENS:
            raise RuntimeError(f"{name}: prompt is only {n_tokens} tokens")
        summary["fixtures"][name] = {"dir": os.path.join(out, name), "files": files,
                                     "dtype": spec["dtype"], "prompt_tokens": n_tokens}
        text = dict(text_config(cfg)[0])
        for std, alias in CONFIG_ALIASES:
            if alias in text:
                text.setdefault(std, text[alias])
        if text.get("multi_query") and cfg["model_type"] == "gpt_bigcode":  # GPTBigCode's one kv head
            text.setdefault("num_key_value_heads", 1)
        print(f"{name:17s} {cfg['model_type']:11s} {spec['dtype']:4s} hidden={text['hidden_size']} "
              f"layers={text['num_hidden_layers']} heads={text['num_attention_heads']}/"
              f"{text.get('num_key_value_heads', text['num_attention_heads'])} head_dim={text.get('head_dim', '-')} "
              f"vocab={text['vocab_size']} window={text.get('sliding_window', text.get('window_size'))} "
              f"files={len(files)} prompt_tokens={n_tokens}")
    with open(os.path.join(out, "fixtures.json"), "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
