#!/usr/bin/python3
"""Random-weight Hugging Face checkpoints (config.json + safetensors + tokenizer.model or .json).

Writes a model directory of any family attngeom reads (LLaMA, Mistral, Gemma, Gemma-2,
Gemma-3, Qwen2, Qwen3, OLMo, OLMo-2, OLMo-3, GPT-NeoX, GPT-2, GPT-J, GPT-Neo, OPT, Phi, Phi-3, Mixtral, OLMoE,
Qwen3-MoE, Qwen2-MoE, SmolLM3, Falcon, BLOOM, MPT, StarCoder2, GPTBigCode, StableLM, Granite) and any shape,
streaming every tensor to disk in chunks, so a 7B bf16 checkpoint (13.5 GB) never sits in RAM.
Values are finite and scaled like a trained model's (projections ~ 1/sqrt(fan_in),
norm weights ~ 1, or ~ 0 for Gemma's (1 + w)); they carry no meaning.

The families' config fields and tensor layouts are in hf_layouts.py, the files' writer in
checkpoint_files.py.

  make_random_checkpoint.py --preset llama-1b --tokenizer T.model --out DIR
  make_random_checkpoint.py --model-type mistral --hidden 64 --intermediate 128 \
      --layers 2 --heads 4 --kv-heads 2 --tokenizer T.model --dtype f16 --out DIR
Presets: llama2-7b, mistral-7b, mixtral-8x7b, olmoe-1b-7b, qwen3-30b-a3b, qwen1.5-moe-a2.7b, gemma-7b, llama3-8b,
qwen2.5-7b, llama-1b, pythia-6.9b, pythia-1.4b, gpt2-xl, gpt-j-6b, gpt-neo-1.3b, opt-6.7b, falcon-7b, falcon-40b,
bloom-7b1 (its tensors without "transformer.", as bigscience/bloom-7b1 holds them), mpt-7b, olmo-7b, starcoder2-7b,
stablelm-2-1.6b, granite-3-8b, phi-3-mini, smollm3-3b, h1024-l8 (a LLaMA
of hidden size 1024, 8 layers and 16 heads: mid-sized, for memory measurements). Explicit
flags override a preset: `--preset mixtral-8x7b --layers 4` keeps its layer shapes with 4 of its
32 layers (12 GB in bf16 instead of 93). --tokenizer takes a sentencepiece tokenizer.model or a Hugging Face
tokenizer.json, copied under its own name. Mixtures of experts: --experts, --experts-per-tok,
--moe-intermediate (Qwen3-MoE's and Qwen2-MoE's expert width; Qwen2-MoE's shared expert is
--intermediate wide, as its dense layers), and --fused-experts to write the experts as
transformers 5.x holds them (save_pretrained(save_original_format=False): the router under
mlp.gate, mlp.experts.gate_up_proj [experts, 2 * inter, hidden] and mlp.experts.down_proj
[experts, hidden, inter] in place of one tensor per expert). Falcon: --kv-heads 1 writes Falcon-7B's
layout (multi_query), any other count Falcon-40B's (new_decoder_architecture with num_kv_heads). GPTBigCode:
--kv-heads 1 writes multi_query (StarCoder's), the default (one per head) multi_query false.
"""
import argparse
import math
import sys

import numpy as np

from checkpoint_files import DTYPE_ALIASES, Tensor, encode, tokenizer_vocab_size, write_checkpoint
from hf_layouts import ARCHITECTURES, GEMMAS, MOE, hf_config, tensor_shapes, text_config

PRESETS = {
    # shape fields: hidden, intermediate, layers, heads, kv_heads, head_dim, vocab
    "llama2-7b": dict(model_type="llama", hidden=4096, intermediate=11008, layers=32,
                      heads=32, kv_heads=32, head_dim=128, vocab=32000, rope_theta=10000.0,
                      rms_norm_eps=1e-5, max_positions=4096),
    "mistral-7b": dict(model_type="mistral", hidden=4096, intermediate=14336, layers=32,
                       heads=32, kv_heads=8, head_dim=128, vocab=32000, rope_theta=10000.0,
                       rms_norm_eps=1e-5, max_positions=32768, sliding_window=4096),
    "gemma-7b": dict(model_type="gemma", hidden=3072, intermediate=24576, layers=28,
                     heads=16, kv_heads=16, head_dim=256, vocab=256000, rope_theta=10000.0,
                     rms_norm_eps=1e-6, max_positions=8192),
    # TinyLlama-1.1B's shape: the common "1B llama" with a sentencepiece vocabulary.
    "llama-1b": dict(model_type="llama", hidden=2048, intermediate=5632, layers=22,
                     heads=32, kv_heads=4, head_dim=64, vocab=32000, rope_theta=10000.0,
                     rms_norm_eps=1e-5, max_positions=2048),
    # Pythia-6.9B (GPT-NeoX): 32 x 128 heads, rotary_pct 0.25, parallel residual, untied.
    "pythia-6.9b": dict(model_type="gpt_neox", hidden=4096, intermediate=16384, layers=32,
                        heads=32, kv_heads=32, head_dim=128, vocab=50432, rope_theta=10000.0,
                        rms_norm_eps=1e-5, max_positions=2048, bos_token_id=0, eos_token_id=0),
    # Pythia-1.4B: 16 x 128 heads, the same layout; 2.8 GB in bf16.
    "pythia-1.4b": dict(model_type="gpt_neox", hidden=2048, intermediate=8192, layers=24,
                        heads=16, kv_heads=16, head_dim=128, vocab=50304, rope_theta=10000.0,
                        rms_norm_eps=1e-5, max_positions=2048, bos_token_id=0, eos_token_id=0),
    # GPT-2 XL: 48 layers of 25 x 64 heads, learned positions (1024), tied 50,257-token vocabulary.
    "gpt2-xl": dict(model_type="gpt2", hidden=1600, intermediate=6400, layers=48, heads=25, kv_heads=25,
                    head_dim=64, vocab=50257, rms_norm_eps=1e-5, max_positions=1024,
                    tie_word_embeddings=True, bos_token_id=50256, eos_token_id=50256),
    # GPT-J-6B: 28 layers of 16 x 256 heads, rotary_dim 64 (interleaved pairs), n_inner null (4 * 4096),
    # untied 50,400-token vocabulary with lm_head's bias.
    "gpt-j-6b": dict(model_type="gptj", hidden=4096, intermediate=16384, layers=28, heads=16, kv_heads=16,
                     head_dim=256, vocab=50400, rms_norm_eps=1e-5, max_positions=2048,
                     bos_token_id=50256, eos_token_id=50256, extra={"rotary_dim": 64}),
    # GPT-Neo 1.3B: 24 layers of 16 x 128 heads, global and local (window_size 256) in turn, learned
    # positions (2048), intermediate_size null (4 * 2048), tied 50,257-token vocabulary.
    "gpt-neo-1.3b": dict(model_type="gpt_neo", hidden=2048, intermediate=8192, layers=24, heads=16, kv_heads=16,
                         head_dim=128, vocab=50257, rms_norm_eps=1e-5, max_positions=2048, sliding_window=256,
                         tie_word_embeddings=True, bos_token_id=50256, eos_token_id=50256),
    # OPT-6.7B: 32 layers of 32 x 128 heads, ffn_dim 16384, learned positions (2048 + 2 rows), biases everywhere,
    # tied 50,272-token vocabulary, bos and eos "</s>" (2), pad 1.
    "opt-6.7b": dict(model_type="opt", hidden=4096, intermediate=16384, layers=32, heads=32, kv_heads=32,
                     head_dim=128, vocab=50272, max_positions=2048, bos_token_id=2, eos_token_id=2, pad_token_id=1),
    # Falcon-7B: 32 layers of 71 x 64 heads sharing one kv head (multi_query), one LayerNorm feeding attention
    # and MLP in parallel, ffn 4 x 4544, tied 65,024-token vocabulary, bos and eos 11.
    "falcon-7b": dict(model_type="falcon", hidden=4544, intermediate=18176, layers=32, heads=71, kv_heads=1,
                      head_dim=64, vocab=65024, rms_norm_eps=1e-5, max_positions=2048, bos_token_id=11,
                      eos_token_id=11),
    # Falcon-40B: 60 layers of 128 x 64 heads in 8 kv groups (new_decoder_architecture), ln_attn and ln_mlp,
    # ffn 4 x 8192, tied (its config writes no tie_word_embeddings), bos and eos 11.
    "falcon-40b": dict(model_type="falcon", hidden=8192, intermediate=32768, layers=60, heads=128, kv_heads=8,
                       head_dim=64, vocab=65024, rms_norm_eps=1e-5, max_positions=2048, bos_token_id=11,
                       eos_token_id=11),
    # BLOOM-7B1: 30 layers of 32 x 128 heads, ALiBi, biases everywhere, MLP 4 x 4096, tied 250,880-token
    # vocabulary, <s> 1 and </s> 2 (pad 3); written without "transformer." (PRESET_PREFIX_STRIPPED).
    "bloom-7b1": dict(model_type="bloom", hidden=4096, intermediate=16384, layers=30, heads=32, kv_heads=32,
                      head_dim=128, vocab=250880, rms_norm_eps=1e-5, max_positions=2048, bos_token_id=1,
                      eos_token_id=2),
    # MPT-7B: 32 layers of 32 x 128 heads, ALiBi (alibi_bias_max 8) over max_seq_len 2048, no biases (no_bias),
    # LayerNorms without bias, expansion_ratio 4, tied 50,432-token vocabulary (GPT-NeoX-20B's tokenizer:
    # <|endoftext|> 0).
    "mpt-7b": dict(model_type="mpt", hidden=4096, intermediate=16384, layers=32, heads=32, kv_heads=32,
                   head_dim=128, vocab=50432, max_positions=2048, bos_token_id=0, eos_token_id=0),
    # OLMo-7B-0424-hf: 32 layers of 32 x 128 heads, weightless LayerNorms (no norm tensors), clip_qkv 8, no biases,
    # untied 50,304-token vocabulary (GPT-NeoX-20B's tokenizer: no BOS, eos 50279, pad 1).
    "olmo-7b": dict(model_type="olmo", hidden=4096, intermediate=11008, layers=32, heads=32, kv_heads=32,
                    head_dim=128, vocab=50304, rope_theta=10000.0, max_positions=4096, bos_token_id=None,
                    eos_token_id=50279, pad_token_id=1, extra={"clip_qkv": 8.0}),
    # StarCoder2-7B: 32 layers of 36 x 128 heads on 4 kv heads, LayerNorms and every projection with biases, MLP
    # 18432, window 4096 on every layer, rope_theta 1e6, tied 49,152-token vocabulary, bos and eos 0.
    "starcoder2-7b": dict(model_type="starcoder2", hidden=4608, intermediate=18432, layers=32, heads=36, kv_heads=4,
                          head_dim=128, vocab=49152, rope_theta=1000000.0, rms_norm_eps=1e-5, max_positions=16384,
                          sliding_window=4096, bos_token_id=0, eos_token_id=0),
    # StableLM-2-1.6B: 24 layers of 32 x 64 heads (MHA), LayerNorms with biases, q/k/v biases (use_qkv_bias), RoPE
    # on a quarter of each head, sequential, untied 100,352-token vocabulary, bos and eos 100257 (<|endoftext|>).
    "stablelm-2-1.6b": dict(model_type="stablelm", hidden=2048, intermediate=5632, layers=24, heads=32, kv_heads=32,
                            head_dim=64, vocab=100352, rope_theta=10000.0, rms_norm_eps=1e-5, max_positions=4096,
                            bos_token_id=100257, eos_token_id=100257, extra={"use_qkv_bias": True}),
    # Granite-3.1-8B: 40 layers of 32 x 128 heads on 8 kv heads, MLP 12800, embeddings x 12, scores x 1/128,
    # branches x 0.22, logits / 16, rope_theta 1e7 (3.0's: 1e4), tied 49,155-token vocabulary, bos, eos and pad 0.
    "granite-3-8b": dict(model_type="granite", hidden=4096, intermediate=12800, layers=40, heads=32, kv_heads=8,
                         head_dim=128, vocab=49155, rope_theta=10000000.0, rms_norm_eps=1e-5, max_positions=131072,
                         tie_word_embeddings=True, bos_token_id=0, eos_token_id=0, pad_token_id=0,
                         extra={"embedding_multiplier": 12.0, "attention_multiplier": 0.0078125,
                                "residual_multiplier": 0.22, "logits_scaling": 16.0}),
    # Phi-3-mini-4k: 32 x 96 heads, fused qkv_proj and gate_up_proj, window 2047.
    "phi-3-mini": dict(model_type="phi3", hidden=3072, intermediate=8192, layers=32, heads=32, kv_heads=32,
                       head_dim=96, vocab=32064, rope_theta=10000.0, rms_norm_eps=1e-5, max_positions=4096,
                       sliding_window=2047, bos_token_id=1, eos_token_id=32000),
    # SmolLM3-3B: GQA 4 (16 / 4) of head_dim 128, every fourth layer NoPE (no_rope_layers written out, as
    # its config.json does), rope_theta 5e6, tied 128,256-token vocabulary.
    "smollm3-3b": dict(model_type="smollm3", hidden=2048, intermediate=11008, layers=36, heads=16, kv_heads=4,
                       head_dim=128, vocab=128256, rope_theta=5000000.0, rms_norm_eps=1e-6, max_positions=65536,
                       tie_word_embeddings=True, bos_token_id=128000, eos_token_id=128001,
                       extra={"no_rope_layers": [int((i + 1) % 4 != 0) for i in range(36)]}),
    # Mixtral-8x7B: Mistral's attention (GQA 8, no window), 8 experts of 14336, top-2, for its
    # layer shapes (its 93 GiB of bf16 weights need not fit in memory).
    "mixtral-8x7b": dict(model_type="mixtral", hidden=4096, intermediate=14336, layers=32,
                         heads=32, kv_heads=8, head_dim=128, vocab=32000, rope_theta=1000000.0,
                         rms_norm_eps=1e-5, max_positions=32768),
    # OLMoE-1B-7B-0924: 16 layers of 64 experts of 1024, top-8 not renormalised, q/k norms over
    # the whole projection, MHA, untied 50,304-token vocabulary.
    "olmoe-1b-7b": dict(model_type="olmoe", hidden=2048, intermediate=1024, layers=16, heads=16, kv_heads=16,
                        head_dim=128, vocab=50304, rope_theta=10000.0, rms_norm_eps=1e-5, max_positions=4096,
                        experts=64, experts_per_tok=8, bos_token_id=1, eos_token_id=50279),
    # Qwen3-30B-A3B: 48 layers of 128 experts of 768 (every layer sparse), top-8 renormalised, GQA 8
    # (32 / 4) of head_dim 128 (4096 != hidden 2048), untied 151,936-token vocabulary.
    "qwen3-30b-a3b": dict(model_type="qwen3_moe", hidden=2048, intermediate=6144, moe_intermediate=768, layers=48,
                          heads=32, kv_heads=4, head_dim=128, vocab=151936, rope_theta=1000000.0,
                          rms_norm_eps=1e-6, max_positions=40960, experts=128, experts_per_tok=8,
                          bos_token_id=151643, eos_token_id=151645),
    # Qwen1.5-MoE-A2.7B: 24 layers (every one sparse) of 60 experts of 1408, top-4 not renormalised, a shared
    # expert of 5632 gated by a sigmoid, MHA (16 heads) with q/k/v biases, untied 151,936-token vocabulary.
    "qwen1.5-moe-a2.7b": dict(model_type="qwen2_moe", hidden=2048, intermediate=5632, moe_intermediate=1408,
                              layers=24, heads=16, kv_heads=16, head_dim=128, vocab=151936, rope_theta=1000000.0,
                              rms_norm_eps=1e-6, max_positions=8192, experts=60, experts_per_tok=4,
                              bos_token_id=151643, eos_token_id=151643),
    # LLaMA-3.1-8B: GQA 8, 128,256-token vocabulary, llama3 RoPE scaling.
    "llama3-8b": dict(model_type="llama", hidden=4096, intermediate=14336, layers=32,
                      heads=32, kv_heads=8, head_dim=128, vocab=128256, rope_theta=500000.0,
                      rms_norm_eps=1e-5, max_positions=131072, bos_token_id=128000, eos_token_id=128001,
                      extra={"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                              "high_freq_factor": 4.0,
                                              "original_max_position_embeddings": 8192}}),
    # Qwen2.5-7B: q/k/v biases, GQA 7 (28 / 4), untied 152,064-token vocabulary.
    "qwen2.5-7b": dict(model_type="qwen2", hidden=3584, intermediate=18944, layers=28,
                       heads=28, kv_heads=4, head_dim=128, vocab=152064, rope_theta=1000000.0,
                       rms_norm_eps=1e-6, max_positions=32768, sliding_window=131072,
                       tie_word_embeddings=False, bos_token_id=151643, eos_token_id=151643),
    # Mid-sized, for memory measurements; vocab defaults to the tokenizer's.
    "h1024-l8": dict(model_type="llama", hidden=1024, intermediate=2816, layers=8,
                     heads=16, kv_heads=16, head_dim=64, vocab=None, rope_theta=10000.0,
                     rms_norm_eps=1e-5, max_positions=8192),
}

# Presets whose released files name their tensors as the base model saves them, without the CausalLM's prefix
# (BloomModel's h.*, word_embeddings*, ln_f; an untied lm_head keeps its name).
PRESET_PREFIX_STRIPPED = {"bloom-7b1": "transformer."}


# --- random weights, generated as bit patterns so 7B models write at disk speed ---

# (sign mask, exponent shift, exponent bias, mantissa mask, storage dtype) per dtype
_BITS = {"BF16": (0x8000, 7, 127, 0x007F, np.uint16),
         "F16": (0x8000, 10, 15, 0x03FF, np.uint16),
         "F32": (0x80000000, 23, 127, 0x007FFFFF, np.uint32)}


def random_chunks(dtype, count, scale, rng, positive=False, chunk_elems=1 << 24):
    """Random values with |x| in [scale/8, 4*scale), random (or + when positive) sign.

    Drawn as raw bits: 2 random exponent bits put the magnitude in one of the four
    octaves around `scale`, so every value is finite and sensibly scaled."""
    sign, shift, bias, mant, store = _BITS[dtype]
    base = int(math.floor(math.log2(scale))) - 2 + bias
    if not 1 <= base <= (0x1F if dtype == "F16" else 0xFF) - 4:
        raise ValueError(f"scale {scale} not representable in {dtype}")
    done = 0
    while done < count:
        n = min(chunk_elems, count - done)
        words = -(-n * np.dtype(store).itemsize // 8)  # draw 64-bit words: fastest
        r = rng.integers(0, 2**64 - 1, size=words, dtype=np.uint64, endpoint=True).view(store)[:n]
        # keep sign, mantissa and the 2 low exponent bits; add the base exponent
        # (no carry: base + 3 fits the exponent field)
        r &= store((mant if positive else sign | mant) | (3 << shift))
        r += store(base << shift)
        yield r.tobytes()
        done += n


def constant_chunks(dtype, count, value):
    yield encode(np.full(count, value, dtype=np.float32), dtype)


# The norms' weights by name (MPT's norm_1, norm_2, norm_f too); the tests read this tuple.
NORM_WEIGHTS = ("norm.weight", "ln_1.weight", "ln_2.weight", "ln_f.weight", "final_layernorm.weight", "ln_attn.weight",
                "ln_mlp.weight", "norm_1.weight", "norm_2.weight", "norm_f.weight")


def random_tensors(config, dtype, seed, fused_experts=False):
    """Tensor list for a random checkpoint; each tensor's values come from its own seed."""
    _, model_type, _ = text_config(config)
    gemma = model_type in GEMMAS
    out = []
    for k, (name, shape) in enumerate(tensor_shapes(config, fused_experts)):
        rng_seed = [seed, k]
        count = math.prod(shape)
        if name.endswith(NORM_WEIGHTS):
            # w in [1/4, 4) for LLaMA-style norms; w = 0 for Gemma's (1 + w).
            chunks = (lambda c=count: constant_chunks(dtype, c, 0.0)) if gemma else \
                     (lambda c=count, s=rng_seed: random_chunks(dtype, c, 1.0, np.random.default_rng(s), True))
        else:
            embedding = name.endswith(("model.embed_tokens.weight", "embed_in.weight", "wte.weight",
                                       "word_embeddings.weight"))
            scale = 1.0 if embedding and not gemma else 0.0625 if len(shape) == 1 else shape[-1] ** -0.5
            chunks = lambda c=count, s=rng_seed, sc=scale: random_chunks(
                dtype, c, sc, np.random.default_rng(s))
        out.append(Tensor(name, dtype, shape, chunks))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", choices=sorted(PRESETS))
    ap.add_argument("--model-type", choices=sorted(ARCHITECTURES))
    for flag in ["hidden", "intermediate", "layers", "heads", "kv-heads", "head-dim", "vocab"]:
        ap.add_argument("--" + flag, type=int)
    ap.add_argument("--sliding-window", type=int,
                    help="mistral, starcoder2, qwen2/3, qwen2_moe and smollm3 (unused there), gemma2/3, olmo3, gpt_neo "
                         "(its local layers' window_size); omit for null (gemma2/3, olmo3: 4096; gpt_neo: 256)")
    ap.add_argument("--experts", type=int, help="mixtral, olmoe, qwen3_moe, qwen2_moe: experts per sparse layer")
    ap.add_argument("--experts-per-tok", type=int, help="mixtral, olmoe, qwen3_moe, qwen2_moe: experts each token uses")
    ap.add_argument("--moe-intermediate", type=int,
                    help="qwen3_moe, qwen2_moe: each expert's width (default --intermediate)")
    ap.add_argument("--fused-experts", action="store_true",
                    help="write the experts fused, as transformers 5.x's save_original_format=False does")
    ap.add_argument("--dtype", default="bf16", choices=sorted(DTYPE_ALIASES))
    ap.add_argument("--tokenizer", required=True, help="tokenizer.model (sentencepiece) or tokenizer.json to copy")
    ap.add_argument("--out", required=True, help="output model directory")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-shard-gb", type=float, default=5.0,
                    help="shard when the weights exceed this (0: never)")
    ap.add_argument("--bos-id", type=int, help="default: the preset's, else 1")
    ap.add_argument("--eos-id", type=int, help="default: the preset's, else 2")
    args = ap.parse_args(argv)

    shape = dict(PRESETS[args.preset]) if args.preset else {}
    for key in ["model_type", "hidden", "intermediate", "layers", "heads", "kv_heads",
                "head_dim", "vocab", "sliding_window", "experts", "experts_per_tok", "moe_intermediate"]:
        if getattr(args, key) is not None:
            shape[key] = getattr(args, key)
    for key in ["model_type", "hidden", "intermediate", "layers", "heads"]:
        if shape.get(key) is None:
            ap.error(f"--{key.replace('_', '-')} is required without a preset")
    shape.setdefault("kv_heads", shape["heads"])
    if shape["kv_heads"] > shape["heads"] or shape["heads"] % shape["kv_heads"]:
        ap.error(f"heads {shape['heads']} is not a multiple of kv_heads {shape['kv_heads']}")
    if shape.get("head_dim") is None:
        shape["head_dim"] = shape["hidden"] // shape["heads"]
    try:
        tok_vocab = tokenizer_vocab_size(args.tokenizer)
    except (OSError, ValueError, IndexError, KeyError, TypeError) as e:
        print(f"{ap.prog}: error: --tokenizer {args.tokenizer}: expected a sentencepiece tokenizer.model or a "
              f"Hugging Face tokenizer.json ({e})", file=sys.stderr)
        return 2
    if shape.get("vocab") is None:
        shape["vocab"] = tok_vocab
    if shape["vocab"] < tok_vocab:
        ap.error(f"vocab {shape['vocab']} is smaller than the tokenizer's {tok_vocab}")
    if shape["model_type"] in ("llama", "gemma", "olmo2", "gpt_neox", "gpt2", "gptj", "phi", "phi3", "olmoe",
                               "qwen3_moe", "opt", "falcon", "olmo", "gpt_bigcode", "stablelm", "granite"):
        shape.pop("sliding_window", None)
    if args.fused_experts and shape["model_type"] not in MOE:
        ap.error("--fused-experts needs a mixture of experts (mixtral, olmoe, qwen3_moe, qwen2_moe)")
    dtype = DTYPE_ALIASES[args.dtype]
    for key, given, fallback in (("bos_token_id", args.bos_id, 1), ("eos_token_id", args.eos_id, 2)):
        shape[key] = given if given is not None else shape.get(key, fallback)
    config = hf_config(dtype=dtype, **shape)
    tensors = random_tensors(config, dtype, args.seed, args.fused_experts)
    prefix = PRESET_PREFIX_STRIPPED.get(args.preset)
    for t in tensors:
        if prefix and t.name.startswith(prefix):
            t.name = t.name[len(prefix):]
    total = sum(t.nbytes for t in tensors)
    print(f"writing {args.out}: {shape['model_type']} {len(tensors)} tensors, "
          f"{total / 2**30:.2f} GiB {dtype}", flush=True)
    files = write_checkpoint(args.out, config, tensors, args.tokenizer,
                             int(args.max_shard_gb * 1e9) if args.max_shard_gb > 0 else None)
    print(f"wrote {', '.join(files)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
