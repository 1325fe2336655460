"""The work a chat template may do on one row, and on one split, whatever the template says.

A chat template comes with the checkpoint under audit: untrusted. transformers renders it in Jinja's
immutable sandbox, which stops attribute tricks but not work: nested loops, a string doubled in a loop,
``join`` or ``tojson`` of a generated list, a recursive macro, or ``{% generation %}`` blocks (whose
tracking joins everything rendered so far at each block) each cost minutes or gigabytes on one row.

:func:`compiled` builds the template in :class:`BudgetSandbox`: transformers' own environment (the same
extensions, filters and globals, copied from the environment transformers compiles the template in, so
the text is the same) with the hooks a sandbox offers to count work. Every call, filter, ``for`` item,
``~`` concatenation, intercepted operator (``+ * ** % //``) and output piece checks the row's
:class:`Meter`: past :data:`ROW_SECONDS` or past :data:`ROW_CHARS` characters in one string (or the
output) the render raises :class:`OverBudget`, before the work is done where the size is known in
advance (``"a" * n``, ``s * n``, a ``**``, a call with a huge count, ``join``). A ``MemoryError`` or
``RecursionError`` from a render is the same finding: whatever allocates past what Python can get, or
nests past its stack, is work the template asked for (:func:`over_budget_message`).

:class:`SplitSpend` bounds a whole split: a fixed allowance plus an allowance per row, in seconds and in
characters rendered. Past it the rest of the split is not rendered (a coverage gap: fail closed).
"""

from __future__ import annotations

import functools
import json
import re
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..errors import jinja_missing

try:
    from jinja2 import nodes
    from jinja2.exceptions import SecurityError, TemplateError
    from jinja2.ext import Extension
    from jinja2.runtime import markup_join, str_join
    from jinja2.sandbox import MAX_RANGE, ImmutableSandboxedEnvironment
    from jinja2.utils import Namespace, _PassArg
except ImportError:  # a base install without jinja2: one line naming it (exit 2), not a traceback
    raise jinja_missing() from None

ROW_SECONDS = 5.0  # the renders of one row (public templates on a 300-turn row: up to 2 s on a busy machine)
ROW_CHARS = 4_000_000  # the longest string a render may build or output (4 MB) ...
ROW_CHARS_PER_INPUT = 16  # ... or this many times the characters of the row's turns, when more
SPLIT_SECONDS = 20.0  # a split's rendering: this much (four rows at the row budget) ...
SPLIT_SECONDS_PER_ROW = 0.05  # ... plus 50 ms per row rendered (public templates on short rows: under 1 ms)
SPLIT_CHARS = 256_000_000  # characters rendered in a split: this much ...
SPLIT_CHARS_PER_ROW = 64_000  # ... plus this per row rendered
MAX_COUNT = MAX_RANGE  # the largest number a call or filter may take (a width, an indent, a repeat count)
_CHECK_EVERY = 64  # calls, filters, operators and loop items between two clock readings


class OverBudget(Exception):  # noqa: N818 - named for what happened, as MemoryError is
    """A render asked for more than its row's budget (raised from the sandbox's hooks)."""


@dataclass
class Meter:
    """One row's budget: a deadline, and the size any string may reach (raised once when the row itself is
    large: ``input_chars`` is measured only then)."""

    deadline: float
    chars: int = ROW_CHARS
    input_chars: Any = None  # () -> int: the characters of the row's turns
    items: int = 0
    widened: bool = False

    def tick(self) -> None:
        if time.perf_counter() > self.deadline:
            raise OverBudget(f"rendering took over {ROW_SECONDS:g} s")

    def item(self) -> None:
        self.items += 1
        if not self.items % _CHECK_EVERY:
            self.tick()

    def size(self, n: int, what: str = "a string") -> None:
        if n > self.chars and not self.widened and self.input_chars is not None:
            self.widened = True
            self.chars = max(self.chars, ROW_CHARS_PER_INPUT * int(self.input_chars()))
        if n > self.chars:
            raise OverBudget(f"{what} of over {self.chars:,} characters")


_METER: ContextVar[Meter | None] = ContextVar("chat_render_meter", default=None)


def _meter() -> Meter:
    m = _METER.get()
    if m is None:  # a template compiled here is rendered only under a meter
        raise OverBudget("rendered outside a budget")
    return m


def _weight(value: Any) -> int:
    """Characters a value stands for, shallowly (a string's length, a container's items and strings)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, (list, tuple, dict, set, frozenset)):
        return len(value) + sum(len(v) for v in value if isinstance(v, str))
    return 0


def _check_value(m: Meter, value: Any) -> Any:
    kind = type(value)
    if kind is str:
        if len(value) > m.chars:
            m.size(len(value))
    elif kind in _CONTAINERS:
        m.size(_weight(value))
    return value


_CONTAINERS = frozenset({list, tuple, dict})


def _check_args(m: Meter, obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Refuse before the work: a count over the budget (``center(10**9)``, ``tojson(indent=10**9)``), a
    ``join`` or ``replace`` whose result would be over it."""
    for a in args:
        if type(a) is int and a > MAX_COUNT:
            raise OverBudget(f"a call with the count {a:,} (over {MAX_COUNT:,})")
    for a in kwargs.values():
        if type(a) is int and a > MAX_COUNT:
            raise OverBudget(f"a call with the count {a:,} (over {MAX_COUNT:,})")
    owner = getattr(obj, "__self__", None)
    if type(owner) is not str:
        return
    name = obj.__name__
    if name == "join" and args:
        items = args[0]
        if isinstance(items, (list, tuple)):
            m.size(sum(len(x) for x in items if isinstance(x, str)) + len(owner) * len(items), "a joined string")
    elif name == "replace" and len(args) >= 2:
        _check_replace(m, owner, args[0], args[1])


def _check_replace(m: Meter, s: Any, old: Any, new: Any) -> None:
    if isinstance(s, str) and isinstance(old, str) and isinstance(new, str) and len(new) > len(old):
        m.size(len(s) + (len(s) // max(len(old), 1) + 1) * (len(new) - len(old)), "a replaced string")


_WIDTHS = re.compile(r"%[-+ #0]*(\d+)")


def _check_binop(m: Meter, op: str, left: Any, right: Any) -> None:
    if op == "*" and isinstance(left, int) and isinstance(right, int):
        m.size((abs(left).bit_length() + abs(right).bit_length()) // 3, "a product")  # digits, roughly
    elif op == "*":
        for seq, n in ((left, right), (right, left)):
            if isinstance(n, int) and isinstance(seq, (str, list, tuple)):
                m.size(_weight(seq) * max(n, 0), "a repeated value")
    elif op == "**" and isinstance(left, int) and isinstance(right, int) and right > 0:
        m.size(abs(left).bit_length() * right // 3, "a power")  # digits, roughly
    elif op == "%" and isinstance(left, str):
        widths = [int(w) for w in _WIDTHS.findall(left)]
        if widths and max(widths) > MAX_COUNT:
            raise OverBudget(f"a format width of {max(widths):,} (over {MAX_COUNT:,})")
    elif op == "+" and isinstance(left, (str, list, tuple)) and isinstance(right, (str, list, tuple)):
        m.size(_weight(left) + _weight(right), "a concatenation")


def _budget_iter(value: Any) -> Any:
    """What every ``{% for %}`` of a template iterates: its items, counted."""
    m = _meter()
    for item in value:
        m.item()
        yield item


def _bounded_join(seq: Any, join: Any) -> str:
    m = _meter()
    m.tick()
    items = tuple(seq)
    m.size(sum(len(x) for x in items if isinstance(x, str)), "a ~ concatenation")
    return str(join(items))


def _counted(m: Meter, value: Any) -> Any:
    m.item()
    return value


def _filter(f: Any) -> Any:
    """A filter that checks the meter before it runs (counts, joins) and after (the string it made)."""
    skip = 1 if _PassArg.from_obj(f) is not None else 0  # its context, eval context or environment first
    name = getattr(f, "__name__", "")

    @functools.wraps(f)  # keeps jinja_pass_arg: the filter gets its context or environment as before
    def bounded(*args: Any, **kwargs: Any) -> Any:
        m = _meter()
        m.item()
        value, rest = (args[skip], args[skip + 1:]) if len(args) > skip else (None, ())
        if rest or kwargs:
            _check_args(m, f, rest, kwargs)
        if name == "do_join" and value is not None and not isinstance(value, (str, dict)):
            items = [_counted(m, x) for x in value]  # a generated list is measured before it is joined
            sep = rest[0] if rest else kwargs.get("d", "")
            m.size(sum(len(x) if isinstance(x, str) else 0 for x in items) + len(str(sep)) * len(items),
                   "a joined string")
            args = (*args[:skip], items, *rest)
        elif name == "do_replace" and len(rest) >= 2:
            _check_replace(m, value, rest[0], rest[1])
        return _check_value(m, f(*args, **kwargs))

    return bounded


_SMALL_INT_OPS = frozenset({"+", "*", "//", "%"})  # on two ints: no bigger than their digits (a product's checked)


class BudgetSandbox(ImmutableSandboxedEnvironment):
    """transformers' sandbox, with every piece of work a template can ask for counted against the row's
    :class:`Meter` (see the module's docstring)."""

    intercepted_binops = frozenset({"+", "*", "**", "%", "//"})

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805 - jinja's signature
        m = _meter()
        m.item()
        if args or kwargs:
            _check_args(m, __obj, args, kwargs)
        return _check_value(m, super().call(__context, __obj, *args, **kwargs))

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if type(left) is int and type(right) is int and operator in _SMALL_INT_OPS:  # loop.index + 1
            if operator != "*" or left.bit_length() + right.bit_length() < 4096:
                return self.binop_table[operator](left, right)
        m = _meter()
        m.item()
        _check_binop(m, operator, left, right)
        return _check_value(m, self.binop_table[operator](left, right))

    def concat(self, pieces: Any) -> str:  # the output of render(), counted
        return bounded_output(pieces)

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        """Every ``{% for %}`` iterates through :func:`_budget_iter`, whatever it loops over."""
        tree = super()._parse(source, name, filename)
        for loop in tree.find_all(nodes.For):
            loop.iter = nodes.Filter(loop.iter, "_budget_iter", [], [], None, None, lineno=loop.lineno)
        return tree


def bounded_output(pieces: Any) -> str:
    """The pieces a template yields, joined, the total counted as it grows."""
    m = _meter()
    out = []
    total = 0
    for piece in pieces:
        total += len(piece)
        m.size(total, "an output")
        m.item()
        out.append(piece)
    return "".join(out)


@functools.lru_cache(maxsize=1)
def transformers_environment() -> Any:
    """transformers' environment (its jinja2 version check, extensions, filters, globals), taken from an empty
    template: compiling the untrusted one there would fold its constants ("a" * 10**10) unbudgeted."""
    from transformers.utils.chat_template_utils import _compile_jinja_template

    return _compile_jinja_template("").environment


class _Generation(Extension):
    """``{% generation %}...{% endgeneration %}`` rendered as its body (transformers' ``AssistantTracker``
    without the tracking: a serving engine renders the tag's body and marks nothing)."""

    tags = {"generation"}

    def parse(self, parser: Any) -> nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller: Any) -> str:
        return str(caller())


class _Namespace(Namespace):
    """``namespace()`` refusing underscore-prefixed attributes, as transformers' ``TemplateNamespace`` does."""

    def __init__(*args: Any, **kwargs: Any) -> None:  # noqa: N805 - jinja2.utils.Namespace's signature trick
        self, rest = args[0], args[1:]
        attrs = dict(*rest, **kwargs)
        for name in attrs:
            _Namespace._check(name)
        Namespace.__init__(self, attrs)

    def __setitem__(self, name: str, value: Any) -> None:
        _Namespace._check(name)
        Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check(name: object) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise SecurityError(f"a chat template cannot store the attribute {name!r} on a namespace")


def _raise_exception(message: str) -> None:
    raise TemplateError(message)


def _tojson(x: Any, ensure_ascii: bool = False, indent: int | None = None, separators: Any = None,
            sort_keys: bool = False) -> str:
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(format: str) -> str:  # noqa: A002 - the name templates call it with
    return datetime.now().strftime(format)


@functools.lru_cache(maxsize=1)
def plain_environment() -> Any:
    """transformers' chat-template environment rebuilt from jinja2 alone: its options, extensions, filter and
    globals as read in transformers 5.x ``utils/chat_template_utils.py`` (``_cached_compile_jinja_template``).
    For the renders of a GGUF's template, which llama.cpp renders with its own engine and which must not cost a
    ``check model.gguf`` the import of transformers (about a second)."""
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[_Generation, "jinja2.ext.loopcontrols"])
    env.filters["tojson"] = _tojson
    env.globals.update(raise_exception=_raise_exception, strftime_now=_strftime_now, dict=dict,
                       namespace=_Namespace)
    return env


@functools.lru_cache(maxsize=16)
def compiled(template: str, plain: bool = False) -> Any:
    """``template`` compiled as transformers compiles it, in a :class:`BudgetSandbox`. ``plain``: in
    :func:`plain_environment` (the same options, filters and globals, without importing transformers)."""
    base = plain_environment() if plain else transformers_environment()
    env = BudgetSandbox(trim_blocks=base.trim_blocks, lstrip_blocks=base.lstrip_blocks,
                        keep_trailing_newline=base.keep_trailing_newline,
                        extensions=[type(e) for e in base.extensions.values()])
    env.filters.update({name: _filter(f) for name, f in base.filters.items()})
    env.filters["_budget_iter"] = _budget_iter
    env.globals.update(base.globals)  # range is the sandbox's (a range of at most MAX_RANGE): loops count it
    tmpl = env.from_string(template)
    namespace = tmpl.root_render_func.__globals__  # the compiled module: what ``~`` calls
    namespace["str_join"] = functools.partial(_bounded_join, join=str_join)
    namespace["markup_join"] = functools.partial(_bounded_join, join=markup_join)
    return tmpl


@dataclass
class SplitSpend:
    """What a split's renders have spent in this process (each worker bounds its own share)."""

    rows: int = 0
    seconds: float = 0.0
    chars: int = 0
    spent: bool = False

    def allows(self) -> bool:
        if not self.spent:
            self.spent = self.seconds > SPLIT_SECONDS + SPLIT_SECONDS_PER_ROW * self.rows \
                or self.chars > SPLIT_CHARS + SPLIT_CHARS_PER_ROW * self.rows
        return not self.spent


@dataclass
class RowMeter:
    """The context a row's renders run in: one :class:`Meter` for all of the row's renders."""

    spend: SplitSpend
    input_chars: Any
    meter: Meter = field(init=False)

    def __enter__(self) -> Meter:
        self.meter = Meter(time.perf_counter() + ROW_SECONDS, input_chars=self.input_chars)
        self._start = self.meter.deadline - ROW_SECONDS
        self._token = _METER.set(self.meter)
        return self.meter

    def __exit__(self, *exc: Any) -> None:
        _METER.reset(self._token)
        self.spend.rows += 1
        self.spend.seconds += time.perf_counter() - self._start


def over_budget_message(exc: BaseException) -> str | None:
    """The budget finding's message for what a render raised; None when it is the template's own refusal."""
    if isinstance(exc, OverBudget):
        return str(exc)
    if isinstance(exc, MemoryError):
        return "rendering ran out of memory"
    if isinstance(exc, RecursionError):
        return "rendering nested past Python's recursion limit"
    return None


def input_chars(conversation: Any) -> int:
    """Characters of a row's turns (their string values, one level into lists of parts)."""
    total = 0
    for turn in conversation if isinstance(conversation, list) else ():
        for value in turn.values() if isinstance(turn, dict) else ():
            if isinstance(value, str):
                total += len(value)
            elif isinstance(value, list):
                total += sum(len(str(v)) for v in value)
    return total


_SPENDS: dict[str, SplitSpend] = {}


def split_spend(key: str) -> SplitSpend:
    """The spending of the split whose renderer carries ``key``, in this process (a worker that renders
    several batches of the split counts them together)."""
    spend = _SPENDS.get(key)
    if spend is None:
        spend = _SPENDS[key] = SplitSpend()
    return spend


def new_key() -> str:
    import uuid

    return uuid.uuid4().hex


def render_with_spans(template: Any, **context: Any) -> tuple[str, list[tuple[int, int]]]:
    """transformers' ``_render_with_assistant_indices`` on a budgeted template: the pieces as they come
    (counted), and the character span of each ``{% generation %}`` block."""
    m = _meter()
    blocks: list[str] = []
    spans: list[tuple[int, int]] = []
    total = 0
    with template.environment.activate_tracker(blocks, spans):
        for block in template.generate(**context):
            total += len(block)
            m.size(total, "an output")
            m.item()
            blocks.append(block)
        return "".join(blocks), spans
