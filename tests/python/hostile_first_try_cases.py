"""What a new user tries first and gets wrong (docs/cli.md): a Hub id or a weights file as
--model, a weights file cut short, and corpus files whose names disagree about the format.
Registered into test_hostile_runs.py's CASES like hostile_flag_cases.py."""
import os
import shutil

from hostile_lib import CORPUS, case


@case
def analyze_model_is_a_hub_id(ctx):
    argv = ctx.analyze()
    argv[argv.index("--model") + 1] = "Qwen/Qwen2.5-0.5B"
    return argv, ["Qwen/Qwen2.5-0.5B"], ["looks like a Hugging Face Hub id", "downloads nothing"]


@case
def analyze_model_is_a_file(ctx):
    argv = ctx.analyze()
    weights = os.path.join(ctx.model, "model.safetensors")
    argv[argv.index("--model") + 1] = weights
    return argv, [weights], ["a file, not a folder", "downloads nothing"]


@case
def analyze_weights_cut_short(ctx):
    model = os.path.join(ctx.tmp, "model")
    shutil.copytree(ctx.model, model)
    weights = os.path.join(model, "model.safetensors")
    os.truncate(weights, os.path.getsize(weights) - 1000)
    argv = ctx.analyze()
    argv[argv.index("--model") + 1] = model
    return argv, ["model.safetensors"], ["truncated"]


@case
def analyze_jsonl_beside_text_without_format(ctx):
    jsonl = ctx.file("docs.jsonl", '{"text": "a document"}\n')
    argv = ctx.analyze()
    argv.insert(argv.index(CORPUS) + 1, jsonl)
    return argv, ["docs.jsonl"], ["is JSONL by its name", "give --format"]
