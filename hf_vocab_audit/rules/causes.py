"""Group findings under the root cause that explains them (:class:`~hf_vocab_audit.core.causes.Cause`).

Each cause is recognised from the facts, not from message text: the ids past the embedding rows and
whether the tokenizer added them, the special ids set past the rows, ``config.vocab_size`` against the
rows, a label column's 1-based pattern. A finding no cause explains stands alone. Cause ids are derived from
what they are about, so they are stable across runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from ..core.causes import Cause
from ..core.findings import Finding
from ..facts import Facts
from .memory_locations import id_setting

SHOWN = 4  # token names in a cause's story
LABEL_GROUP = ("HVA510", "HVA511", "HVA513", "HVA516")


def _ids(f: Finding) -> set[int]:
    """The token ids a finding is about (its location and the id lists of its details)."""
    out = {f.location.token_id} if f.location.token_id is not None else set()
    d = f.details
    if isinstance(d.get("ids"), list):
        out.update(i for i in d["ids"] if isinstance(i, int))
    if isinstance(d.get("value"), int):
        out.add(d["value"])
    for t in d.get("tokens", []) if isinstance(d.get("tokens"), list) else []:
        if isinstance(t, dict) and isinstance(t.get("id"), int):
            out.add(t["id"])
    return out


def _grow_fix(target: str, in_memory: bool, rows_needed: int) -> str:
    code = "model.resize_token_embeddings(len(tokenizer))"
    if in_memory:
        return f"{code} (only when the tokenizer is larger: never shrink a padded model)"
    return (f"hf-vocab-audit check {target} --fix (a copy grown to {rows_needed} rows), or in the training "
            f"script, after adding the tokens: {code}")


def _vocabulary_cause(facts: Facts, findings: Sequence[Finding], target: str, in_memory: bool) -> tuple[Cause, set[int]] | None:
    tok, emb = facts.tokenizer, facts.embeddings
    if tok is None or emb is None or emb.input is None or emb.input.rows is None:
        return None
    # The matrix the story names is the one the findings name: the input embedding when HVA101 fired, else
    # the lm_head (HVA102). Not the smaller of the two: Mllama's lm_head has 8 rows fewer than its inputs by
    # design, and "gained ids 64..74 but embed_tokens still has 72 rows" would contradict itself.
    matrix = emb.input
    if not any(f.code == "HVA101" for f in findings) and emb.output is not None and emb.output.rows is not None:
        matrix = emb.output
    rows = matrix.rows if matrix.rows is not None else emb.input.rows
    beyond = tok.ids_at_or_above(rows)
    if not beyond or not any(f.code in ("HVA101", "HVA102") for f in findings):
        return None
    added = {a.id: a.content for a in tok.added_tokens}
    names = [repr(added.get(i) or tok.id_to_token(i)) for i in beyond[:SHOWN]]
    shown = ", ".join(names) + (f" and {len(beyond) - SHOWN} more" if len(beyond) > SHOWN else "")
    ids = f"id {beyond[0]}" if len(beyond) == 1 else f"ids {beyond[0]}..{beyond[-1]}"
    crash = ("the first batch that holds one indexes past its end: `IndexError: index out of range in self` on "
             "CPU, `device-side assert triggered` on a GPU")
    if set(beyond) <= set(added):
        kind = "tokens-added-without-resize"
        what = f"the token {names[0]}" if len(beyond) == 1 else f"{len(beyond)} tokens"
        title = f"{what} added to the tokenizer without growing the embeddings"
        story = f"the tokenizer gained {shown} ({ids}) but {matrix.name} still has {rows} rows, so {crash}."
    else:
        kind = "tokenizer-larger-than-model"
        base = [i for i in beyond if i not in added]
        extra = [i for i in beyond if i in added]
        base_names = ", ".join(repr(tok.id_to_token(i)) for i in base[:SHOWN]) + (
            f" and {len(base) - SHOWN} more" if len(base) > SHOWN else "")
        title = f"the tokenizer has {tok.length} ids, the model {rows} rows: another model's tokenizer"
        story = (f"ids {base[0]}..{base[-1]} ({base_names}) are in the tokenizer's own vocabulary, not added tokens: "
                 f"the checkpoint is paired with a larger tokenizer")
        if extra:
            more = ", ".join(repr(added[i]) for i in extra[:SHOWN]) + (
                f" and {len(extra) - SHOWN} more" if len(extra) > SHOWN else "")
            story += f"; {len(extra)} added token(s) ({more}) have no row either"
        story += f", so {crash}."
    fix = _grow_fix(target, in_memory, tok.max_id + 1)
    if kind == "tokenizer-larger-than-model":
        fix = f"use the tokenizer the model was trained with; if this one is meant: {fix}"
    return Cause(kind, title, story, fix, (), 0), set(beyond)


def _explained_by_ids(beyond: set[int]) -> Callable[[Finding], bool]:
    def explains(f: Finding) -> bool:
        if f.code in ("HVA101", "HVA102"):
            return True
        return f.code in ("HVA201", "HVA206", "HVA210") and bool(_ids(f) & beyond)
    return explains


def _names_id(value: int) -> Callable[[Finding], bool]:
    return lambda f: f.code in ("HVA201", "HVA210") and value in _ids(f)


def _same_column(column: str, source: str | None) -> Callable[[Finding], bool]:
    return lambda f: f.code in LABEL_GROUP and f.location.column == column and f.location.file == source


def _special_causes(facts: Facts, findings: Sequence[Finding], target: str, in_memory: bool,
                    taken: set[int]) -> list[tuple[Cause, Callable[[Finding], bool]]]:
    """One cause per special id set past the rows that no tokenizer token explains (a pad id = vocab_size)."""
    out: list[tuple[Cause, Callable[[Finding], bool]]] = []
    values: dict[int, list[Finding]] = {}
    for f in findings:
        if f.code in ("HVA201", "HVA210"):
            for i in _ids(f) - taken:
                rows = f.details.get("rows")
                if isinstance(rows, int) and i >= rows:
                    values.setdefault(i, []).append(f)
    for value, hits in sorted(values.items()):
        keys = sorted({h.location.key for h in hits if h.location.key} | {h.location.file for h in hits
                                                                            if h.location.file and not h.location.key})
        rows = hits[0].details.get("rows")
        where = ", ".join(keys) or "the config"
        title = f"a special id set to {value}, past the {rows} rows ({where})"
        story = (f"{where} name{'s' if len(keys) == 1 else ''} id {value}, which no token of the tokenizer has and "
                 f"the embeddings have no row for: often a pad id set to vocab_size in code.")
        fixable = any(h.fix is not None for h in hits)
        settings = sorted({id_setting(h.location.file, h.location.key) for h in hits})
        fix = ("set it to the id of the token the tokenizer uses for that role"
               + (f": {'; '.join(settings)}" if in_memory else "")
               + ("" if in_memory or not fixable else f", or hf-vocab-audit check {target} --fix"))
        out.append((Cause(f"special-id-past-rows-{value}", title, story, fix, (), 0), _names_id(value)))
    return out


def _config_cause(facts: Facts, findings: Sequence[Finding], target: str, in_memory: bool) -> Cause | None:
    hit = next((f for f in findings if f.code == "HVA103"), None)
    if hit is None or any(f.code == "HVA101" for f in findings):
        return None
    size, rows = hit.details.get("config_vocab_size"), hit.details.get("rows")
    fix = (f"model.config.vocab_size = {rows}" if in_memory
           else f"hf-vocab-audit check {target} --fix (sets vocab_size to {rows}), or edit config.json")
    if in_memory:  # a live model: no file was edited, and nothing is loaded from one
        return Cause("config-vocab-size-edited", f"model.config.vocab_size ({size}) differs from the {rows} "
                     "embedding rows", f"the tokenizer fits the {rows} rows, but vocab_size says {size}: set by "
                     "hand, or the embeddings were replaced without `resize_token_embeddings`; the saved model "
                     "will not load (from_pretrained refuses the mismatch).", fix, (), 0)
    return Cause("config-vocab-size-edited", f"config.json's vocab_size ({size}) differs from the {rows} embedding rows",
                 f"the tokenizer fits the {rows} rows, but vocab_size says {size}: edited by hand, or a resize that was "
                 "not saved; from_pretrained refuses the mismatch (or re-initialises the rows with "
                 "ignore_mismatched_sizes).", fix, (), 0)


def _label_causes(findings: Sequence[Finding]) -> list[tuple[Cause, Callable[[Finding], bool]]]:
    out: list[tuple[Cause, Callable[[Finding], bool]]] = []
    for f in findings:
        if f.code != "HVA511" or f.location.column is None:
            continue
        column, source = f.location.column, f.location.file
        n = f.details.get("num_labels")
        title = f"labels in column {column!r} run 1..{n}, not 0..{n - 1}" if isinstance(n, int) else \
            f"labels in column {column!r} are 1-based"
        story = (f"{source or 'the dataset'}: the largest label equals num_labels and 0 never occurs: the encoding "
                 "starts at 1, so cross entropy gets a target == num_labels (`IndexError: Target N is out of bounds`, "
                 "`t >= 0 && t < n_classes` on a GPU).")
        fix = f"ds = ds.map(lambda r: {{{column!r}: r[{column!r}] - 1}})"
        out.append((Cause(f"labels-one-based-{column}", title, story, fix, (), 0), _same_column(column, source)))
    return out


def explain(facts: Facts, findings: Sequence[Finding], target: str, *, in_memory: bool = False) -> tuple[list[Finding], tuple[Cause, ...]]:
    """``findings`` with their ``cause`` set where a cause explains them, and the causes (in report order)."""
    candidates: list[tuple[Cause, Callable[[Finding], bool]]] = []
    taken: set[int] = set()
    vocab = _vocabulary_cause(facts, findings, target, in_memory)
    if vocab is not None:
        candidates.append((vocab[0], _explained_by_ids(vocab[1])))
        taken = vocab[1]
    candidates += _special_causes(facts, findings, target, in_memory, taken)
    config = _config_cause(facts, findings, target, in_memory)
    if config is not None:
        candidates.append((config, lambda f: f.code == "HVA103"))
    candidates += _label_causes(findings)
    out = list(findings)
    causes = []
    for cause, explains in candidates:
        hit = [i for i, f in enumerate(out) if f.cause is None and explains(f)]
        if not hit:
            continue
        for i in hit:
            out[i] = replace(out[i], cause=cause.id)
        codes = tuple(dict.fromkeys(out[i].code for i in hit))
        causes.append(replace(cause, codes=codes, findings=len(hit)))
    return out, tuple(causes)
