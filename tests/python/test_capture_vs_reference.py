#!/usr/bin/python3
"""`attngeom capture` against the independent numpy reference, on every fixture.

  test_capture_vs_reference.py --bin PATH/attngeom --fixtures DIR [--fixture NAME ...]

Per fixture: token ids equal spm_encode's with BOS (config's id) prepended (a tokenizer.json's, BLOOM's:
tools/bpe_encode.py's, no BOS); with all
query rows, layer by layer, the engine (fp32) is at least as close to the float64
reference as the same reference run in float32 with HF's rounding (an fp32 eager
stand-in) is: error <= 4 x the float32 reference's error + a floor of 4 fp32 ulps
(attention absolute; values and logits relative to the largest magnitude). The three
original fixtures (llama, mistral, gemma) must also meet fixed tolerances: attention max
abs error <= 1e-5, values <= 1e-5 x max|value|, logits <= 1e-4 x max|logit|. Attention
is exactly 0 outside each layer's causal / sliding-window range; exactly the documented
tensors. Then --queries last / 0,17,100
rows match the `all` dump, --no-bos drops BOS, --max-tokens N keeps the first N ids (BOS
included), --tokens FILE uses its ids verbatim, and --fp32-matmul sgemm / bf16x3 name
their kernel in the metadata; each of those dumps is also checked against the reference. Prints a table of measured errors per fixture and run.
"""
import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import reference_forward as rf  # noqa: E402
from reference_model import Model  # noqa: E402
import reference_ops as ops  # noqa: E402
import st_reader  # noqa: E402

ATTN_TOL = 1e-5      # absolute, probabilities
VALUES_TOL = 1e-5    # relative to max |value| of the layer
LOGITS_TOL = 1e-4    # relative to max |logit|
SUBSET_TOL = 1e-6    # a row must not depend on which other rows were asked for
PARITY_FACTOR = 4.0  # engine error <= factor x the fp32 eager stand-in's error + floor
PARITY_FLOOR = 4 * 2.0 ** -24
FIXED_TOL_FIXTURES = ("llama", "mistral", "gemma", "mistral-nowindow")
LIST_QUERIES = [0, 17, 100]
MAX_TOKENS = 100


class Fixture:
    def __init__(self, root, name, binary, tmp):
        self.name, self.binary, self.tmp = name, binary, tmp
        self.dir = os.path.join(root, name)
        self.cfg = harness.load_config(self.dir)
        self.model = Model(self.dir)
        self.model32 = Model(self.dir, np.float32, hf_rounding=True)
        self.fixed_tol = name in FIXED_TOL_FIXTURES
        self.ids, self.spm = harness.prompt_ids(self.dir, self.model.bos)  # with BOS (if any), the text's alone
        self.failures = []
        self.row = {"fixture": name, "T": len(self.ids)}
        self.table = []  # (run, T, Q, attn err, values rel err, logits rel err or None)
        self.parity = []  # (run, layer or "logits", kind, engine err, fp32 reference err)
        self._refs = {}
        self._refs32 = {}

    def fail(self, msg):
        self.failures.append(msg)
        print(f"FAIL {self.name}: {msg}")

    def reference(self, tokens):
        key = tuple(tokens)
        if key not in self._refs:
            self._refs[key] = rf.forward(self.model, tokens)
        return self._refs[key]

    def reference32(self, tokens):
        key = tuple(tokens)
        if key not in self._refs32:
            self._refs32[key] = rf.forward(self.model32, tokens)
        return self._refs32[key]

    def check_parity(self, tag, where, kind, engine_err, f32_err):
        """The engine's error against the fp32 eager stand-in's (both vs float64)."""
        self.parity.append((tag, where, kind, engine_err, f32_err))
        bound = PARITY_FACTOR * f32_err + PARITY_FLOOR
        if engine_err > bound:
            self.fail(f"[{tag}] {where} {kind}: engine error {engine_err:.3e} > {PARITY_FACTOR:g} x the fp32 "
                      f"reference's {f32_err:.3e} + {PARITY_FLOOR:.1e}")

    def run(self, tag, *flags, **kw):
        """Runs capture; returns the dump path, or None after recording a failure."""
        out = os.path.join(self.tmp, f"{self.name}.{tag}.safetensors")
        proc = harness.capture(self.binary, self.dir, out, *flags, **kw)
        if proc.returncode != 0 or not os.path.exists(out):
            self.fail(f"[{tag}] capture failed: {harness.describe(proc)}")
            return None
        return out

    def load(self, tag, path, n_queries, logits):
        """Reads a dump and checks its layout; T is the dump's own token count and
        n_queries=None means T. Returns (tensors, engine token ids) or None."""
        tokens = st_reader.read(path)[0].get("tokens")
        n_tokens = 0 if tokens is None else len(tokens)
        n_queries = n_tokens if n_queries is None else n_queries
        tensors, meta, problems = harness.layout_problems(path, self.cfg, n_tokens, n_queries, logits)
        for p in problems:
            self.fail(f"[{tag}] {p}")
        if problems:
            return None
        ids = [int(t) for t in tensors["tokens"]]
        if min(ids) < 0 or max(ids) >= self.model.vocab:
            self.fail(f"[{tag}] token ids outside [0, {self.model.vocab})")
            return None
        return tensors, ids

    def compare(self, tag, dump, tokens, queries, logits):
        """Dump vs reference on `tokens`; returns (attn err, values rel err, logits rel err)."""
        ref = self.reference(tokens)
        ref32 = self.reference32(tokens)
        T = len(tokens)
        q = np.asarray(queries)
        if list(dump["query_positions"]) != list(queries):
            self.fail(f"[{tag}] query_positions {list(dump['query_positions'])[:8]}..., expected "
                      f"{list(queries)[:8]}...")
            return None
        e_attn = e_val = e_log = 0.0
        # Parity is judged on runs of every query row: a subset's rows are the `all` run's
        # (checked below), and a maximum over a few rows is too noisy to compare.
        parity = self.check_parity if len(q) == T else (lambda *args: None)
        for layer in range(self.model.layers):
            allowed = ops.attention_mask(T, self.model.layer_window[layer])[q]   # [Q, T]
            got, want = dump[f"layers.{layer}.attn"], ref["attn"][layer][:, q, :]
            err = np.abs(got.astype(np.float64) - want)
            if err.max() > e_attn:
                e_attn = float(err.max())
            parity(tag, f"layers.{layer}", "attn", float(err.max()),
                              float(np.abs(ref32["attn"][layer][:, q, :] - want).max()))
            if self.fixed_tol and err.max() > ATTN_TOL:
                h, r, c = harness.worst(err)
                self.fail(f"[{tag}] layers.{layer}.attn max abs error {err.max():.3e} > {ATTN_TOL} at "
                          f"head {h}, query {int(q[r])}, key {c}: engine {got[h, r, c]:.8f}, "
                          f"reference {want[h, r, c]:.8f}")
            outside = np.abs(np.where(allowed[None], 0.0, got))
            if outside.max() != 0:
                h, r, c = harness.worst(outside)
                self.fail(f"[{tag}] layers.{layer}.attn nonzero outside the causal/window range at head "
                          f"{h}, query {int(q[r])}, key {c}: {got[h, r, c]!r}")
            got_v, want_v = dump[f"layers.{layer}.values"], ref["values"][layer]
            scale = np.abs(want_v).max()
            err_v = np.abs(got_v.astype(np.float64) - want_v)
            e_val = max(e_val, float(err_v.max() / scale))
            parity(tag, f"layers.{layer}", "values rel", float(err_v.max() / scale),
                              float(np.abs(ref32["values"][layer] - want_v).max() / scale))
            if self.fixed_tol and err_v.max() > VALUES_TOL * scale:
                g, t, d = harness.worst(err_v)
                self.fail(f"[{tag}] layers.{layer}.values max abs error {err_v.max():.3e} > "
                          f"{VALUES_TOL} x {scale:.3f} at kv head {g}, token {t}, dim {d}: engine "
                          f"{got_v[g, t, d]:.7f}, reference {want_v[g, t, d]:.7f}")
        self.compare_routing(tag, dump, ref)
        if logits:
            got_l, want_l = dump["logits"], ref["logits"]
            scale = np.abs(want_l).max()
            err_l = np.abs(got_l.astype(np.float64) - want_l)
            e_log = float(err_l.max() / scale)
            parity(tag, "logits", "rel", e_log, float(np.abs(ref32["logits"] - want_l).max() / scale))
            if self.fixed_tol and err_l.max() > LOGITS_TOL * scale:
                t, v = harness.worst(err_l)
                self.fail(f"[{tag}] logits max abs error {err_l.max():.3e} > {LOGITS_TOL} x {scale:.3f} "
                          f"at token {t}, vocab {v}: engine {got_l[t, v]:.6f}, reference {want_l[t, v]:.6f}")
        self.table.append((tag, T, len(q), e_attn, e_val, e_log if logits else None,
                           self._failed_since(tag)))
        return e_attn, e_val, e_log

    def compare_routing(self, tag, dump, ref):
        """A mixture of experts' routing: the same experts as the reference, in the same order
        (the fixture's router has no near-tie; test_reference_self.py), their weights within
        the attention's tolerance, and each expert's load the count of its choices."""
        for layer, (chosen, weights) in ref.get("experts", {}).items():
            got = dump[f"layers.{layer}.experts"]
            if not np.array_equal(got, chosen):
                t = int(np.nonzero((got != chosen).any(axis=1))[0][0])
                self.fail(f"[{tag}] layers.{layer}.experts: token {t} routed to {list(got[t])}, "
                          f"reference {list(chosen[t])}")
                continue
            err = float(np.abs(dump[f"layers.{layer}.expert_weights"].astype(np.float64) - weights).max())
            if err > ATTN_TOL:
                self.fail(f"[{tag}] layers.{layer}.expert_weights max abs error {err:.3e} > {ATTN_TOL}")
            load = np.bincount(chosen.ravel(), minlength=len(dump[f"layers.{layer}.expert_load"]))
            if not np.array_equal(dump[f"layers.{layer}.expert_load"], load):
                self.fail(f"[{tag}] layers.{layer}.expert_load {list(dump[f'layers.{layer}.expert_load'])}, "
                          f"expected {list(load)}")

    def check_tokens(self, tag, dump, accepted):
        """accepted: {label: ids}; returns the label matched, or None after a failure."""
        got = [int(t) for t in dump["tokens"]]
        for label, ids in accepted.items():
            if got == list(ids):
                return label
        first = next(iter(accepted.values()))
        diff = next((i for i, (a, b) in enumerate(zip(got, first)) if a != b), min(len(got), len(first)))
        self.fail(f"[{tag}] tokens differ from the reference tokenizer's: {len(got)} ids vs {len(first)}, first "
                  f"difference at {diff}: engine {got[diff:diff + 5]}, expected {list(first[diff:diff + 5])}")
        return None

    def test_all(self):
        path = self.run("all", "--queries", "all", "--logits")
        loaded = path and self.load("all", path, None, True)
        if not loaded:
            return None
        dump, ids = loaded
        # On a token mismatch, still measure the numerics on the engine's own ids.
        self.check_tokens("all", dump, {"bos+spm": self.ids})
        errs = self.compare("all", dump, ids, range(len(ids)), True)
        if errs:
            self.row.update(attn=errs[0], values=errs[1], logits=errs[2])
        self.row["T"] = len(ids) if ids == self.ids else f"{len(ids)}!={len(self.ids)}"
        return dump, ids

    def test_subsets(self, full, ids):
        T = len(ids)
        worst_diff, bitwise = 0.0, True
        for tag, arg, queries in [("last", "last", [T - 1]),
                                  ("list", ",".join(map(str, LIST_QUERIES)), LIST_QUERIES)]:
            path = self.run(tag, "--queries", arg)
            loaded = path and self.load(tag, path, len(queries), False)
            if not loaded:
                continue
            dump, got_ids = loaded
            if got_ids != ids:
                self.fail(f"[{tag}] tokens differ from the `all` run's")
                continue
            if self.compare(tag, dump, ids, queries, False) is None:
                continue
            for layer in range(self.model.layers):
                for kind, a, b in [("attn", dump[f"layers.{layer}.attn"], full[f"layers.{layer}.attn"][:, queries, :]),
                                   ("values", dump[f"layers.{layer}.values"], full[f"layers.{layer}.values"])]:
                    d = float(np.abs(a - b).max())
                    worst_diff, bitwise = max(worst_diff, d), bitwise and np.array_equal(a, b)
                    if d > SUBSET_TOL:
                        self.fail(f"[{tag}] layers.{layer}.{kind} differs from the `all` dump by {d:.3e}")
        self.row["subset"] = worst_diff
        self.row["bitwise"] = bitwise

    def test_variants(self):
        notes = []
        # --no-bos: exactly sentencepiece's ids
        path = self.run("nobos", "--no-bos", "--queries", "all", "--logits")
        loaded = path and self.load("nobos", path, None, True)
        if loaded:
            dump, ids = loaded
            ok = self.check_tokens("nobos", dump, {"spm": self.spm}) is not None
            errs = self.compare("nobos", dump, ids, range(len(ids)), True)
            notes.append("no-bos " + ("ok" if ok and errs and not self._failed_since("nobos") else "FAIL"))
        # --max-tokens N: the first N ids (BOS counted)
        path = self.run("maxtok", "--max-tokens", str(MAX_TOKENS), "--queries", "all", "--logits")
        loaded = path and self.load("maxtok", path, None, True)
        if loaded:
            dump, ids = loaded
            label = self.check_tokens("maxtok", dump, {"N incl. BOS": self.ids[:MAX_TOKENS]})
            if label and self.compare("maxtok", dump, ids, range(len(ids)), True):
                notes.append(f"max-tokens T={len(ids)} ({label})")
        # --tokens FILE: ids used verbatim (no BOS added)
        ids_file = os.path.join(self.tmp, f"{self.name}.ids.txt")
        with open(ids_file, "w") as f:
            f.write(" ".join(map(str, self.ids[:150])) + "\n")
        path = self.run("tokens", "--queries", "all", tokens=ids_file)
        loaded = path and self.load("tokens", path, None, False)
        if loaded:
            dump, ids = loaded
            label = self.check_tokens("tokens", dump, {"verbatim": self.ids[:150]})
            if label and self.compare("tokens", dump, ids, range(len(ids)), False):
                notes.append(f"--tokens {label}")
        # Both fp32 kernels, named in the dump as they ran: bf16x3 runs its three-term split
        # only on bf16 weights (the gemma fixture); on the others it is sgemm, and says so.
        for kernel in ("sgemm", "bf16x3"):
            tag = f"fp32-{kernel}"
            path = self.run(tag, "--queries", "all", "--logits", "--precision", "fp32", "--fp32-matmul", kernel)
            loaded = path and self.load(tag, path, None, True)
            if loaded:
                recorded = st_reader.read(path)[1].get("matmul")
                expected = harness.fp32_kernel(kernel, self.cfg.get("torch_dtype") == "bfloat16")
                if recorded != expected:
                    self.fail(f"[{tag}] metadata matmul {recorded!r}, expected {expected!r}")
                self.compare(tag, loaded[0], loaded[1], range(len(loaded[1])), True)
        self.row["notes"] = ", ".join(notes)

    def _failed_since(self, tag):
        return any(f.startswith(f"[{tag}]") for f in self.failures)


# The suffixes of fixtures that hold their base fixture's model in another layout.
LAYOUT_VARIANTS = ("-v5", "-bare", "-prefixed")


def agreement_of_layouts(full_dumps):
    """A transformers 5.x config (NAME-v5, rope_parameters, fused experts) of the same weights as
    NAME's 4.x one, the same tensors without their leading "model." (NAME-bare, OPT's released
    files) or with BloomForCausalLM's "transformer." (bloom-prefixed; bloom holds the released files'
    bare names), must give the same dump, bit for bit: the two layouts are one model."""
    failures = []
    for name, full in full_dumps.items():
        base = base_of(name)
        if base == name or not full or not full_dumps.get(base):
            continue
        (v5, ids5), (v4, ids4) = full, full_dumps[base]
        differ = [k for k in sorted(v4) if ids5 != ids4 or k not in v5 or not np.array_equal(v4[k], v5[k])]
        print(f"{name} vs {base}: {len(v4) - len(differ)} of {len(v4)} tensors identical")
        if differ:
            failures.append(f"{name}: differs from {base} (its other layout) in {differ[:4]}")
            print("FAIL", failures[-1])
    return failures


def base_of(name):
    """The fixture whose model `name` holds in another layout, or `name` itself."""
    return next((name[:-len(s)] for s in LAYOUT_VARIANTS if name.endswith(s)), name)


def part_of(names, part):
    """Part K of N ("K/N", K from 1) of `names`, dealt out by base fixture in turn, so that a
    layout variant runs beside its base."""
    k, n = (int(x) for x in part.split("/"))
    bases = list(dict.fromkeys(base_of(name) for name in names))
    return [name for name in names if bases.index(base_of(name)) % n == k - 1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--fixture", action="append", help="only these fixtures (default: all)")
    ap.add_argument("--part", help="K/N: only part K of N of the fixtures (a layout variant with its base)")
    args = ap.parse_args()
    harness.require_device(args.bin)
    names = args.fixture or harness.COMPARE_FIXTURES
    if args.part:
        names = part_of(names, args.part)
    fixtures, failures, full_dumps = [], [], {}
    with tempfile.TemporaryDirectory(prefix="attngeom-capture-") as tmp:
        for name in names:
            fx = Fixture(args.fixtures, name, args.bin, tmp)
            full = fx.test_all()
            if full:
                fx.test_subsets(*full)
            fx.test_variants()
            fixtures.append(fx)
            failures += fx.failures
            full_dumps[name] = full
        failures += agreement_of_layouts(full_dumps)
    fmt = "{:17s} {:7s} {:>5s} {:>5s} {:>11s} {:>11s} {:>11s}  {}"
    e = lambda v: "-" if v is None else f"{v:.3e}"
    print()
    print(fmt.format("fixture", "run", "T", "Q", "attn abs", "values rel", "logits rel", "status"))
    print(fmt.format("(fixed tol.)", "", "", "", e(ATTN_TOL), e(VALUES_TOL), e(LOGITS_TOL), ""))
    for fx in fixtures:
        for tag, T, Q, ea, ev, el, failed in fx.table:
            print(fmt.format(fx.name, tag, str(T), str(Q), e(ea), e(ev), e(el), "FAIL" if failed else "ok"))
        for tag, where, kind, eng, f32 in fx.parity:
            if tag == "all":
                print(f"{'':17s} parity {where:10s} {kind:10s} engine {eng:.3e}  fp32 eager stand-in {f32:.3e}"
                      f"  ratio {eng / max(f32, 1e-300):.2f}")
        r = fx.row
        print(f"{'':17s} rows of last / 0,17,100 vs the all dump: max diff "
              f"{e(r.get('subset'))} (tolerance {SUBSET_TOL:.0e}), bitwise identical: "
              f"{ {True: 'yes', False: 'no'}.get(r.get('bitwise'), '-') }; {r.get('notes', '')}")
    print(f"\n{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
