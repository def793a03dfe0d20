"""Hostile Hugging Face tokenizer.json files for `attngeom capture` (docs/robustness.md):
the fixture's tokenizer.model is replaced by a small LLaMA-3-style tokenizer.json
(tools/make_bpe_tokenizer.py), which each case then corrupts. Registered into
test_bad_inputs.py's CASES; each returns (needles_any, needles_all): the message must name
the file and the field."""
import json
import os

from bad_input_lib import case
from make_bpe_tokenizer import write as write_tokenizer

TJ = "tokenizer.json"


def hf_tokenizer(ctx, edit=None):
    """Swaps the fixture's tokenizer.model for a tokenizer.json, edited by edit(obj)."""
    os.remove(ctx.path("tokenizer.model"))
    write_tokenizer(ctx.model, "llama3", n_merges=120)
    if edit is not None:
        with open(ctx.path(TJ), encoding="utf-8") as f:
            obj = json.load(f)
        edit(obj)
        with open(ctx.path(TJ), "w", encoding="utf-8") as f:
            json.dump(obj, f, ensure_ascii=False)


def split_step(obj):
    return obj["pre_tokenizer"]["pretokenizers"][0]


@case()
def tokenizer_json_merge_unknown_symbol(ctx):
    hf_tokenizer(ctx, lambda t: t["model"]["merges"].__setitem__(5, ["Ġqz", "x"]))
    return [TJ], ["model.merges[5]", "Ġqz"]


@case()
def tokenizer_json_merge_wrong_shape(ctx):
    hf_tokenizer(ctx, lambda t: t["model"]["merges"].__setitem__(3, ["a", "b", "c"]))
    return [TJ], ["model.merges[3]"]


@case()
def tokenizer_json_merge_string_without_space(ctx):
    hf_tokenizer(ctx, lambda t: t["model"]["merges"].__setitem__(2, "ab"))
    return [TJ], ["model.merges[2]", "one space"]


@case()
def tokenizer_json_unknown_pre_tokenizer(ctx):
    hf_tokenizer(ctx, lambda t: split_step(t).__setitem__("type", "Metaspace"))
    return [TJ], ["pre_tokenizer.pretokenizers[0].type", "Metaspace"]


@case()
def tokenizer_json_regex_does_not_compile(ctx):
    hf_tokenizer(ctx, lambda t: split_step(t)["pattern"].__setitem__("Regex", r"(?i:'s|'t|[\p{L}"))
    return [TJ], ["pre_tokenizer.pretokenizers[0].pattern.Regex", "does not compile"]


@case()
def tokenizer_json_huge(ctx):
    """300 MiB (sparse, nothing written): over the reader's size limit."""
    hf_tokenizer(ctx)
    os.truncate(ctx.path(TJ), 300 << 20)
    return [TJ], ["limit"]


@case()
def tokenizer_json_not_json(ctx):
    hf_tokenizer(ctx)
    with open(ctx.path(TJ), "w") as f:
        f.write('{"model": {"type": "BPE", "vocab": {')
    return [TJ], ["not valid JSON"]


@case()
def tokenizer_json_missing_vocab(ctx):
    hf_tokenizer(ctx, lambda t: t["model"].pop("vocab"))
    return [TJ], ["model.vocab", "missing"]


@case()
def tokenizer_json_unknown_normalizer(ctx):
    hf_tokenizer(ctx, lambda t: t.__setitem__("normalizer", {"type": "Lowercase"}))
    return [TJ], ["normalizer.type", "Lowercase"]


@case()
def tokenizer_json_unknown_post_processor(ctx):
    hf_tokenizer(ctx, lambda t: t.__setitem__("post_processor", {"type": "BertProcessing"}))
    return [TJ], ["post_processor.type", "BertProcessing"]


@case()
def tokenizer_json_unknown_model(ctx):
    hf_tokenizer(ctx, lambda t: t["model"].__setitem__("type", "WordPiece"))
    return [TJ], ["model.type", "WordPiece"]


@case()
def tokenizer_json_added_token_beyond_vocab(ctx):
    hf_tokenizer(ctx, lambda t: t["added_tokens"][0].__setitem__("id", 100000))
    return [TJ], ["added_tokens[0].id", "vocab_size"]


@case()
def tokenizer_json_template_names_unknown_token(ctx):
    hf_tokenizer(ctx, lambda t: t["post_processor"]["processors"][1]["special_tokens"].clear())
    return [TJ], ["post_processor.processors[1].special_tokens", "<|begin_of_text|>"]


@case()
def tokenizer_config_not_json(ctx):
    hf_tokenizer(ctx)
    with open(ctx.path("tokenizer_config.json"), "w") as f:
        f.write("add_bos_token = true")
    return ["tokenizer_config.json"], ["not valid JSON"]
