"""The two ways ``--fix`` writes a repaired checkpoint (``--method``), as objects chosen once per run.

A :class:`Route` says what it cannot do (:meth:`Route.refusal`: the surgical route's limits;
:attr:`Route.reinit_refusal`: the transformers route re-initialises no rows; :attr:`Route.base_rows_refusal`: nor
does it copy rows from a base), writes the plan, and proves the
input's tensors in what it wrote. :data:`ROUTES` is the registry ``--method`` names; :func:`choose` settles,
once, which route writes a plan and narrows the plan to what that route can do. The pipeline then only calls
the chosen route: nothing compares the method's name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ..core.fixes import Compared, GrownTensor, Resized
from ..core.options import Method
from ..errors import AuditError
from ..facts import Facts
from ..facts.weight_formats.registry import format_of
from .early import EarlyCopies
from .repair_plan import CheckpointRepair
from .surgical import unsupported, write_surgical
from .transformers_route import write_transformers
from .verify import compare_files, compare_safetensors, compare_state_dicts

Written = tuple[tuple[GrownTensor, ...] | None, Resized | None]  # what the surgical / the transformers route did


class Route(ABC):
    """One way to write a :class:`CheckpointRepair` into a folder and prove the input's tensors in it."""

    method: ClassVar[Method]
    copies_early: ClassVar[bool] = False  # whether the untouched shards are copied while the input is audited
    reinit_refusal: ClassVar[str | None] = None  # why this route re-initialises no rows (None: it does)
    base_rows_refusal: ClassVar[str | None] = None  # why this route copies no rows from a base (None: it does)

    @property
    def name(self) -> str:
        """The report's name for it (``FixResult.method``)."""
        return self.method.value

    def refusal(self, facts: Facts, plan: CheckpointRepair) -> str | None:
        """Why this route cannot carry out ``plan``'s weight changes on this checkpoint, or None."""
        return None

    @abstractmethod
    def write(self, facts: Facts, dst: Path, plan: CheckpointRepair, *, early: EarlyCopies | None,
              written: Callable[[Path], None], mean_resizing: bool) -> Written:
        """Write the whole checkpoint with ``plan``'s weight changes to ``dst`` (the JSON edits come after)."""

    @abstractmethod
    def compare(self, src: Facts, out: Facts, plan: CheckpointRepair, dst: Path) -> Compared | None:
        """Every input tensor found unchanged in ``dst`` (old rows of grown ones); raises on a difference."""


class SurgicalRoute(Route):
    """Only the shards holding a changed tensor are rewritten (streamed); every other file is copied by the
    kernel. A plan that changes no weight is written this way whatever was asked: a copy."""

    method = Method.SURGICAL
    copies_early = True

    def refusal(self, facts: Facts, plan: CheckpointRepair) -> str | None:
        return unsupported(facts, plan)

    def write(self, facts: Facts, dst: Path, plan: CheckpointRepair, *, early: EarlyCopies | None,
              written: Callable[[Path], None], mean_resizing: bool) -> Written:
        copied = early.move_into(dst) if early is not None else set()
        return tuple(write_surgical(facts, dst, plan, written, copied)), None

    def compare(self, src: Facts, out: Facts, plan: CheckpointRepair, dst: Path) -> Compared | None:
        if src.tensors is None:
            return None
        if format_of(src.tensors).byte_ranges:
            return compare_safetensors(src, out, plan, dst)
        return compare_files(src, dst)


class TransformersRoute(Route):
    """``from_pretrained`` + ``resize_token_embeddings`` + ``save_pretrained`` (fix/transformers_route.py)."""

    method = Method.TRANSFORMERS
    reinit_refusal = "the transformers route does not re-initialise rows"
    base_rows_refusal = "the transformers route does not copy rows from a base (the surgical route does)"

    def write(self, facts: Facts, dst: Path, plan: CheckpointRepair, *, early: EarlyCopies | None,
              written: Callable[[Path], None], mean_resizing: bool) -> Written:
        return None, write_transformers(facts, dst, plan, mean_resizing=mean_resizing)

    def compare(self, src: Facts, out: Facts, plan: CheckpointRepair, dst: Path) -> Compared | None:
        return compare_state_dicts(src, dst, plan)


SURGICAL, TRANSFORMERS = SurgicalRoute(), TransformersRoute()
ROUTES: dict[str, Route] = {r.name: r for r in (SURGICAL, TRANSFORMERS)}  # --method's choices
FALLBACK = TRANSFORMERS  # writes what the surgical route refuses


def route_named(method: str | Route) -> Route:
    """The route ``--method`` names (a :class:`Route` is taken as it is)."""
    if isinstance(method, Route):
        return method
    route = ROUTES.get(method)
    if route is None:
        raise AuditError(None, f"--method must be one of {', '.join(ROUTES)}, not {method!r}")
    return route


@dataclass(frozen=True)
class Choice:
    """The route that writes the checkpoint, the plan narrowed to what it can do, and the note saying why a
    route other than the one asked for was used."""

    route: Route
    plan: CheckpointRepair
    notes: tuple[str, ...] = ()

    @property
    def method(self) -> str:
        """The report's ``fix.method``: the route's name, or ``copy`` when no weight changes."""
        return self.route.name if self.plan.changes_weights else "copy"


def choose(requested: Route, facts: Facts, plan: CheckpointRepair) -> Choice:
    """Which route writes ``plan``: the one asked for, unless it refuses the plan's weight changes (then
    :data:`FALLBACK`, and the note says why); a route that re-initialises no rows leaves those findings unfixed
    with its reason; a plan left changing no weight is copied (the surgical route)."""
    reason = requested.refusal(facts, plan) if plan.changes_weights else None
    if reason and plan.base_rows:  # the fallback would fill the base's rows with the mean: write nothing
        raise AuditError(facts.model_dir, f"--fix cannot copy the base's rows into it: {reason}")
    route = FALLBACK if reason else requested
    if route.reinit_refusal is not None and plan.reinit:
        plan = plan.without_reinit(route.reinit_refusal + (f" (it is used because {reason})" if reason else ""))
    if not plan.changes_weights:
        return Choice(SURGICAL, plan)
    return Choice(route, plan, (f"used the {route.name} route: {reason}",) if reason else ())
