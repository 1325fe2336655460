"""The nesting depth of JSON text, measured before a parser sees it.

pyarrow's JSON reader (which ``datasets`` runs on ``.json``, ``.jsonl`` and their ``.gz``) recurses per
level: a row nested 500,000 deep crashed the process (SIGSEGV), which no ``except`` can turn into a line.
So the depth is counted first, vectorised with numpy, over bytes fed in any chunks: brackets inside
strings do not count (a quote is escaped by an odd run of backslashes before it), and the state (depth,
inside a string, trailing backslashes) carries from one chunk to the next.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_JSON_DEPTH = 256  # dataset rows nest a few levels; Python's own json stops near 1,000


@dataclass
class DepthState:
    depth: int = 0  # opened minus closed brackets so far
    low: int = 0  # the lowest that count has been (a run of closers must not hide the openers after it)
    in_string: int = 0  # 1 inside a string
    backslashes: int = 0  # length of the run of backslashes that ends the bytes seen so far
    deepest: int = 0


def feed(state: DepthState, chunk: bytes) -> int:
    """Account for ``chunk`` (the bytes after those already fed); the deepest level so far.

    The level is the rise of the bracket count above its lowest point before, an upper bound on what any
    parser reaches, however the brackets are unbalanced. A newline ends a string (JSON strings hold
    none), so an unterminated string cannot hide the next line's brackets from this count."""
    import numpy as np

    if not chunk:
        return state.deepest
    a = np.frombuffer(chunk, dtype=np.uint8)
    n = a.size
    idx = np.arange(n, dtype=np.int64)
    bs = a == 0x5C
    last_other = np.maximum.accumulate(np.where(bs, -1, idx))
    run = np.where(bs, idx - last_other + np.where(last_other < 0, state.backslashes, 0), 0)
    before = np.empty(n, dtype=np.int64)  # backslashes just before each byte
    before[0] = state.backslashes
    before[1:] = run[:-1]
    quote = (a == 0x22) & (before % 2 == 0)
    newline = a == 0x0A
    counted = np.cumsum(quote, dtype=np.int64)
    at_line = np.maximum.accumulate(np.where(newline, counted, 0))  # quotes counted up to the last newline
    carried = np.where(np.maximum.accumulate(newline), 0, state.in_string)
    inside = ((counted - at_line + carried) % 2 == 1) & ~newline
    delta = ((a == 0x5B) | (a == 0x7B)).astype(np.int64) - ((a == 0x5D) | (a == 0x7D))
    delta[inside | quote] = 0
    depth = np.cumsum(delta) + state.depth
    low = np.minimum(np.minimum.accumulate(depth), state.low)
    state.deepest = max(state.deepest, int((depth - low).max()))
    state.depth, state.low = int(depth[-1]), int(low[-1])
    state.in_string = int(inside[-1])
    state.backslashes = int(run[-1])
    return state.deepest


def _openers(data: bytes) -> int:
    return data.count(b"[") + data.count(b"{")


def _most_openers_in_a_line(lines: bytes) -> int:
    """The most opening brackets in one of ``lines`` (complete lines, each ending in b"\\n")."""
    import numpy as np

    a = np.frombuffer(lines, dtype=np.uint8)
    openers = np.flatnonzero((a == 0x5B) | (a == 0x7B))
    ends = np.flatnonzero(a == 0x0A)
    if not ends.size:
        return 0
    return int(np.diff(np.searchsorted(openers, ends), prepend=0).max())  # openers before each line end


class LineDepth:
    """The deepest level of any line of JSON Lines text fed in chunks, at the cost of counting bytes.

    pyarrow parses each line on its own, so a line is what must stay under the limit. A line with at most
    ``limit`` opening brackets (strings included) cannot be deeper; only lines with more are measured by
    :func:`feed` (from their first byte). Raises nothing: :attr:`deepest` is over ``limit`` once a line is.
    """

    def __init__(self, limit: int = MAX_JSON_DEPTH) -> None:
        self.limit = limit
        self.deepest = 0
        self._pending: list[bytes] = []  # the current line's bytes while it is not measured
        self._pending_openers = 0
        self._hot: DepthState | None = None  # the current line, measured from its start

    def _measure(self, data: bytes, state: DepthState | None = None) -> DepthState:
        state = state or DepthState()
        self.deepest = max(self.deepest, feed(state, data))
        return state

    def feed(self, chunk: bytes) -> int:
        first = chunk.find(b"\n")
        head = chunk if first < 0 else chunk[: first + 1]
        if self._hot is not None:
            self._measure(head, self._hot)
        elif self._pending_openers + _openers(head) > self.limit:
            self._hot = self._measure(b"".join([*self._pending, head]))
            self._pending, self._pending_openers = [], 0
        else:
            self._pending.append(head)
            self._pending_openers += _openers(head)
        if first < 0:
            return self.deepest
        self._hot, self._pending, self._pending_openers = None, [], 0  # the line ended
        last = chunk.rfind(b"\n")
        body, tail = chunk[first + 1 : last + 1], chunk[last + 1 :]
        if _openers(body) > self.limit and _most_openers_in_a_line(body) > self.limit:
            self._measure(body)  # whole lines: the rise over them bounds each line's depth
        if _openers(tail) > self.limit:
            self._hot = self._measure(tail)
        elif tail:
            self._pending, self._pending_openers = [tail], _openers(tail)
        return self.deepest
