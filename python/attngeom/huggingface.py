"""attngeom.hf: a transformers model's own forward pass, analysed as `attngeom analyze` analyses
the engine's (docs/python.md, attngeom.hf).

Forward hooks read, per layer, the attention probabilities the attention module returns (its
eager weights, [B, H, T, T]) and the value states of each KV head from the module's value
projection (VALUE_SOURCES). The requested query rows are selected on the model's device, the
only rows copied off it; each layer is analysed inside its hook, before the next layer runs.
"""
import contextlib
import inspect
import json
import os
import warnings

import numpy as np

from . import _attngeom
from .arrays import as_float32_array, as_numpy, as_probability_rows
from .run import load_run

# Where each attention module's value states come from: the child module and the layout of
# its output's last axis. A module with a `v_proj` child is read from it ([H_kv * d]); the
# fused projections are read only in the attention classes whose layout is known.
FUSED_VALUE_SOURCES = {
    "GPT2Attention": ("c_attn", "q|k|v"),               # GPT-2's Conv1D: [q | k | v], each H * d
    "GPTNeoXAttention": ("query_key_value", "per head q,k,v"),  # [H, 3 * d]: per head [q, k, v]
    "Phi3Attention": ("qkv_proj", "q|k|v with kv heads"),      # [q (H * d) | k (H_kv * d) | v (H_kv * d)]
}
FUSED_NAMES = ("c_attn", "query_key_value", "qkv_proj", "qkv", "Wqkv", "W_pack", "in_proj")
READ_TEXT = ("attngeom.hf reads the value states of `v_proj`, and of the fused projections of GPT-2 (GPT2Attention."
             "c_attn), GPT-NeoX (GPTNeoXAttention.query_key_value) and Phi-3 (Phi3Attention.qkv_proj)")


class _NoWeights(Exception):
    """An attention module returned no weights: the forward pass is tried again with
    output_attentions=True, or refused."""


def _class_names(module):
    return [c.__name__ for c in type(module).__mro__]


def _text_config(model):
    config = getattr(model, "config", None)
    if config is not None and hasattr(config, "get_text_config"):
        config = config.get_text_config()
    return config


def _first(*values):
    return next((v for v in values if isinstance(v, int) and not isinstance(v, bool) and v > 0), None)


def _out_width(module):
    width = getattr(module, "out_features", None) or getattr(module, "nf", None)  # Linear, GPT-2's Conv1D
    if width is None and getattr(module, "weight", None) is not None:
        width = module.weight.shape[0]
    return int(width)


class _Layer:
    """One attention module: its name, the child giving its values, their layout and shape."""

    def __init__(self, name, module, config):
        self.name, self.module = name, module
        self.kind = type(module).__name__
        fused = next((FUSED_VALUE_SOURCES[c] for c in _class_names(module) if c in FUSED_VALUE_SOURCES), None)
        mcfg = getattr(module, "config", None) or config
        heads = _first(getattr(module, "num_heads", None), getattr(module, "num_attention_heads", None),
                       getattr(mcfg, "num_attention_heads", None))
        head_dim = _first(getattr(module, "head_dim", None), getattr(module, "head_size", None),
                          getattr(mcfg, "head_dim", None))
        if head_dim is None and heads and getattr(mcfg, "hidden_size", None):
            head_dim = mcfg.hidden_size // heads
        if hasattr(module, "v_proj"):
            self.source, self.layout = "v_proj", "v"
        elif fused is not None and hasattr(module, fused[0]):
            self.source, self.layout = fused
        else:
            raise ValueError(f"attngeom.hf: {name} ({self.kind}) has no value projection attngeom can read; "
                             f"{READ_TEXT} (its children: {', '.join(n for n, _ in module.named_children())})")
        self.projection = getattr(module, self.source)
        if hasattr(module, "q_proj") and head_dim:
            heads = _out_width(module.q_proj) // head_dim
        if not heads or not head_dim:
            raise ValueError(f"attngeom.hf: {name} ({self.kind}): cannot tell its heads and head_dim "
                             "(neither the module nor the model's config states them)")
        width = _out_width(self.projection)
        if self.layout == "v":
            kv = width // head_dim
        elif self.layout == "q|k|v with kv heads":
            kv = (width - heads * head_dim) // (2 * head_dim)
        else:
            kv = heads
            if width != 3 * heads * head_dim:
                raise ValueError(f"attngeom.hf: {name}.{self.source} has {width} outputs, expected 3 x {heads} heads "
                                 f"x {head_dim}")
        if kv < 1 or heads % kv != 0:
            raise ValueError(f"attngeom.hf: {name}: {kv} kv heads (from {self.source}'s {width} outputs) do not "
                             f"divide {heads} heads")
        self.heads, self.kv_heads, self.head_dim = heads, kv, head_dim

    def values(self, out):
        """[B, H_kv, T, d] of the projection's output [B, T, width]."""
        b, t = out.shape[0], out.shape[1]
        h, kv, d = self.heads, self.kv_heads, self.head_dim
        if self.layout == "v":
            v = out
        elif self.layout == "q|k|v":
            v = out[..., 2 * h * d:]
        elif self.layout == "q|k|v with kv heads":
            v = out[..., h * d + kv * d:]
        else:  # per head q, k, v
            v = out.reshape(b, t, h, 3 * d)[..., 2 * d:]
        return v.reshape(b, t, kv, d).transpose(1, 2)


def attention_layers(model):
    """The attention modules attngeom.hf reads, in the order the model registers them: every
    module with a `v_proj` child, or of a class in FUSED_VALUE_SOURCES (other modules inside
    them are not searched). A module named like an attention that has a fused projection of
    unknown layout, or none, is refused by name."""
    config = _text_config(model)
    layers, inside = [], []
    for name, module in model.named_modules():
        if any(name.startswith(p + ".") for p in inside):
            continue
        known = hasattr(module, "v_proj") or any(c in FUSED_VALUE_SOURCES for c in _class_names(module))
        fused = [n for n in FUSED_NAMES if hasattr(module, n)]
        if not known and (fused or (type(module).__name__.endswith("Attention") and
                                    any(True for _ in module.children()))):
            what = f"a fused projection {fused[0]} of unknown layout" if fused else "no value projection"
            raise ValueError(f"attngeom.hf: {name} ({type(module).__name__}) has {what}; {READ_TEXT}")
        if known and getattr(module, "is_cross_attention", False):
            raise ValueError(f"attngeom.hf: {name} ({type(module).__name__}) is a cross-attention; attngeom reads "
                             "causal self-attention (pass the decoder alone)")
        if known:
            layers.append(_Layer(name, module, config))
            inside.append(name)
    if not layers:
        raise ValueError(f"attngeom.hf: {type(model).__name__} has no attention module attngeom can read; {READ_TEXT}")
    first = layers[0]
    for layer in layers[1:]:
        if (layer.heads, layer.kv_heads, layer.head_dim) != (first.heads, first.kv_heads, first.head_dim):
            raise ValueError(f"attngeom.hf: {layer.name} has {layer.heads} heads, {layer.kv_heads} kv heads of "
                             f"{layer.head_dim}, but {first.name} {first.heads}, {first.kv_heads} of "
                             f"{first.head_dim}; one run holds one shape")
    return layers


def _sequences(texts, tokens, tokenizer, attention_mask):
    """The token ids of every sequence, as int64 numpy arrays (padding removed)."""
    if (texts is None) == (tokens is None):
        raise TypeError("hf: give exactly one of texts or tokens")
    if texts is not None:
        if tokenizer is None:
            raise TypeError("hf: texts need a tokenizer (a transformers tokenizer, or any callable returning "
                            "{'input_ids': [...]}); or give tokens")
        texts = [texts] if isinstance(texts, str) else list(texts)
        if not all(isinstance(t, str) for t in texts):
            raise TypeError("hf: texts must be a str or a list of str")
        return [np.asarray(tokenizer(t)["input_ids"], dtype=np.int64).reshape(-1) for t in texts]
    if isinstance(tokens, (list, tuple)) and tokens and not np.isscalar(tokens[0]):
        seqs = [as_numpy(t, f"tokens[{i}]") for i, t in enumerate(tokens)]
        if attention_mask is not None:
            raise TypeError("hf: attention_mask goes with a [B, T] batch of tokens, not a list of sequences")
    else:
        batch = as_numpy(tokens, "tokens")
        if batch.ndim == 1:
            batch = batch[None]
        if batch.ndim != 2:
            raise ValueError(f"hf: tokens must be [T], [B, T] or a list of sequences, got shape {batch.shape}")
        seqs = list(batch)
        if attention_mask is not None:
            mask = as_numpy(attention_mask, "attention_mask")
            if mask.shape != batch.shape:
                raise ValueError(f"hf: attention_mask {mask.shape} must have the shape of tokens {batch.shape}")
            seqs = [_unpadded(s, m != 0, i) for i, (s, m) in enumerate(zip(batch, mask))]
    for i, s in enumerate(seqs):
        if s.dtype.kind not in "iu" or s.ndim != 1:
            raise TypeError(f"hf: tokens[{i}]: expected a 1-D sequence of integer token ids, got {s.dtype} of shape "
                            f"{s.shape}")
    return [np.ascontiguousarray(s, dtype=np.int64) for s in seqs]


def _unpadded(ids, keep, row):
    """The tokens of a padded row: its mask's ones must be one run at the left or right end."""
    n = int(keep.sum())
    if n == 0 or not (keep[:n].all() or keep[len(keep) - n:].all()):
        raise ValueError(f"hf: attention_mask row {row} is neither left nor right padding (its ones must be one "
                         "run at one end)")
    return ids[:n] if keep[:n].all() else ids[len(keep) - n:]


def _info(model, layers, device, dtype, sequences, tokenizer, texts):
    """run.json's model, precision, device, tokenizer and corpus blocks."""
    import torch
    config = _text_config(model)
    try:
        import transformers
        version = transformers.__version__
    except ImportError:
        version = None
    runner = "transformers" if type(model).__module__.split(".")[0] == "transformers" else "torch"
    first = layers[0]
    bos = getattr(config, "bos_token_id", None)
    dtype_name = str(dtype).replace("torch.", "")
    name = getattr(config, "_name_or_path", "") or getattr(model, "name_or_path", "")
    return {
        "model": {"dir": name or f"(a {type(model).__name__} in memory)", "runner": runner,
                  "transformers_version": version, "torch_version": torch.__version__,
                  "class": type(model).__name__, "model_type": getattr(config, "model_type", None) or runner,
                  "attention": first.kind, "values_from": f"{first.source} ({first.layout})",
                  "device": str(device), "dtype": dtype_name,
                  "hidden": getattr(config, "hidden_size", None), "vocab": getattr(config, "vocab_size", None),
                  "sliding_window": getattr(config, "sliding_window", None)},
        "precision": dtype_name,
        "device": str(device),
        "tokenizer": {"file": getattr(tokenizer, "name_or_path", None) if tokenizer is not None else None,
                      "bos": bos is not None, "bos_token_id": bos,
                      "position0": "bos" if bos is not None and all(int(s[0]) == bos for s in sequences) else "text"},
        "corpus": {"source": "texts" if texts is not None else "token ids", "sequences": len(sequences)},
    }


@contextlib.contextmanager
def _eager_attention(model):
    """The model set to transformers' eager attention (which returns its weights), and back."""
    config = getattr(model, "config", None)
    previous = getattr(config, "_attn_implementation", None)
    if previous in (None, "eager"):
        yield
        return
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation("eager")
        restore = lambda: model.set_attn_implementation(previous)  # noqa: E731
    else:
        config._attn_implementation = "eager"
        restore = lambda: setattr(config, "_attn_implementation", previous)  # noqa: E731
    try:
        yield
    finally:
        restore()


def _forward_kwargs(runner, output_attentions):
    parameters = inspect.signature(runner.forward).parameters
    any_kwargs = any(p.kind == p.VAR_KEYWORD for p in parameters.values())
    wanted = {"use_cache": False, "output_attentions": output_attentions}
    return {k: v for k, v in wanted.items() if any_kwargs or k in parameters}


def _weights_of(output, batch, seq):
    """The [B, H, T, T] attention probabilities among a module's outputs, and their index."""
    items = output if isinstance(output, (tuple, list)) else (output,)
    for i, item in enumerate(items):
        if getattr(item, "ndim", 0) == 4 and item.shape[0] == batch and tuple(item.shape[2:]) == (seq, seq):
            return item, i
    return None, None


class _Hooks:
    """Forward hooks on every layer's value projection and attention module. The value hook
    keeps the layer's values (on the device); the attention hook selects the captured rows on
    the device, copies those and the values to the CPU, and hands both to the run feed."""

    def __init__(self, feed, layers, rows, strip_weights):
        self.feed, self.layers, self.strip = feed, layers, strip_weights
        self.rows = rows
        self.values, self.seen, self.handles = {}, [], []
        for index, layer in enumerate(layers):
            self.handles.append(layer.projection.register_forward_hook(self._value_hook(index)))
            self.handles.append(layer.module.register_forward_hook(self._attention_hook(index)))

    def remove(self):
        for h in self.handles:
            h.remove()

    def _value_hook(self, index):
        def hook(module, inputs, output):
            self.values[index] = self.layers[index].values(output)
        return hook

    def _attention_hook(self, index):
        layer = self.layers[index]

        def hook(module, inputs, output):
            values = self.values.pop(index, None)
            if values is None:
                raise ValueError(f"attngeom.hf: {layer.name} returned before {layer.source} ran; "
                                 "its value states were not seen")
            batch, seq = values.shape[0], values.shape[2]
            weights, at = _weights_of(output, batch, seq)
            if weights is None:
                raise _NoWeights(layer)
            if weights.shape[1] != layer.heads:
                raise ValueError(f"attngeom.hf: {layer.name} returned weights of {weights.shape[1]} heads, "
                                 f"expected {layer.heads}")
            rows = weights.index_select(2, self.rows.to(weights.device))  # [B, H, Q, T], still on the device
            self.feed.layer(index, as_probability_rows(rows, f"{layer.name} attention"),
                            as_float32_array(values, f"{layer.name} values"), layer.name)
            self.seen.append(index)
            if self.strip:  # output_attentions=True: the model would keep every layer's [B, H, T, T]
                output = tuple(None if i == at else o for i, o in enumerate(output))
                return output
            return None
        return hook


def _run_batches(runner, feed, layers, sequences, batch_size, output_attentions):
    """Every batch through the model; False when an attention module returned no weights."""
    import torch
    device = next(runner.parameters()).device
    rows = torch.tensor(feed.rows, dtype=torch.long, device=device)
    hooks = _Hooks(feed, layers, rows, output_attentions)
    kwargs = _forward_kwargs(runner, output_attentions)
    try:
        for start in range(0, len(sequences), batch_size):
            batch = sequences[start:start + batch_size]
            for slot, ids in enumerate(batch):
                feed.begin(slot, start + slot, ids.astype(np.int32))
            ids = torch.from_numpy(np.stack(batch)).to(device)
            hooks.seen = []
            try:
                runner(input_ids=ids, **kwargs)
            except _NoWeights as e:
                if output_attentions or start > 0:
                    layer = e.args[0]
                    raise ValueError(f"attngeom.hf: {layer.name} ({layer.kind}) returned no attention weights: "
                                     "attngeom.hf reads the probabilities that eager attention returns; load the "
                                     "model with attn_implementation='eager'") from None
                return False
            if hooks.seen != list(range(len(layers))):
                raise ValueError(f"attngeom.hf: the forward pass ran the attention layers {hooks.seen}, expected "
                                 f"each of 0..{len(layers) - 1} once, in order")
            for slot in range(len(batch)):
                feed.end(slot)
    finally:
        hooks.remove()
    return True


def hf(model, out, texts=None, tokens=None, tokenizer=None, attention_mask=None, seq_len=None, batch_size=8,
       queries="last", quiet=False, progress=None, **options):
    """Runs a transformers model (any device, any dtype) over texts or token ids and writes the run
    directory `attngeom analyze` writes, from the model's own attention probabilities and value
    states. Returns load_run(out).

    model: a transformers model (or any torch module built like one): every module with a
    `v_proj` child, or a GPT2Attention (`c_attn`), GPTNeoXAttention (`query_key_value`) or
    Phi3Attention (`qkv_proj`), is an attention layer, read in registration order; its forward
    must return its weights [B, H, T, T] (eager attention: the model is switched to
    attn_implementation="eager" for the call and back). Other attention modules are refused by
    name. texts (with tokenizer) or tokens: token ids [T], [B, T] (with attention_mask: left or
    right padding, removed before the forward pass), or a list of sequences. Every sequence is
    cut to seq_len tokens (default: the shortest's length); a shorter one is refused. Position 0
    plays the sink (docs/method.md section 1): give sequences that start with BOS where the
    model has one. batch_size sequences run at once. queries, and the geometry and table
    settings of analyze by name (every_n=True, bounds=False, top_k=8, per_sequence=True, ...),
    label, overwrite, threads. Progress: a start line and a line per sequence on sys.stderr,
    none with quiet=True; progress=callable receives {"done", "total", "tokens_per_s",
    "eta_s"} after each sequence instead of the lines.
    """
    import torch
    sequences = _sequences(texts, tokens, tokenizer, attention_mask)
    if not sequences:
        raise ValueError("hf: no sequence given")
    lengths = [len(s) for s in sequences]
    if seq_len is None:
        seq_len = min(lengths)
        if max(lengths) != seq_len:
            warnings.warn(f"hf: sequences of {seq_len} to {max(lengths)} tokens: each is cut to the shortest's "
                          f"{seq_len} (seq_len= chooses)", stacklevel=2)
    if isinstance(seq_len, bool) or not isinstance(seq_len, int):
        raise TypeError(f"seq_len: expected int or None, got {type(seq_len).__name__}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise TypeError(f"batch_size: expected a positive int, got {batch_size!r}")
    for i, n in enumerate(lengths):
        if n < seq_len:
            raise ValueError(f"hf: sequence {i} has {n} tokens, fewer than seq_len {seq_len}")
    sequences = [s[:seq_len] for s in sequences]
    layers = attention_layers(model)
    runner = getattr(model, "base_model", None)
    if not isinstance(runner, torch.nn.Module):
        runner = model
    parameter = next(model.parameters())
    info = _info(model, layers, parameter.device, parameter.dtype, sequences, tokenizer, texts)
    first = layers[0]
    shape = {"layers": len(layers), "heads": first.heads, "kv_heads": first.kv_heads, "head_dim": first.head_dim}
    options.update(queries=queries, quiet=quiet, progress=progress)
    feed = _attngeom._RunFeed(os.fspath(out), shape, seq_len, len(sequences), min(batch_size, len(sequences)),
                              json.dumps(info), options)
    was_training = model.training
    try:
        model.eval()  # no dropout on the weights
        with _eager_attention(model), torch.no_grad():
            if not _run_batches(runner, feed, layers, sequences, batch_size, False):
                _run_batches(runner, feed, layers, sequences, batch_size, True)
        feed.finish()
    finally:
        model.train(was_training)
        feed.close()
    return load_run(out)


def option_names():
    """The keyword options hf accepts beyond its arguments."""
    return sorted(_attngeom._hf_option_names())
