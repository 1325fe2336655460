"""The GGUF source: the facts of a ``.gguf`` file (llama.cpp's format) as the project's one :class:`Facts`,
so the rules that mean the same thing on a GGUF (ids past ``token_embd``/``output`` rows, special ids out of
range, chat-template markers, duplicate token strings) run unchanged, plus :class:`GGUFFacts` for the rules
only a GGUF has (HVA90x). Metadata and tensor infos only (``io.gguf_header``); the tensor data is never read.

A sharded GGUF (``name-00001-of-00003.gguf``) is read by its first part: the metadata is there, and the
tensor infos of every part are gathered.
"""

from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ...core.options import AuditOptions
from ...core.scope import Scope
from ...errors import AuditError
from ...io.gguf_header import GGUFArray, GGUFHeader, ReadBudget, read_gguf
from ...io.safetensors_header import TensorInfo
from ..checkpoint import Facts
from ..config import parse_config
from ..embeddings import EmbeddingFacts
from ..gguf_facts import GGUFFacts
from ..llama_cpp_tables import MATCHED_WHOLE, SPECIAL_ID_KEYS
from ..requirements import GapKind
from ..tensors import CheckpointTensors
from ..tokenizer import TokenizerFacts
from ..tokenizer.added_tokens import AddedTokenConflict, AddedTokenInfo
from ..tree import regular_file_inside
from ..weight_formats.gguf import GGUFTensors
from . import FactsSource, Repair, SourceError

if TYPE_CHECKING:  # annotations only: reading a folder does not import the findings model
    pass

TOKENS = "tokenizer.ggml.tokens"
TOKEN_TYPE = "tokenizer.ggml.token_type"
CHAT_TEMPLATE = "tokenizer.chat_template"
KEEP = frozenset({TOKENS, TOKEN_TYPE})
SHARD_RE = re.compile(r"^(?P<stem>.+)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$")
MAX_SHARDS = 1024
GGUF_FORMAT = GGUFTensors.name
VOCAB_ONLY = "{file} is a vocabulary-only GGUF (a tokenizer, no tensors by design)"


def is_gguf_target(path: Path) -> bool:
    """A ``.gguf`` file, or a folder that holds one and no ``config.json`` (then it is not an HF checkpoint)."""
    if path.suffix == ".gguf" and not path.is_dir():
        return True
    return path.is_dir() and not (path / "config.json").exists() and any(path.glob("*.gguf"))


def locate_gguf(path: Path) -> Path:
    """The GGUF file to read: ``path`` itself, or the one GGUF (or first shard) in a folder."""
    if not path.exists():
        raise AuditError(path, "does not exist")
    if not path.is_dir():
        return path
    found = sorted(p for p in path.glob("*.gguf") if p.is_file() or p.is_symlink())
    firsts = [p for p in found if not SHARD_RE.match(p.name) or SHARD_RE.match(p.name)["no"] == "00001"]  # type: ignore[index]
    if len(firsts) != 1:
        names = ", ".join(p.name for p in firsts[:5]) or "none"
        raise AuditError(path, f"holds {len(firsts)} GGUF files ({names}); pass the one to check")
    return regular_file_inside(firsts[0], path)


def _int(header: GGUFHeader, key: str) -> int | None:
    value = header.metadata.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise AuditError(header.path, f"metadata {key} must be an integer, not {type(value).__name__}")
    return value


def _str(header: GGUFHeader, key: str) -> str | None:
    value = header.metadata.get(key)
    if value is not None and not isinstance(value, str):
        raise AuditError(header.path, f"metadata {key} must be a string, not {type(value).__name__}")
    return value


def _array(header: GGUFHeader, key: str) -> GGUFArray | None:
    value = header.metadata.get(key)
    if value is not None and not isinstance(value, GGUFArray):
        raise AuditError(header.path, f"metadata {key} must be an array, not {type(value).__name__}")
    return value


def _shards(first: Path, header: GGUFHeader) -> list[Path]:
    count = _int(header, "split.count")
    match = SHARD_RE.match(first.name)
    if not count or count <= 1:
        return []
    if count > MAX_SHARDS:
        raise AuditError(first, f"split.count {count} is over the limit of {MAX_SHARDS}")
    if match is None or match["no"] != "00001" or int(match["count"]) != count:
        raise AuditError(first, f"split.count is {count} but the file is not named <name>-00001-of-{count:05d}.gguf")
    parts = [first.with_name(f"{match['stem']}-{i:05d}-of-{count:05d}.gguf") for i in range(2, count + 1)]
    for part in parts:
        if not part.exists() and not part.is_symlink():
            raise AuditError(first, f"is part 1 of {count}, but part {part.name} is missing")
        regular_file_inside(part, first.parent, "GGUF's folder")  # the first part's name chose the others'
    return parts


def read_gguf_facts(path: Path) -> tuple[GGUFFacts, Path, dict[str, TensorInfo]]:
    """The GGUF facts of ``path`` (a file or a folder holding one), the file read, and every tensor by name."""
    first = locate_gguf(path)
    budget = ReadBudget()  # one for every part: the work is bounded by what they declare together
    header = read_gguf(first, first.name, KEEP, budget)
    tensors = list(header.tensors)
    files = [first.name]
    for part in _shards(first, header):
        other = read_gguf(part, part.name, budget=budget)
        tensors.extend(other.tensors)
        files.append(part.name)
    by_name: dict[str, TensorInfo] = {}
    for info in tensors:
        if info.name in by_name:
            raise AuditError(first.parent / info.file, f"tensor {info.name!r} is also in {by_name[info.name].file}")
        by_name[info.name] = info
    arch = _str(header, "general.architecture")
    tokens_arr = _array(header, TOKENS)
    types_arr = _array(header, TOKEN_TYPE)
    tokens = tuple(str(t) for t in (tokens_arr.values or ())) if tokens_arr else ()
    if tokens_arr is not None and tokens_arr.item_type != 8:
        raise AuditError(first, f"metadata {TOKENS} must be an array of strings")
    types = tuple(int(t) for t in types_arr.values or ()) if types_arr is not None else None  # type: ignore[call-overload]
    specials: dict[str, int] = {}
    for role, key in SPECIAL_ID_KEYS.items():
        value = _int(header, key)
        if value is not None:
            specials[role] = value
    scores, merges = _array(header, "tokenizer.ggml.scores"), _array(header, "tokenizer.ggml.merges")
    return GGUFFacts(
        file=first.name,
        files=tuple(files),
        version=header.version,
        arch=arch,
        tokenizer_model=_str(header, "tokenizer.ggml.model"),
        pre=_str(header, "tokenizer.ggml.pre"),
        tokens=tokens,
        token_types=types,
        n_scores=scores.count if scores else None,
        n_merges=merges.count if merges else None,
        special_ids=specials,
        chat_template=_str(header, CHAT_TEMPLATE),
        vocab_size=_int(header, f"{arch}.vocab_size") if arch else None,
        context_length=_int(header, f"{arch}.context_length") if arch else None,
        token_embd=by_name.get("token_embd.weight"),
        output=by_name.get("output.weight"),
        n_tensors=len(by_name),
    ), first, by_name


MAX_ENCODE_LOOKUPS = 1 << 21  # vocabulary look-ups for every text one GGUF's rules encode together (~1 s)


class GGUFVocab:
    """The few ``tokenizers.Tokenizer`` methods the rules call, over a GGUF's token list.

    ``encode`` splits text the way llama.cpp does with ``parse_special``: whole control / user-defined /
    unknown tokens first (longest first), then the rest. The rest is NOT run through llama.cpp's BPE or
    SentencePiece: it is cut greedily into the longest vocabulary pieces shorter than the fragment, which is
    enough to say "this marker is not one token" (HVA205) and which ids a marker that is one token has.

    Both cuts are dictionary look-ups of the text's slices, one per distinct token length at each position
    (a regular expression of every control token cost markers x control tokens: a 13 MB chat template took
    ~11 minutes). The look-ups of every text together are bounded by :data:`MAX_ENCODE_LOOKUPS`; past it,
    one line naming the file.
    """

    def __init__(self, gf: GGUFFacts, path: Path | None = None, max_lookups: int = MAX_ENCODE_LOOKUPS) -> None:
        self._gf = gf
        self._path = path or Path(gf.file)
        self._ids: dict[str, int] = dict(zip(gf.tokens, range(gf.n_tokens)))  # a duplicated string: its last id
        types = gf.token_types or ()
        self._whole: dict[str, int] = {t: self._ids[t] for t, kind in zip(gf.tokens, types) if kind in MATCHED_WHOLE and t}
        self._whole_lengths = sorted({len(t) for t in self._whole})  # ascending: bisected, then walked down
        self._lengths = sorted({len(t) for t in gf.tokens if t})
        self._lookups_left = max_lookups
        self._max_lookups = max_lookups

    def token_to_id(self, token: str) -> int | None:
        return self._ids.get(token)

    def id_to_token(self, token_id: int) -> str | None:
        tokens = self._gf.tokens
        return tokens[token_id] if 0 <= token_id < len(tokens) else None

    def encode_batch(self, texts: list[str], add_special_tokens: bool = False) -> list[_Encoding]:
        return [_Encoding(self._encode(t)) for t in texts]

    encode_batch_fast = encode_batch

    def _charge(self, lookups: int) -> None:
        self._lookups_left -= lookups
        if self._lookups_left < 0:
            raise AuditError(self._path, f"matching {CHAT_TEMPLATE}'s markers against the {self._gf.n_tokens:,} "
                             f"tokens takes over {self._max_lookups:,} look-ups (a bound on the work a file may ask "
                             "for; a real template holds a few dozen markers)")

    def _encode(self, text: str) -> list[int]:
        found = self._whole.get(text)
        self._charge(1)
        if found is not None:  # the common case: a marker that is one control token
            return [found]
        out: list[int] = []
        start = pos = 0
        end, whole, lookups = len(text), self._whole, 0
        lengths = self._whole_lengths
        while pos < end:
            if lookups > 4096:  # charged as it goes: one long text is bounded too
                self._charge(lookups)
                lookups = 0
            for i in range(bisect.bisect_right(lengths, end - pos) - 1, -1, -1):  # longest first, as llama.cpp
                length = lengths[i]
                lookups += 1
                found = whole.get(text[pos : pos + length])
                if found is not None:
                    break
            else:
                pos += 1
                continue
            if start < pos:
                out.extend(self._pieces(text[start:pos]))
            out.append(found)
            pos += length
            start = pos
        self._charge(lookups)
        if start < end:
            out.extend(self._pieces(text[start:]))
        return out

    def _pieces(self, text: str) -> list[int]:
        out: list[int] = []
        pos, end, ids, lookups, lengths = 0, len(text), self._ids, 0, self._lengths
        cap = end - 1 or 1  # a piece shorter than the fragment: "this marker is not one token"
        while pos < end:
            for i in range(bisect.bisect_right(lengths, min(cap, end - pos)) - 1, -1, -1):
                length = lengths[i]
                lookups += 1
                found = ids.get(text[pos : pos + length])
                if found is not None:
                    out.append(found)
                    pos += length
                    break
            else:
                out.append(self._gf.special_ids.get("unk", -1))
                pos += 1
            if lookups > 4096:
                self._charge(lookups)
                lookups = 0
        self._charge(lookups)
        return out


@dataclass(frozen=True)
class _Encoding:
    ids: list[int]


def _conflicts(gf: GGUFFacts) -> tuple[AddedTokenConflict, ...]:
    """Token strings listed at more than one id: llama.cpp's text-to-id map is then smaller than its token
    list, and its vocabulary loader asserts they are equal (the process aborts, even ``vocab_only``)."""
    if len(set(gf.tokens)) == gf.n_tokens:
        return ()  # the common case, decided in C
    first: dict[str, list[int]] = {}
    for i, token in enumerate(gf.tokens):
        first.setdefault(token, []).append(i)
    out = []
    for token, ids in first.items():
        if len(ids) > 1:
            out.append(AddedTokenConflict(
                gf.file, f"{TOKENS} lists {token!r} at ids {ids[:5]}: llama.cpp aborts loading the vocabulary "
                "(GGML_ASSERT(id_to_token.size() == token_to_id.size()) failed)",
                tuple(ids), (token,) * len(ids)))
    return tuple(out)


def gguf_tokenizer(gf: GGUFFacts, folder: Path) -> TokenizerFacts:
    """The GGUF's vocabulary as :class:`TokenizerFacts` (special ids as declared in the GGUF)."""
    vocab = GGUFVocab(gf, folder / gf.file)
    special: dict[str, tuple[str, int | None]] = {r: (vocab.id_to_token(i) or "", i) for r, i in gf.special_ids.items()}
    added = tuple(
        AddedTokenInfo(i, t, kind == 3)
        for i, (t, kind) in enumerate(zip(gf.tokens, gf.token_types or ())) if kind in (3, 4)
    )
    return TokenizerFacts(
        folder=folder, source=GGUF_FORMAT, files=(gf.file,), length=gf.n_tokens,
        ids=tuple(range(gf.n_tokens)), added_tokens=added, special_tokens=special, extra_special_tokens=(),
        model_max_length=None, chat_template=gf.chat_template,
        chat_template_file=gf.file if gf.chat_template else None, tokenizer_class=None, model_input_names=(),
        pair_type_ids=(), conflicts=_conflicts(gf), auto_map=None, backend=vocab,
    )  # fmt: skip


def gather_gguf(path: str | Path) -> Facts:
    """Every fact of a GGUF file (or a folder holding one) that the rules read, as one :class:`Facts`."""
    gf, first, by_name = read_gguf_facts(Path(path))
    folder = first.parent
    config = parse_config(
        {"model_type": gf.arch, "max_position_embeddings": gf.context_length,
         "tie_word_embeddings": gf.output is None},
        first,
    )  # fmt: skip
    missing: dict[str, str] = {"generation_config": "a GGUF has no generation_config.json"}
    tokenizer = gguf_tokenizer(gf, folder) if gf.tokens else None
    if tokenizer is None:
        missing["tokenizer"] = f"{gf.file} has no {TOKENS}"
    tensors = CheckpointTensors(GGUF_FORMAT, gf.files, None, by_name)
    embeddings = EmbeddingFacts(gf.token_embd, gf.output, gf.output is None, None, None, None, ())
    if gf.vocab_only:  # no weights by design: the row rules do not apply (coverage.static_gaps: not a gap)
        missing["tensors"] = missing["input_embedding"] = VOCAB_ONLY.format(file=gf.file)
    else:
        if gf.token_embd is None:
            missing["input_embedding"] = f"{gf.file} has no token_embd.weight"
        if not by_name:
            missing["tensors"] = f"{gf.file} holds no tensors"
    return Facts(folder, config, None, tokenizer, tensors, embeddings, missing, gguf=gf)


class GGUFSource(FactsSource):
    name = "gguf"
    lines = False  # its findings are placed on metadata keys (rules.locators), not JSON lines
    scopes = (Scope.GGUF,)
    unsupported = {  # checkpoint rules whose meaning does not carry over to a GGUF
        "HVA103": "a GGUF's vocabulary size is its token count (HVA901 compares it with the rows)",
        "HVA105": "a GGUF has no padding rows: llama.cpp needs rows == tokens (HVA901)",
        "HVA203": "a GGUF is served, not trained: a pad token matters to training collators",
        "HVA204": "a GGUF is served, not trained: a pad token matters to training collators",
        "HVA301": "a GGUF has no tokenizer model_max_length (its context is {arch}.context_length)",
        "HVA303": "a GGUF has no tokenizer model_max_length (its context is {arch}.context_length)",
    }
    refuse_empty = False  # its own rules (HVA90x) say what a GGUF without tokens or tensors lacks
    repair = Repair.REFUSED  # --fix repairs the HF checkpoint it came from (rules.locators.FIX_IN_HF)

    @classmethod
    def accepts(cls, target: object) -> bool:
        return isinstance(target, (str, os.PathLike)) and is_gguf_target(Path(os.fspath(target)))

    def refuse(self, options: AuditOptions, fixing: bool = False) -> None:
        if fixing or options.weights or options.scan is not None or options.base is not None or options.target_kind \
                or options.draft is not None:
            raise SourceError(str(self.target), "a GGUF is checked from its metadata only: --fix, --weights, "
                              "--dataset, --base, --draft and --target apply to a transformers checkpoint folder")
        if options.tokenizer is not None and options.source is None:
            raise SourceError(Path(os.fspath(options.tokenizer)), "--tokenizer with a GGUF target names the source's "
                              "tokenizer: pass --source HF_DIR too")

    def gather(self, options: AuditOptions) -> Facts:
        assert self.path is not None
        return gather_gguf(self.path)

    def by_design(self, facts: Facts) -> frozenset[GapKind]:
        """A vocabulary-only GGUF has no weights by design: the row rules do not apply (not a gap)."""
        if facts.gguf is not None and facts.gguf.vocab_only:
            return frozenset({GapKind.WEIGHTS, GapKind.VOCABULARY})
        return frozenset()
