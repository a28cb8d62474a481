"""The .kspec syntax: text -> a generic tree of groups and `key = value` entries with source spans.

The lark grammar (kspec.lark) accepts any such tree; `kgen.gen.spec` checks it against the schema. A
file that cannot be read or parsed is a SpecError that points at the text.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import lark

from kgen.core.errors import SpecError, Span

MAX_SPEC_BYTES = 1 << 20


@dataclass(frozen=True)
class RawValue:
    kind: str   # dims | int | decimal | word | string | call (`name(1, -0.5)`, its text normalised) | shard
    text: str
    span: Span


@dataclass(frozen=True)
class RawEntry:
    key: str          # dotted path
    key_span: Span
    value: RawValue


@dataclass(frozen=True)
class RawGroup:
    kind: str
    name: str | None
    span: Span
    entries: tuple[RawEntry, ...]
    groups: tuple["RawGroup", ...]


PARSER_OPTIONS: dict[str, Any] = {"parser": "lalr", "propagate_positions": True}


@cache
def _parser() -> lark.Lark:
    """The LALR parser of kspec.lark. Building its tables is most of what `kgen check` spends before
    it reads the spec, so lark's own cache of them is kept under $KGEN_CACHE_DIR (else ~/.cache/kgen)
    in a file named by the digest of the grammar, lark's version and Python's: a changed grammar or
    lark gets a new file, and lark checks the digest again when it loads one. The file appears whole
    (written aside, then renamed). Without a usable cache folder the tables are built each run."""
    grammar = (Path(__file__).parent / "kspec.lark").read_text()
    cached = _parser_cache_file(grammar)
    if cached is None:
        return lark.Lark(grammar, **PARSER_OPTIONS)
    if cached.is_file():
        return lark.Lark(grammar, cache=str(cached), **PARSER_OPTIONS)
    aside = cached.with_name(f"{cached.name}.{os.getpid()}.tmp")
    parser = lark.Lark(grammar, cache=str(aside), **PARSER_OPTIONS)    # lark writes it once built
    try:
        os.replace(aside, cached)
    except OSError:                     # lark could not write it (a full or read-only cache): no cache
        with contextlib.suppress(OSError):
            aside.unlink()
    return parser


def _parser_cache_file(grammar: str) -> Path | None:
    """Where the parser's tables are cached, or None when kgen has no cache folder it may write."""
    import hashlib
    import sys

    from kgen.core.errors import KgenError
    from kgen.core.resources import cache_root

    try:
        folder = cache_root() / "parser"
        folder.mkdir(parents=True, exist_ok=True)
    except (KgenError, OSError, RuntimeError):     # RuntimeError: Path.home() without a home
        return None
    if not os.access(folder, os.W_OK | os.X_OK):
        return None
    key = "\n".join((grammar, repr(sorted(PARSER_OPTIONS.items())), lark.__version__, sys.version))
    return folder / f"kspec-{hashlib.sha256(key.encode()).hexdigest()[:16]}.lark"


class Source:
    def __init__(self, path: str, text: str):
        self.path = path
        self.text = text
        # Lines as lark counts them: split at \n only (str.splitlines also splits at \f, \v, U+0085,
        # U+2028, ..., which would put the caret under the wrong line).
        self.lines = text.split("\n")

    def span(self, line: int, column: int, end_line: int | None = None, end_column: int | None = None) -> Span:
        line = max(1, min(line, len(self.lines)))
        text = self.lines[line - 1] if self.lines else ""
        return Span(self.path, line, max(1, column), end_line or line, end_column or column + 1, text)

    def at(self, offset: int, length: int) -> Span:
        """The span of `length` characters starting at character `offset` of the text."""
        line = self.text.count("\n", 0, offset) + 1
        column = offset - (self.text.rfind("\n", 0, offset) + 1) + 1
        return self.span(line, column, line, column + length)

    def end(self) -> Span:
        """The end of the last non-blank line (where a missing closing brace belongs)."""
        line = len(self.lines)
        while line > 1 and not self.lines[line - 1].strip():
            line -= 1
        return self.span(line, len(self.lines[line - 1].rstrip()) + 1)

    def of(self, node: Any) -> Span:
        meta = getattr(node, "meta", None)
        if meta is not None and not getattr(meta, "empty", False):
            return self.span(meta.line, meta.column, meta.end_line, meta.end_column)
        return self.span(node.line, node.column, node.end_line, node.end_column)


def read_source(path: str | Path) -> str:
    """Read a spec file, turning every way it can be unreadable into a SpecError."""
    shown = str(path)
    if not shown:
        raise SpecError("no spec path given (an empty string)", hint="pass the path of a .kspec file")
    p = Path(path)
    try:
        exists, is_dir = p.exists(), p.is_dir()
    except OSError as exc:  # e.g. a name longer than the OS allows
        raise SpecError(f"cannot use this path: {exc.strerror or exc}", path=shown[:200]) from None
    if not exists:
        raise SpecError(f"no such file: {shown}", path=shown, hint="check the path; specs end in .kspec")
    if is_dir:
        candidates = sorted(str(c) for c in p.glob("*.kspec"))[:3]
        hint = f"did you mean {', '.join(candidates)}?" if candidates else "pass a .kspec file, not a folder"
        raise SpecError(f"{shown} is a directory, not a spec file", path=shown, hint=hint)
    data = _read_regular_file(p, shown)
    nul = data.find(b"\x00")
    if nul >= 0:
        raise SpecError("a NUL byte: this is a binary file, not a .kspec text file", _byte_span(shown, data, nul))
    try:
        text = data.decode("utf-8-sig")  # a leading byte-order mark is not part of the spec
    except UnicodeDecodeError as exc:
        raise SpecError(f"byte 0x{data[exc.start]:02x} is not UTF-8 text", _byte_span(shown, data, exc.start),
                        hint="save the spec as UTF-8") from None
    if not text.strip() or all(not ln.strip() or ln.strip().startswith("#") for ln in text.splitlines()):
        raise SpecError(f"{shown} is empty: a spec needs a `matmul NAME {{ ... }}` block", path=shown,
                        hint="start from one of the files in examples/")
    return text


def _read_regular_file(p: Path, shown: str) -> bytes:
    """The bytes of a regular file, at most MAX_SPEC_BYTES of them. A FIFO would block in open()
    and /dev/zero never ends (its st_size is 0), so both are refused before a byte is read."""
    try:
        if not stat.S_ISREG(p.stat().st_mode):
            raise SpecError(f"{shown} is not a regular file (a device, FIFO or socket)", path=shown,
                            hint="pass a .kspec text file")
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):    # replaced since the first look
                raise SpecError(f"{shown} is not a regular file", path=shown)
            data = f.read(MAX_SPEC_BYTES + 1)
    except PermissionError:
        raise SpecError(f"cannot read {shown}: permission denied", path=shown) from None
    except OSError as exc:
        raise SpecError(f"cannot read {shown}: {exc.strerror or exc}", path=shown) from None
    if len(data) > MAX_SPEC_BYTES:
        raise SpecError(f"{shown} is larger than {MAX_SPEC_BYTES} bytes; a spec is at most {MAX_SPEC_BYTES} bytes", path=shown)
    return data


def _byte_span(shown: str, data: bytes, offset: int) -> Span:
    """line:column of the byte at `offset` (columns count characters, as everywhere else)."""
    start = data.rfind(b"\n", 0, offset) + 1
    end = data.find(b"\n", offset)
    line_bytes = data[start:] if end < 0 else data[start:end]
    column = len(data[start:offset].decode("utf-8", errors="replace")) + 1
    shown_line = line_bytes.decode("utf-8", errors="replace").replace("\x00", "\ufffd")
    return Span(shown, data.count(b"\n", 0, offset) + 1, column, 0, 0, shown_line)


_TOKEN_NAMES = {
    "LBRACE": "'{'", "RBRACE": "'}'", "EQUAL": "'='", "DOT": "'.'", "NAME": "a name",
    "INT": "a number", "SIGNED_INT": "a number", "DIMS": "dimensions like 4 x 2", "DECIMAL": "a number",
    "STRING": "a string", "LPAR": "'('", "RPAR": "')'", "COMMA": "','", "$END": "end of file", "ON": "'on'",
}


def _describe_expected(expected: set[str]) -> str:
    names = sorted({_TOKEN_NAMES.get(e, e.lower()) for e in expected})
    return ", ".join(names) if names else "something else"


def parse_tree(text: str, src: Source) -> lark.Tree:
    try:
        return _parser().parse(text)
    except lark.exceptions.UnexpectedCharacters as exc:
        span = src.span(exc.line, exc.column)
        ch = text[exc.pos_in_stream] if 0 <= exc.pos_in_stream < len(text) else "?"
        raise SpecError(f"unexpected character {ch!r}", span,
                        hint="keys and values are names, numbers or `H x W` dimensions; comments start with #") from None
    except lark.exceptions.UnexpectedEOF as exc:
        raise _early_end(src, exc.expected) from None
    except lark.exceptions.UnexpectedToken as exc:
        tok = exc.token
        if tok.type == "$END":
            raise _early_end(src, exc.expected) from None
        shape_error = _shape_error_near(src, tok)
        if shape_error is not None:
            raise shape_error from None
        if "LBRACE" in exc.expected and "EQUAL" not in exc.expected:
            # `key word` then something other than `{`: a `key = value` that lost its `=`.
            prev = _previous_words(text, tok.start_pos, 2)
            if len(prev) == 2:
                (k, _), (word, pos) = prev
                raise SpecError(f"missing `=` between `{k}` and `{word}`", src.at(pos, len(word)),
                                hint=f"write `{k} = {word}`, or `{k} {word} {{ ... }}` for a named block") from None
        span = src.span(tok.line, tok.column, tok.end_line, tok.end_column)
        hint = None
        if "EQUAL" in exc.expected and tok.type in ("NAME", "INT", "DIMS"):
            hint = "write `key = value`"
        elif "RPAR" in exc.expected:
            hint = "a call's parameters are numbers separated by commas, closed by ')', like `hardtanh(-1, 1)`"
        elif tok.type == "RBRACE":
            hint = "is there a '}' too many, or a value missing?"
        raise SpecError(f"unexpected {tok.value!r}: expected {_describe_expected(set(exc.expected))}",
                        span, hint=hint) from None
    except lark.exceptions.LarkError as exc:  # any other parser failure is still the user's text
        raise SpecError(f"cannot parse: {exc}", src.span(1, 1)) from None


_UNIT_SUFFIX = {"k": 1024, "m": 1024 * 1024, "g": 1024 ** 3}


def value_shape_error(at: Span) -> SpecError | None:
    """A SpecError that says what is wrong with a `key = number ...` line whose value the grammar
    split apart: a unit suffix (`2k`), a fraction (`2048.5`) or a word after the number (`32 tiles`).
    `at` is any span on that line; the error points at the offending part. None when the line is
    not such an assignment; the caller then reports the token as it is."""
    code = at.source_line.split("#", 1)[0]
    m = re.match(r"\s*([A-Za-z_][\w.]*)\s*=\s*(-?[0-9].*?)\s*$", code)
    if m is None:
        return None
    key, value = m.group(1), m.group(2)

    def span(part: re.Match, group: int = 0) -> Span:
        column = m.start(2) + part.start(group) + 1
        return Span(at.path, at.line, column, at.line, column + len(part.group(group)), at.source_line)

    what = "the shape" if key == "shape" else key
    fraction = re.search(r"[0-9]+\.[0-9]*", value)
    if fraction and re.search(r"[0-9.]\s*x\s*[0-9]", value):   # a fraction among dimensions
        return SpecError(f"{key} = {value}: {fraction.group()} is not a whole number", span(fraction),
                         hint=f"{what} takes whole numbers" + (" of elements (M x N x K)" if key == "shape" else ""))
    suffixed = re.search(r"\b([0-9]+)([A-Za-z]+)\b", value)
    if suffixed and not re.fullmatch(r"x[0-9]*", suffixed.group(2)):
        number, unit = suffixed.groups()
        factor = _UNIT_SUFFIX.get(unit.lower())
        example = f"write {int(number) * factor} for {suffixed.group()}" if factor else "write the plain number"
        return SpecError(f"{key} = {value}: a unit suffix (`{unit}` in `{suffixed.group()}`) is not accepted",
                         span(suffixed, 2), hint=f"numbers are plain whole numbers; {example}")
    trailing = re.fullmatch(r"(-?[0-9]+(?:\s*x\s*-?[0-9]+)*)\s+([A-Za-z_]\w*)", value)
    if trailing:
        number, word = trailing.groups()
        if key == "shape":
            hint = "the shape is in elements, M x N x K, with nothing after it"
            if word == "tiles":
                elements = " x ".join(str(int(d) * 32) for d in re.split(r"\s*x\s*", number))
                hint += f"; {number} tiles of 32 x 32 is `shape = {elements}`"
        else:
            hint = f"write `{key} = {number}` with nothing after the value"
        return SpecError(f"{key} = {value}: a word (`{word}`) after the value is not accepted",
                         span(trailing, 2), hint=hint)
    return None


def _shape_error_near(src: Source, tok: lark.Token) -> SpecError | None:
    """value_shape_error for the token's line or one of the two code lines before it (a word after
    a value at the end of a line makes the parser fail a line or two further on)."""
    line, looked = tok.line, 0
    while line >= 1 and looked < 3:
        code = src.lines[line - 1].split("#", 1)[0]
        if code.strip():
            looked += 1
            found = value_shape_error(src.span(line, 1))
            if found is not None:
                return found
        line -= 1
    return None


def _early_end(src: Source, expected: Any) -> SpecError:
    return SpecError(f"the file ends too early: expected {_describe_expected(set(expected))}", src.end(),
                     hint="is a closing '}' missing?")


def _previous_words(text: str, pos: int, count: int) -> list[tuple[str, int]]:
    """The `count` names before `pos` (comments skipped), with their offsets, oldest first."""
    words: list[tuple[str, int]] = []
    code = re.sub(r"#[^\n]*", lambda m: " " * len(m.group()), text[:pos])
    for m in reversed(list(re.finditer(r"[A-Za-z_][A-Za-z0-9_]*|\S", code))):
        if not re.match(r"[A-Za-z_]", m.group()):
            break
        words.append((m.group(), m.start()))
        if len(words) == count:
            break
    return list(reversed(words))


MAX_GROUP_DEPTH = 8


def raw_value(value_tree: lark.Tree, src: Source) -> RawValue:
    """The value of an assignment. A call keeps its name and arguments as `name(a, b)`."""
    if value_tree.data == "call":
        name, *args = value_tree.children
        text = f"{name}({', '.join(str(a.children[0]) for a in args)})"
        return RawValue("call", text, src.of(value_tree))
    if value_tree.data == "shard":          # `256 x 32 on 8 x 4`: shape, then the grid it lies on
        shape, grid = value_tree.children
        return RawValue("shard", f"{shape} on {grid}", src.of(value_tree))
    tok = value_tree.children[0]
    return RawValue(value_tree.data, str(tok), src.of(tok))


def raw_group(tree: lark.Tree, src: Source, depth: int = 0) -> RawGroup:
    if depth > MAX_GROUP_DEPTH:
        raise SpecError(f"groups nest more than {MAX_GROUP_DEPTH} deep", src.of(tree.children[0]),
                        hint="a spec nests at most matmul { variants { NAME { ... } } }")
    children = list(tree.children)
    kind_tok = children.pop(0)
    name_tok = children.pop(0) if children and isinstance(children[0], lark.Token) else None
    entries: list[RawEntry] = []
    groups: list[RawGroup] = []
    for child in children:
        if child.data == "group":
            groups.append(raw_group(child, src, depth + 1))
        else:
            path_tree, value_tree = child.children
            key = ".".join(str(t) for t in path_tree.children)
            entries.append(RawEntry(key, src.of(path_tree), raw_value(value_tree, src)))
    span = src.of(kind_tok)
    return RawGroup(str(kind_tok), str(name_tok) if name_tok is not None else None, span,
                    tuple(entries), tuple(groups))
