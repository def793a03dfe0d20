"""The fixtures of make_fixtures.py (its docstring says what each one exercises): per fixture its tokenizer, dtype,
shard count, weight seed and hf_layouts.hf_config arguments; the config-only variants of them and how some are
written (fused experts, stripped names, NaN vision tensors)."""
from hf_layouts_gpt import MPT_ATTN_CONFIG

# clip_qkv of olmo, olmoe-clip and mpt-clip: below the largest q, k, v entries at the fixtures' weight scale, so that
# a share of them is clamped; StarCoder2's norm_epsilon, away from its default 1e-5 and from the rms_norm_eps written
# beside it (as bigcode/starcoder2-15b's config writes one; transformers reads neither that nor a layer_norm_epsilon).
OLMO_CLIP, OLMOE_CLIP, MPT_CLIP = 2.5, 3.0, 2.5
STARCODER2_EPS = 1e-6
# StableLM's layer_norm_eps away from StableLmConfig's 1e-5 (which stablelm-parallel writes). Granite's multipliers:
# Granite-3.x-8B's embedding 12 and residual 0.22; attention 1/32, an eighth of 1 / sqrt(head_dim 16) (as the 2B's
# 1/64 of its 1 / sqrt(64); the 8B's 1/128 is an eleventh of its 1 / sqrt(128)); logits 8 (the 8B's 16).
STABLELM_EPS = 1e-6
GRANITE_MULTIPLIERS = {"embedding_multiplier": 12.0, "attention_multiplier": 0.03125, "residual_multiplier": 0.22,
                       "logits_scaling": 8.0}

FIXTURES = {
    "llama": dict(
        tokenizer="llama-bpe", dtype="F32", shards=1, seed=101,
        config=dict(model_type="llama", hidden=64, intermediate=176, layers=2, heads=4,
                    kv_heads=4, head_dim=16, rope_theta=10000.0, rms_norm_eps=1e-5,
                    max_positions=2048, write_head_dim=False, bos_token_id=1, eos_token_id=2)),
    "mistral": dict(
        tokenizer="mistral-bpe", dtype="F16", shards=1, seed=202,
        config=dict(model_type="mistral", hidden=64, intermediate=192, layers=3, heads=4,
                    kv_heads=2, head_dim=16, rope_theta=1000000.0, rms_norm_eps=1e-6,
                    max_positions=4096, sliding_window=64, bos_token_id=1, eos_token_id=2)),
    "gemma": dict(
        tokenizer="gemma-unigram", dtype="BF16", shards=3, seed=303,
        config=dict(model_type="gemma", hidden=96, intermediate=256, layers=2, heads=4,
                    kv_heads=1, head_dim=32, rope_theta=50000.0, rms_norm_eps=1e-6,
                    max_positions=8192, bos_token_id=2, eos_token_id=1, pad_token_id=0)),
    "llama3": dict(
        tokenizer="llama-bpe", dtype="BF16", shards=1, seed=404,
        config=dict(model_type="llama", hidden=64, intermediate=160, layers=2, heads=4,
                    kv_heads=2, head_dim=16, rope_theta=500000.0, rms_norm_eps=1e-5,
                    max_positions=4096, bos_token_id=1, eos_token_id=2,
                    extra={"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                            "high_freq_factor": 4.0,
                                            "original_max_position_embeddings": 64}})),
    "qwen2": dict(
        tokenizer="mistral-bpe", dtype="BF16", shards=1, seed=505,
        config=dict(model_type="qwen2", hidden=64, intermediate=176, layers=3, heads=4,
                    kv_heads=2, head_dim=16, rope_theta=1000000.0, rms_norm_eps=1e-6,
                    max_positions=4096, sliding_window=48, tie_word_embeddings=True,
                    bos_token_id=1, eos_token_id=2,
                    extra={"use_sliding_window": True, "max_window_layers": 1})),
    "qwen3": dict(
        tokenizer="llama-bpe", dtype="F16", shards=1, seed=606,
        config=dict(model_type="qwen3", hidden=64, intermediate=160, layers=2, heads=4,
                    kv_heads=2, head_dim=32, rope_theta=1000000.0, rms_norm_eps=1e-6,
                    max_positions=4096, bos_token_id=1, eos_token_id=2,
                    extra={"attention_bias": True})),
    "gemma2": dict(
        tokenizer="gemma-unigram", dtype="BF16", shards=2, seed=707,
        config=dict(model_type="gemma2", hidden=96, intermediate=192, layers=3, heads=4,
                    kv_heads=2, head_dim=32, rope_theta=10000.0, rms_norm_eps=1e-6,
                    max_positions=8192, sliding_window=40, bos_token_id=2, eos_token_id=1,
                    pad_token_id=0,
                    extra={"query_pre_attn_scalar": 24, "attn_logit_softcapping": 6.0,
                           "final_logit_softcapping": 2.0})),
    "gemma3-text": dict(
        tokenizer="gemma-unigram", dtype="F32", shards=1, seed=808,
        config=dict(model_type="gemma3_text", hidden=64, intermediate=160, layers=3, heads=4,
                    kv_heads=1, head_dim=24, rope_theta=1000000.0, rms_norm_eps=1e-6,
                    max_positions=8192, sliding_window=32, bos_token_id=2, eos_token_id=1,
                    pad_token_id=0,
                    extra={"query_pre_attn_scalar": 32, "rope_local_base_freq": 10000.0,
                           "rope_scaling": {"rope_type": "linear", "factor": 4.0},
                           "layer_types": ["sliding_attention", "full_attention", "sliding_attention"]})),
    "gemma3": dict(
        tokenizer="gemma-unigram", dtype="BF16", shards=2, seed=909, vision=True,
        config=dict(model_type="gemma3", hidden=64, intermediate=128, layers=4, heads=4,
                    kv_heads=2, head_dim=16, rope_theta=1000000.0, rms_norm_eps=1e-6,
                    max_positions=8192, sliding_window=36, bos_token_id=2, eos_token_id=1,
                    pad_token_id=0,
                    extra={"sliding_window_pattern": 3, "rope_local_base_freq": 10000.0,
                           "rope_scaling": {"rope_type": "linear", "factor": 8.0}})),
    "olmo2": dict(
        tokenizer="llama-bpe", dtype="F32", shards=1, seed=1010,
        config=dict(model_type="olmo2", hidden=64, intermediate=160, layers=2, heads=4,
                    kv_heads=2, head_dim=16, rope_theta=500000.0, rms_norm_eps=1e-6,
                    max_positions=4096, bos_token_id=1, eos_token_id=2)),
    "pythia": dict(
        tokenizer="llama-bpe", dtype="F16", shards=1, seed=1111,
        config=dict(model_type="gpt_neox", hidden=64, intermediate=256, layers=3, heads=4,
                    kv_heads=4, head_dim=16, rope_theta=10000.0, rms_norm_eps=1e-5,
                    max_positions=2048, bos_token_id=1, eos_token_id=2,
                    extra={"rotary_pct": 0.5})),
    "gpt2": dict(
        tokenizer="mistral-bpe", dtype="BF16", shards=1, seed=1212,
        config=dict(model_type="gpt2", hidden=64, intermediate=192, layers=3, heads=4,
                    kv_heads=4, head_dim=16, rms_norm_eps=1e-5, max_positions=1024,
                    tie_word_embeddings=True, bos_token_id=1, eos_token_id=2)),
    "phi3": dict(
        tokenizer="mistral-bpe", dtype="BF16", shards=1, seed=1414,
        config=dict(model_type="phi3", hidden=64, intermediate=160, layers=2, heads=4,
                    kv_heads=2, head_dim=16, rope_theta=10000.0, rms_norm_eps=1e-5,
                    max_positions=1024, sliding_window=200, bos_token_id=1, eos_token_id=2,
                    tie_word_embeddings=False,
                    extra={"original_max_position_embeddings": 256, "partial_rotary_factor": 0.75,
                           "rope_scaling": {"type": "longrope",
                                            "short_factor": [1.0, 1.1, 1.3, 1.8, 2.5, 3.0],
                                            "long_factor": [1.0, 1.5, 2.5, 4.0, 8.0, 16.0]}})),
    "phi": dict(
        tokenizer="llama-bpe", dtype="F32", shards=1, seed=1313,
        config=dict(model_type="phi", hidden=80, intermediate=192, layers=2, heads=4,
                    kv_heads=4, head_dim=20, rope_theta=10000.0, rms_norm_eps=1e-5,
                    max_positions=2048, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)),
    "mixtral": dict(
        tokenizer="mistral-bpe", dtype="BF16", shards=1, seed=1515,
        config=dict(model_type="mixtral", hidden=64, intermediate=96, layers=2, heads=4,
                    kv_heads=2, head_dim=16, rope_theta=1000000.0, rms_norm_eps=1e-5,
                    max_positions=4096, sliding_window=80, bos_token_id=1, eos_token_id=2)),
    "olmoe": dict(
        tokenizer="llama-bpe", dtype="F32", shards=1, seed=1616,
        config=dict(model_type="olmoe", hidden=64, intermediate=48, layers=2, heads=4,
                    kv_heads=2, head_dim=16, rope_theta=10000.0, rms_norm_eps=1e-5,
                    max_positions=4096, bos_token_id=1, eos_token_id=2, experts=8, experts_per_tok=3,
                    extra={"attention_bias": True})),
    "qwen3-moe": dict(
        tokenizer="mistral-bpe", dtype="BF16", shards=2, seed=1717,
        config=dict(model_type="qwen3_moe", hidden=64, intermediate=160, moe_intermediate=48, layers=6, heads=4,
                    kv_heads=2, head_dim=32, rope_theta=1000000.0, rms_norm_eps=1e-6,
                    max_positions=4096, bos_token_id=1, eos_token_id=2, experts=8, experts_per_tok=2,
                    extra={"decoder_sparse_step": 2, "mlp_only_layers": [3], "norm_topk_prob": True})),
    "olmo3": dict(
        tokenizer="llama-bpe", dtype="BF16", shards=1, seed=1818,
        config=dict(model_type="olmo3", hidden=64, intermediate=160, layers=4, heads=4,
                    kv_heads=2, head_dim=16, rope_theta=500000.0, rms_norm_eps=1e-6,
                    max_positions=4096, sliding_window=40, bos_token_id=1, eos_token_id=2,
                    extra={"rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                            "original_max_position_embeddings": 2048}})),
    "gptj": dict(
        tokenizer="mistral-bpe", dtype="F16", shards=1, seed=1919,
        config=dict(model_type="gptj", hidden=64, intermediate=256, layers=3, heads=4,
                    kv_heads=4, head_dim=16, rms_norm_eps=1e-5, max_positions=2048,
                    bos_token_id=1, eos_token_id=2, extra={"rotary_dim": 8})),
    "gpt-neo": dict(
        tokenizer="mistral-bpe", dtype="BF16", shards=1, seed=2121,
        config=dict(model_type="gpt_neo", hidden=64, intermediate=256, layers=4, heads=4,
                    kv_heads=4, head_dim=16, rms_norm_eps=1e-5, max_positions=2048, sliding_window=40,
                    bos_token_id=1, eos_token_id=2)),
    "smollm3": dict(
        tokenizer="llama-bpe", dtype="BF16", shards=1, seed=2020,
        config=dict(model_type="smollm3", hidden=64, intermediate=160, layers=4, heads=4,
                    kv_heads=2, head_dim=16, rope_theta=2000000.0, rms_norm_eps=1e-6,
                    max_positions=4096, tie_word_embeddings=True, bos_token_id=1, eos_token_id=2)),
    # OPT prepends "</s>" as BOS (bos_token_id 2 = eos_token_id; pad 1): id 2 is "</s>" in this tokenizer too
    "opt": dict(
        tokenizer="mistral-bpe", dtype="F16", shards=1, seed=2222,
        config=dict(model_type="opt", hidden=64, intermediate=160, layers=4, heads=4, kv_heads=4, head_dim=16,
                    max_positions=2048, bos_token_id=2, eos_token_id=2, pad_token_id=1)),
    "qwen2-moe": dict(
        tokenizer="mistral-bpe", dtype="BF16", shards=2, seed=2335,
        config=dict(model_type="qwen2_moe", hidden=64, intermediate=160, moe_intermediate=48, layers=3, heads=4,
                    kv_heads=2, head_dim=16, rope_theta=1000000.0, rms_norm_eps=1e-6, max_positions=8192,
                    sliding_window=48, bos_token_id=1, eos_token_id=2, experts=8, experts_per_tok=4,
                    extra={"mlp_only_layers": [1], "shared_expert_intermediate_size": 80, "max_window_layers": 1})),
    # Falcon: kv_heads 1 is the old decoder (Falcon-7B's multi_query), others new_decoder_architecture's groups;
    # bos and eos the tokenizer's <s> and </s> (Falcon's own 11 is an ordinary piece here)
    "falcon": dict(
        tokenizer="mistral-bpe", dtype="BF16", shards=1, seed=2424,
        config=dict(model_type="falcon", hidden=64, intermediate=256, layers=3, heads=8, kv_heads=1, head_dim=8,
                    rms_norm_eps=1e-5, max_positions=2048, bos_token_id=1, eos_token_id=2)),
    "falcon-40b": dict(
        tokenizer="mistral-bpe", dtype="BF16", shards=2, seed=2525,
        config=dict(model_type="falcon", hidden=128, intermediate=192, layers=3, heads=8, kv_heads=2, head_dim=16,
                    rms_norm_eps=1e-5, max_positions=2048, tie_word_embeddings=False, bos_token_id=1,
                    eos_token_id=2)),
    "falcon-sequential": dict(
        tokenizer="mistral-bpe", dtype="F16", shards=1, seed=2626,
        config=dict(model_type="falcon", hidden=64, intermediate=256, layers=3, heads=4, kv_heads=1, head_dim=16,
                    rms_norm_eps=1e-5, max_positions=2048, bos_token_id=1, eos_token_id=2,
                    extra={"multi_query": False, "parallel_attn": False})),
    "falcon-rw": dict(
        tokenizer="mistral-bpe", dtype="BF16", shards=1, seed=2929,
        config=dict(model_type="falcon", hidden=96, intermediate=384, layers=3, heads=12, kv_heads=1, head_dim=8,
                    rms_norm_eps=1e-5, max_positions=2048, bos_token_id=1, eos_token_id=2,
                    extra={"multi_query": False, "parallel_attn": False, "alibi": True, "bias": True})),
    # BLOOM: <unk> <s> </s> <pad> are ids 0-3 of its tokenizer.json; the tokenizer adds no BOS
    "bloom": dict(
        tokenizer="bloom-bpe", dtype="BF16", shards=1, seed=2727,
        config=dict(model_type="bloom", hidden=96, intermediate=384, layers=3, heads=6, kv_heads=6, head_dim=16,
                    rms_norm_eps=1e-5, max_positions=2048, bos_token_id=1, eos_token_id=2)),
    "mpt": dict(
        tokenizer="mistral-bpe", dtype="BF16", shards=1, seed=2828,
        config=dict(model_type="mpt", hidden=64, intermediate=256, layers=3, heads=8, kv_heads=8, head_dim=8,
                    rms_norm_eps=1e-5, max_positions=2048, bos_token_id=1, eos_token_id=2)),
    "olmo": dict(
        tokenizer="llama-bpe", dtype="BF16", shards=1, seed=3030,
        config=dict(model_type="olmo", hidden=64, intermediate=160, layers=3, heads=4, kv_heads=2, head_dim=16,
                    rope_theta=10000.0, max_positions=2048, bos_token_id=1, eos_token_id=2,
                    extra={"clip_qkv": OLMO_CLIP})),
    "starcoder2": dict(
        tokenizer="mistral-bpe", dtype="BF16", shards=1, seed=3131,
        config=dict(model_type="starcoder2", hidden=64, intermediate=192, layers=3, heads=4, kv_heads=2, head_dim=16,
                    rope_theta=100000.0, rms_norm_eps=STARCODER2_EPS, max_positions=4096, sliding_window=48,
                    bos_token_id=1, eos_token_id=2, extra={"rms_norm_eps": 1e-5})),
    "gpt-bigcode": dict(
        tokenizer="mistral-bpe", dtype="BF16", shards=1, seed=3232,
        config=dict(model_type="gpt_bigcode", hidden=64, intermediate=256, layers=3, heads=4, kv_heads=1, head_dim=16,
                    rms_norm_eps=1e-5, max_positions=2048, bos_token_id=1, eos_token_id=2)),
    "gpt-bigcode-mha": dict(
        tokenizer="mistral-bpe", dtype="F16", shards=1, seed=3333,
        config=dict(model_type="gpt_bigcode", hidden=64, intermediate=192, layers=3, heads=4, kv_heads=4, head_dim=16,
                    rms_norm_eps=1e-5, max_positions=2048, bos_token_id=1, eos_token_id=2)),
    "stablelm": dict(
        tokenizer="llama-bpe", dtype="BF16", shards=1, seed=3434,
        config=dict(model_type="stablelm", hidden=128, intermediate=352, layers=3, heads=4, kv_heads=2, head_dim=32,
                    rope_theta=10000.0, rms_norm_eps=STABLELM_EPS, max_positions=4096, bos_token_id=1,
                    eos_token_id=2, extra={"use_qkv_bias": True})),
    "stablelm-parallel": dict(
        tokenizer="mistral-bpe", dtype="F16", shards=1, seed=3535,
        config=dict(model_type="stablelm", hidden=64, intermediate=176, layers=3, heads=4, kv_heads=4, head_dim=16,
                    rope_theta=10000.0, rms_norm_eps=1e-5, max_positions=4096, bos_token_id=1, eos_token_id=2,
                    extra={"use_parallel_residual": True, "partial_rotary_factor": 0.5})),
    "granite": dict(
        tokenizer="llama-bpe", dtype="BF16", shards=1, seed=3636,
        config=dict(model_type="granite", hidden=64, intermediate=160, layers=3, heads=4, kv_heads=2, head_dim=16,
                    rope_theta=10000000.0, rms_norm_eps=1e-5, max_positions=4096, tie_word_embeddings=True,
                    bos_token_id=1, eos_token_id=2, extra=GRANITE_MULTIPLIERS)),
}
# name -> (base fixture, config overrides); same weights and tokenizer as the base
# pythia-sequential: use_parallel_residual false; smollm3-windowed: NoPE layers 1 and 3, windowed;
# opt-bare: OPT's tensors under decoder.*; bloom-prefixed: BLOOM's under transformer.*; pythia-v5, llama3-v5,
# phi3-v5 and olmo3-v5: the same models in transformers 5.x's layout (rope_parameters in place of rotary_pct /
# rotary_emb_base, of rope_theta / rope_scaling, of Phi-3's longrope rope_scaling and partial_rotary_factor, or per
# layer type in place of OLMo-3's rope_theta / rope_scaling, with layer_types written), which must load and agree.
VARIANTS = {"mistral-nowindow": ("mistral", {"sliding_window": None}),
            "pythia-sequential": ("pythia", {"use_parallel_residual": False}),
            "smollm3-windowed": ("smollm3", {"no_rope_layers": [1, 0, 1, 0], "use_sliding_window": True,
                                             "sliding_window": 48}),
            "llama3-v5": ("llama3", {"rope_scaling": None, "rope_theta": None, "transformers_version": "5.0.0",
                                     "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                                         "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                         "original_max_position_embeddings": 64}}),
            "pythia-v5": ("pythia", {"rotary_pct": None, "rotary_emb_base": None, "transformers_version": "5.0.0",
                                     "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                                         "partial_rotary_factor": 0.5}}),
            "phi3-v5": ("phi3", {"rope_scaling": None, "rope_theta": None, "partial_rotary_factor": None,
                                 "transformers_version": "5.0.0",
                                 "rope_parameters": {"rope_type": "longrope", "rope_theta": 10000.0,
                                                     "partial_rotary_factor": 0.75,
                                                     "original_max_position_embeddings": 256,
                                                     "short_factor": [1.0, 1.1, 1.3, 1.8, 2.5, 3.0],
                                                     "long_factor": [1.0, 1.5, 2.5, 4.0, 8.0, 16.0]}}),
            "llama-linear": ("llama3", {"rope_scaling": {"rope_type": "linear", "factor": 4.0}}),
            "llama-yarn": ("llama3", {"rope_scaling": {"rope_type": "yarn", "factor": 8.0,
                                                       "original_max_position_embeddings": 2048, "beta_fast": 16,
                                                       "beta_slow": 2, "mscale": 1.0, "mscale_all_dim": 0.5,
                                                       "truncate": False}}),
            "olmo3-v5": ("olmo3", {"rope_scaling": None, "rope_theta": None, "transformers_version": "5.0.0",
                                   "layer_types": ["sliding_attention"] * 3 + ["full_attention"],
                                   "rope_parameters": {
                                       "sliding_attention": {"rope_type": "default", "rope_theta": 500000.0},
                                       "full_attention": {"rope_type": "yarn", "rope_theta": 500000.0, "factor": 4.0,
                                                          "original_max_position_embeddings": 2048}}}),
            "mixtral-v5": ("mixtral", {"rope_theta": None, "transformers_version": "5.0.0",
                                       "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0}}),
            "qwen3-moe-v5": ("qwen3-moe", {"rope_theta": None, "rope_scaling": None, "transformers_version": "5.0.0",
                                           "num_experts": None, "num_local_experts": 8,
                                           "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0}}),
            "qwen2-moe-v5": ("qwen2-moe", {"rope_theta": None, "rope_scaling": None, "transformers_version": "5.0.0",
                                           "layer_types": ["full_attention"] * 3,
                                           "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0}}),
            "opt-bare": ("opt", {}),
            "bloom-prefixed": ("bloom", {}),
            "olmo-noclip": ("olmo", {"clip_qkv": None}),
            "olmoe-clip": ("olmoe", {"clip_qkv": OLMOE_CLIP}),
            "mpt-clip": ("mpt", {"attn_config": dict(MPT_ATTN_CONFIG, clip_qkv=MPT_CLIP)})}
# Variants whose experts are written fused, as transformers 5.x holds them (fuse_experts).
FUSED_VARIANTS = ("mixtral-v5", "qwen3-moe-v5", "qwen2-moe-v5")
# Fixtures whose tensors are written without a leading prefix, as the released files hold them (facebook/opt-*:
# "model.", bigscience/bloom*: "transformer."); bloom-prefixed keeps BloomForCausalLM's.
STRIPPED = {"opt-bare": "model.", "bloom": "transformer."}
# The vision tower's tensors in the multimodal fixture: NaN, so reading one fails the load.
VISION_TENSORS = [("vision_tower.vision_model.embeddings.patch_embedding.weight", (32, 3, 14, 14)),
                  ("multi_modal_projector.mm_input_projection_weight", (32, 64))]
