"""The coverage record of one audit (:class:`~hf_vocab_audit.core.coverage.Coverage`), derived from the
facts and what the rules did, and the refusal of a target with nothing to examine.

A skipped rule is a gap only when a healthy checkpoint of that kind would have run it: a missing tokenizer,
missing weights, or weights in which no vocabulary matrix was recognised. Rules that do not apply (tied
output embeddings, no chat template, a composite config without ``vocab_size``) are skipped, not gaps.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING

from ..core.coverage import Coverage, Gap, SplitCoverage, TensorRole, TokenizerCoverage
from ..core.findings import Skipped
from ..errors import AuditError, torch_extra
from ..facts import Facts
from ..facts.requirements import GapKind, missing_gap, undecided_rows
from .registry import Scope, get_rule

if TYPE_CHECKING:
    from .runner import RuleRun

def ensure_auditable(facts: Facts) -> None:
    """Refuse (exit 2, one line) a target with nothing the rules could examine: no tokenizer, no recognised
    vocabulary matrix and a config that names no model. A gate must not say PASS about such a folder."""
    emb = facts.embeddings
    cfg = facts.config
    if facts.tokenizer is not None or (emb is not None and emb.input is not None):
        return
    if cfg.model_type or cfg.architectures or cfg.vocab_size is not None:
        return
    tok = facts.missing.get("tokenizer", "no tokenizer")
    weights = facts.missing.get("tensors") or facts.missing.get("input_embedding") or "no vocabulary matrix"
    hint = ""
    if any(k.startswith("pooling_mode") or k == "word_embedding_dimension" for k in cfg.raw) or (
        facts.model_dir.parent / "modules.json"
    ).is_file():
        hint = " (a sentence-transformers module folder, not a model: audit the folder that holds modules.json)"
    raise AuditError(facts.model_dir, f"nothing to audit: {tok}; {weights}; and config.json names no model_type, "
                     f"architectures or vocab_size{hint}")


def _gap(facts: Facts, kind: GapKind, rules: Sequence[str]) -> Gap:
    if kind == GapKind.TOKENIZER:
        return Gap("the tokenizer", facts.missing.get("tokenizer", "no tokenizer"), tuple(rules),
                   "pass --tokenizer DIR (or add the tokenizer files)")
    if kind == GapKind.WEIGHTS:
        return Gap("the weights (tensor headers)", facts.missing.get("tensors", "no weights"), tuple(rules),
                   "add model.safetensors (or its index), or pass --allow-partial to audit the rest alone")
    if kind == GapKind.CLASS_ROWS:
        undecided = undecided_rows(facts)
        return Gap("the input rows the model class builds", undecided[0] if undecided else "", tuple(rules),
                   f"{torch_extra()}, or pass --allow-partial to audit the rest alone")
    n = len(facts.tensors.tensors) if facts.tensors is not None else 0
    reason = facts.missing.get("input_embedding", f"none of the {n} tensors was recognised as the input embedding")
    return Gap("the vocabulary matrix", reason, tuple(rules),
               "the architecture's embedding tensor has a name this version does not know; --allow-partial "
               "accepts the audit without it")


def static_gaps(facts: Facts, skipped: Iterable[Skipped], by_design: Collection[GapKind] = ()) -> list[Gap]:
    """One gap per missing fact, naming the selected rules it kept from running; ``by_design``: facts the
    source lacks by design (``FactsSource.by_design``), whose rules do not apply."""
    by_kind: dict[GapKind, list[str]] = {}
    for s in skipped:
        rule = get_rule(s.rule) if s.rule else None
        if rule is None or rule.scope is not Scope.STATIC:
            continue
        kind = missing_gap(facts, rule.requires)
        if kind is not None and kind not in by_design:
            by_kind.setdefault(kind, []).append(rule.code)
    return [_gap(facts, kind, rules) for kind, rules in sorted(by_kind.items())]


def weights_gaps(skipped: Iterable[Skipped]) -> list[Gap]:
    """``--weights`` was asked for and its rules did not run: one gap, with the reason."""
    rules = [s for s in skipped if s.rule and (r := get_rule(s.rule)) is not None and r.scope is Scope.WEIGHTS]
    if not rules:
        return []
    return [Gap("the embedding rows (--weights)", rules[0].reason, tuple(s.rule for s in rules if s.rule))]


def _tokenizer(facts: Facts) -> TokenizerCoverage | None:
    tok = facts.tokenizer
    if tok is None:
        return None
    markers = len(tok.template_markers) if "template_markers" in vars(tok) else None  # only if the rules read it
    source = tok.files[0] if tok.files else tok.source
    return TokenizerCoverage(source, tok.length, tok.max_id, len(tok.added_tokens),
                             len(tok.special_tokens) + len(tok.extra_special_tokens), markers)


def _tensors(facts: Facts) -> tuple[TensorRole, ...]:
    emb = facts.embeddings
    if emb is None:
        return ()
    out = []
    for role, info in (("input embedding", emb.input), ("lm_head", emb.output), ("position table", emb.position),
                       ("token-type table", emb.token_type), ("classifier", emb.classifier)):
        if info is not None:
            out.append(TensorRole(role, info.name, info.rows, info.file))
    out += [TensorRole("vocabulary bias", b.name, b.rows, b.file) for b in emb.vocab_biases]
    return tuple(out)


def _config_keys(facts: Facts) -> tuple[str, ...]:
    cfg = facts.config
    p = cfg.text_prefix
    keys = [f"{p}{k}" for k, v in (("vocab_size", cfg.vocab_size), ("max_position_embeddings", cfg.max_position_embeddings),
                                    ("type_vocab_size", cfg.type_vocab_size), ("tie_word_embeddings", cfg.tie_word_embeddings),
                                    ("position_embedding_type", cfg.position_embedding_type), ("num_labels", cfg.num_labels))
            if v is not None]
    keys += sorted(set(cfg.special.keys.values()))
    keys += [k for k in ("model_type", "architectures", "id2label", "label2id") if cfg.raw.get(k)]
    return tuple(dict.fromkeys(keys))


def coverage_of(facts: Facts, run: RuleRun, rules_selected: int, splits: tuple[SplitCoverage, ...] = (),
                more: Sequence[Gap] = (), by_design: Collection[GapKind] = ()) -> Coverage:
    """What this audit examined and the gaps, from the facts and the rule run; ``splits`` and ``more``: the dataset
    splits the analyses covered and the gaps they left (``rules.analyses.AnalysisResult``); ``by_design``: what
    the source lacks by design."""
    gaps = static_gaps(facts, run.skipped, by_design) + weights_gaps(run.skipped) + list(run.gaps) + list(more)
    return Coverage(
        tokenizer=_tokenizer(facts),
        tensors=_tensors(facts),
        tensors_read=len(facts.tensors.tensors) if facts.tensors is not None else 0,
        config_keys=_config_keys(facts),
        datasets=splits,
        rules_run=len(set(run.ran)),
        rules_selected=rules_selected,
        not_examined=tuple(gaps),
    )
