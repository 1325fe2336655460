"""The seams of --fix: the route is an object chosen once, the plan is made once (and narrowed, not made again,
for a route that re-initialises no rows), the weights are read once per audit, one auditor factory serves the
gate and fix_checkpoint, and "resolved" is decided by rule code and location, never by message."""

from __future__ import annotations

import pytest
from builders import make_model, make_tokenizer
from weights_builders import llama_with_rows

from hf_vocab_audit.core.findings import Finding, Location, Severity
from hf_vocab_audit.core.fixes import Applicability, Fix, GrowRows, ReinitRows, SetJsonKey
from hf_vocab_audit.core.options import Method
from hf_vocab_audit.errors import AuditError
from hf_vocab_audit.facts import gather
from hf_vocab_audit.fix import METHODS, ROUTES, fix_checkpoint, make_plan
from hf_vocab_audit.fix import pipeline as pipeline_module
from hf_vocab_audit.fix.route import SURGICAL, TRANSFORMERS, SurgicalRoute, choose, route_named
from hf_vocab_audit.fix.settle import settle
from hf_vocab_audit.gate import run_gate

from .fixkit import broken

CHAT = ["<|im_start|>", "<|im_end|>"]
EMB, HEAD = "model.embed_tokens.weight", "lm_head.weight"
NO_REINIT = "the transformers route does not re-initialise rows"


def _count(monkeypatch, owner, name: str) -> list[int]:
    """Wrap ``owner.name`` so that each call is counted; the list's length is the count."""
    real = getattr(owner, name)
    calls: list[int] = []

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


# ---- the route: one object, chosen once ----------------------------------------------------------------


def test_every_method_names_one_route():
    assert set(ROUTES) == {m.value for m in Method} and METHODS == tuple(ROUTES)
    assert route_named("transformers") is TRANSFORMERS and route_named(Method.SURGICAL) is SURGICAL
    with pytest.raises(AuditError, match="--method must be one of surgical, transformers, not 'fast'"):
        route_named("fast")


class SpyRoute(SurgicalRoute):
    """The surgical route, counting what the pipeline asks of it."""

    def __init__(self):
        self.calls: list[str] = []

    def refusal(self, facts, plan):
        self.calls.append("refusal")
        return super().refusal(facts, plan)

    def write(self, facts, dst, plan, **kwargs):
        self.calls.append("write")
        return super().write(facts, dst, plan, **kwargs)

    def compare(self, src, out, plan, dst):
        self.calls.append("compare")
        return super().compare(src, out, plan, dst)


def test_the_route_is_chosen_once_and_writes_and_proves_the_copy(tmp_path, guard_input, monkeypatch):
    src = guard_input(broken(tmp_path / "m"))
    spy = SpyRoute()
    chosen = _count(monkeypatch, pipeline_module, "choose")
    report = fix_checkpoint(src, output=tmp_path / "out", method=spy, verify_load="never")
    assert len(chosen) == 1 and spy.calls == ["refusal", "write", "compare"]
    assert report.fix is not None and report.fix.method == "surgical" and report.fix.rows_after == 106
    assert report.fix.verification is not None and report.fix.verification.compared is not None


# ---- the plan: made once, narrowed for the transformers route --------------------------------------------


def _finding(code: str, *edits, where: Location | None = None, message: str | None = None,
             applicability: Applicability = Applicability.SAFE) -> Finding:
    fix = Fix(f"{code}'s fix", applicability, tuple(edits)) if edits else None
    return Finding(code, "some-rule", Severity.WARNING, message or f"{code} fired", where or Location(file="config.json"),
                   fix=fix)


def _facts(tmp_path):
    make_model(tmp_path / "m", "llama", 104, tie_word_embeddings=False)
    make_tokenizer(tmp_path / "m", 104)
    return gather(tmp_path / "m")


def _reinit(token_id: int) -> Finding:
    return _finding("HVA601", ReinitRows((token_id,), (EMB, HEAD), (EMB, HEAD)), applicability=Applicability.UNSAFE,
                    where=Location(file="model.safetensors", tensor=EMB, token_id=token_id))


class Refusing(SurgicalRoute):
    def refusal(self, facts, plan):
        return "it cannot"


def test_a_route_that_does_not_reinitialise_narrows_the_one_plan(tmp_path):
    """The transformers route, used because the surgical one refuses: the re-initialising finding is left
    alone in its place among the others, with both reasons; its fix is withdrawn; the growth stays."""
    facts = _facts(tmp_path)
    display = Applicability.DISPLAY_ONLY
    findings = [_finding("HVA101", GrowRows(106, EMB)),
                _finding("HVA300", SetJsonKey("config.json", "x", 1), applicability=display),
                _reinit(101),
                _finding("HVA950", SetJsonKey("config.json", "y", 1), applicability=display)]
    plan = make_plan(facts, findings, unsafe=True)
    assert plan.reinit == {EMB: (101,), HEAD: (101,)} and [u.code for u in plan.unfixed] == ["HVA300", "HVA950"]
    assert sorted(a.code for a in plan.applied) == ["HVA101", "HVA601"]

    choice = choose(Refusing(), facts, plan)
    assert choice.route is TRANSFORMERS and choice.method == "transformers"
    assert choice.notes == ("used the transformers route: it cannot",)
    narrowed = choice.plan
    assert narrowed.reinit == {} and narrowed.reinit_exclude == {} and narrowed.grow == plan.grow
    assert [a.code for a in narrowed.applied] == ["HVA101"]
    assert [(u.code, u.reason.split(":")[0]) for u in narrowed.unfixed] == [
        ("HVA300", "its fix is shown, never applied"), ("HVA601", f"{NO_REINIT} (it is used because it cannot)"),
        ("HVA950", "its fix is shown, never applied")]


def test_a_plan_left_changing_no_weight_is_a_copy(tmp_path):
    facts = _facts(tmp_path)
    plan = make_plan(facts, [_reinit(101)], unsafe=True)
    choice = choose(TRANSFORMERS, facts, plan)
    assert choice.route is SURGICAL and choice.method == "copy" and choice.notes == ()
    assert [(u.code, u.reason) for u in choice.plan.unfixed] == [("HVA601", NO_REINIT)]
    assert choose(SURGICAL, facts, plan).plan is plan  # the surgical route re-initialises: nothing narrowed


def test_a_reinitialisation_is_a_fix_of_its_own(tmp_path):
    """without_reinit withdraws a re-initialising fix whole: the planner refuses one mixed with other edits."""
    facts = _facts(tmp_path)
    mixed = _finding("HVA601", ReinitRows((101,), (EMB,), (EMB,)), GrowRows(106, EMB))
    with pytest.raises(AssertionError, match="a ReinitRows edit is a fix of its own"):
        make_plan(facts, [mixed])


@pytest.mark.parametrize("method", ["surgical", "transformers"])
def test_the_plan_is_made_once_and_the_weights_are_read_once_per_audit(tmp_path, guard_input, monkeypatch, method):
    """Rows re-initialised (surgical) or refused (transformers): one plan, and the flagged rows come from the
    input audit's own weights pass (two passes in all: the input's audit and the output's)."""
    from hf_vocab_audit.weights import analysis

    src = guard_input(llama_with_rows(tmp_path / "m", zero=CHAT))
    plans = _count(monkeypatch, pipeline_module, "make_plan")
    passes = _count(monkeypatch, analysis, "gather_weights")
    report = fix_checkpoint(src, output=tmp_path / "out", weights=True, unsafe_fixes=True, method=method,
                            verify_load="never")
    assert len(plans) == 1 and len(passes) == 2
    fix = report.to_dict()["fix"]
    if method == "surgical":
        assert fix["reinit"] == {HEAD: [100, 101], EMB: [100, 101]} and fix["method"] == "surgical"
    else:
        assert report.fixes == () and fix["method"] == "copy"
        assert [u["reason"] for u in fix["unfixed"]] == [NO_REINIT] * 2


def test_the_flagged_rows_left_out_of_the_mean_are_the_weights_analysis_own(tmp_path, guard_input, monkeypatch):
    """The rows read from the input audit's weights section equal what the analysis flags when run again."""
    from hf_vocab_audit.weights.analysis import gather_weights

    src = guard_input(llama_with_rows(tmp_path / "m", zero=CHAT))
    seen = []
    real = pipeline_module.make_plan

    def spy(facts, findings, **kwargs):
        rows = kwargs["untrained_rows"]()
        weights, _ = gather_weights(facts)
        assert weights is not None
        seen.append((rows, {s.stats.tensor: tuple(int(i) for i in s.flagged()) for s in weights.sides}))
        return real(facts, findings, **kwargs)

    monkeypatch.setattr(pipeline_module, "make_plan", spy)
    fix_checkpoint(src, output=tmp_path / "out", weights=True, unsafe_fixes=True, verify_load="never")
    ((from_section, from_analysis),) = seen
    assert from_section == from_analysis and set(from_section) == {EMB, HEAD}
    assert all({100, 101} <= set(ids) for ids in from_section.values())


def test_the_flagged_rows_are_read_again_only_when_the_section_does_not_list_them_all(tmp_path, monkeypatch):
    """Past the section's list limit (thousands of unused placeholders) the analysis runs again, so the mean
    still leaves out every flagged row."""
    from hf_vocab_audit.audit import audit
    from hf_vocab_audit.fix.reinit import flagged_rows
    from hf_vocab_audit.weights import analysis

    src = llama_with_rows(tmp_path / "m", zero=CHAT)
    report = audit(src, weights=True)
    facts = gather(src)
    passes = _count(monkeypatch, analysis, "gather_weights")
    complete = flagged_rows(report, facts)
    assert passes == []
    monkeypatch.setattr(analysis, "LIST_LIMIT", 1)
    capped = audit(src, weights=True)
    passes.clear()
    assert flagged_rows(capped, facts) == complete and len(passes) == 1


# ---- "resolved": by rule code and location ---------------------------------------------------------------


def test_findings_sharing_a_message_are_told_apart_by_location(tmp_path):
    """Two findings of one rule with one message at two tensors: the one gone from the output's audit is
    resolved, the one still there is not (a lookup by message would take them for one)."""
    facts = _facts(tmp_path)
    at_emb = _finding("HVA104", message="rows past the tokenizer", where=Location(file="model.safetensors", tensor=EMB))
    at_head = _finding("HVA104", message="rows past the tokenizer", where=Location(file="model.safetensors", tensor=HEAD))
    plan = make_plan(facts, [_finding("HVA101", GrowRows(106, EMB)), at_emb, at_head])
    fixes, unfixed = settle(plan, [at_head])
    assert [(a.code, a.action) for a in fixes] == [("HVA101", "grow-embeddings"), ("HVA104", "resolved")]
    assert [(u.code, u.message) for u in unfixed] == [("HVA104", "rows past the tokenizer")]
    fixes, unfixed = settle(plan, [at_emb])
    assert [(a.code, a.action) for a in fixes] == [("HVA101", "grow-embeddings"), ("HVA104", "resolved")]
    assert len(unfixed) == 1


def test_a_finding_still_at_its_place_is_not_resolved_whatever_its_message(tmp_path):
    facts = _facts(tmp_path)
    where = Location(file="config.json", key="vocab_size")
    before = _finding("HVA103", message="vocab_size is 104 but 3 ids past it", where=where)
    plan = make_plan(facts, [_finding("HVA101", GrowRows(106, EMB)), before])
    now = _finding("HVA103", message="vocab_size is 106 but 1 id past it", where=where)  # counts changed
    fixes, unfixed = settle(plan, [now])
    assert [a.code for a in fixes] == ["HVA101"] and [u.message for u in unfixed] == [before.message]
    assert settle(plan, [])[1] == ()  # gone: resolved by the growth


def test_nothing_counts_as_resolved_when_no_fix_was_applied(tmp_path):
    facts = _facts(tmp_path)
    plan = make_plan(facts, [_finding("HVA104", where=Location(file="model.safetensors", tensor=EMB))])
    fixes, unfixed = settle(plan, [])
    assert fixes == () and [u.code for u in unfixed] == ["HVA104"]


# ---- one auditor factory ---------------------------------------------------------------------------------


def test_the_gate_and_fix_checkpoint_build_their_audit_with_one_factory(tmp_path, guard_input, monkeypatch):
    import hf_vocab_audit.fix as fix_package

    src = guard_input(broken(tmp_path / "m"))
    made = _count(monkeypatch, fix_package, "folder_auditor")
    gated = run_gate(str(src), fix=True, output=str(tmp_path / "gate-out"), verify_load="never").report
    assert len(made) == 1
    made = _count(monkeypatch, pipeline_module, "folder_auditor")
    direct = fix_checkpoint(src, output=tmp_path / "py-out", verify_load="never")
    assert len(made) == 1
    assert gated.fix is not None and direct.fix is not None
    assert [f.to_dict() for f in gated.fixes] == [f.to_dict() for f in direct.fixes] and gated.fixes
    assert gated.fix.unfixed == direct.fix.unfixed
    assert [(f.code, f.location) for f in gated.findings] == [(f.code, f.location) for f in direct.findings]
