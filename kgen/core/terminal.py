"""The one terminal layer of kgen's text reports: the width every command lays its report out for
(`width`), and what they share to fit it: wrapped paragraphs, bullets, `key  value` lines and
shell commands, plain tables (`table`), and the tables of figures `kgen ab` and `kgen tune` print
through rich (`fitted_table`, `split_tables`).

A report never cuts a word to fit: lines break between words, and a word longer than a line (a
path, a URL) gets a line to itself. The text stays plain (no colour, no control codes), so a report
reads the same in a terminal, a pipe and a test. JSON output does not pass through here.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

MAX_WIDTH = 100   # a terminal's width counts up to 100 columns: wider, prose lines read worse, not better
MIN_WIDTH = 60    # narrower, a table cannot keep its columns whole: a tinier terminal wraps the lines itself
MAX_COLUMNS = 10_000   # a larger $COLUMNS is no width anyone means

NBSP = "\N{NO-BREAK SPACE}"

# Read as one word, never split: a product or an equation (`4 x 8`, `M x N x K`, `Kt = 32`,
# `Nt = 344 = 11 x 29 + 25`), and a kgen command with its subcommand (`kgen headers fetch`)
_GLUE = re.compile(r"\S+(?: (?:x|=|\+) \S+)+|\bkgen(?: [a-z][a-z-]*){1,2}")
_GLUE_MAX = 32


def width() -> int:
    """The width to lay a report out for: $COLUMNS when it is a whole number from 1 to MAX_COLUMNS
    (asked for, so taken as it is: COLUMNS=200 gives 200), else the terminal's when stdout is one,
    up to MAX_WIDTH, else MAX_WIDTH; never below MIN_WIDTH."""
    text = os.environ.get("COLUMNS", "").strip()
    if text.isdigit() and 0 < int(text) <= MAX_COLUMNS:
        return max(MIN_WIDTH, int(text))
    try:
        columns = os.get_terminal_size(sys.stdout.fileno()).columns
    except (AttributeError, OSError, ValueError):   # not a terminal (a pipe, a file, a test's capture)
        columns = 0
    return max(MIN_WIDTH, min(MAX_WIDTH, columns or MAX_WIDTH))


def keep_together(text: str) -> str:
    """`text` as one word for the wrappers here: its spaces do not break (they print as spaces)."""
    return text.replace(" ", NBSP)


def wrap(text: str, width: int, first: str = "", rest: str | None = None) -> list[str]:
    """`text` in lines of at most `width` columns: the first starts with `first` (an indent, or a
    label such as `  key    `), the others with `rest` (spaces; default: as wide as `first`).
    Lines break only between words, and the spaces between two words on one line are kept as
    written. A no-break space never breaks, nor does a short product, equation or kgen command
    (`4 x 8`, `Kt = 32`, `kgen headers fetch`): each reads as one word. A word too long for a
    line at `rest` (a path, a URL) gets a line to itself, moved left of `rest` just enough to end
    at the margin: only a word longer than the whole width passes it, from `rest`. A last line of
    one short word takes the word before it along. A newline in `text` starts a line at `rest`."""
    rest = " " * len(first) if rest is None else rest
    lines: list[str] = []
    for n, part in enumerate(text.split("\n")):
        prefix = first if n == 0 else rest
        lines += _fill(_words(_GLUE.sub(_glued, part)), width, prefix, rest)
    return [line.replace(NBSP, " ") for line in lines]


def _glued(match: re.Match) -> str:
    # a long run of them would make a word too wide to place well: it breaks as written
    return match.group().replace(" ", NBSP) if len(match.group()) <= _GLUE_MAX else match.group()


Word = tuple[str, str]      # (the spaces written before it, the word)


def _words(text: str) -> list[Word]:
    """The words of `text` with the spaces before each, split at spaces and tabs only (str.split
    would split at a no-break space)."""
    return [(m.group(1), m.group(2)) for m in re.finditer(r"([ \t]*)([^ \t]+)", text)]


def _line_length(row: list[Word]) -> int:
    return sum(len(sep) + len(word) for sep, word in row) - len(row[0][0]) if row else 0


def _fill(words: list[Word], width: int, first: str, rest: str) -> list[str]:
    """Greedy filling, then the last line's lone short word joined by its neighbour."""
    rows: list[tuple[str, list[Word]]] = []          # (prefix, words) per line
    prefix, row = first, []
    for word in words:
        if row and len(prefix) + _line_length(row + [word]) <= width:
            row.append(word)
            continue
        if row:
            rows.append((prefix, row))
            prefix, row = rest, []
        if len(prefix) + len(word[1]) <= width:
            row = [word]
            continue
        # too long for a line at this prefix: a line of its own, ending at the margin if it can
        if prefix.strip():                           # the first line's label stays on its own line
            rows.append((prefix, []))
        spare = width - len(word[1])
        rows.append((" " * min(spare, len(rest)) if spare >= 0 else rest, [word]))
        prefix, row = rest, []
    if row or not rows:
        rows.append((prefix, row))
    if len(rows) >= 2 and len(rows[-1][1]) == 1 and len(rows[-2][1]) >= 3 and len(rows[-1][1][0][1]) < 12:
        (p1, before), (p2, last) = rows[-2], rows[-1]
        if len(p2) + _line_length([before[-1], *last]) <= width:
            rows[-2:] = [(p1, before[:-1]), (p2, [before[-1], *last])]
    return [(prefix + "".join(sep + w for sep, w in row).lstrip(" \t") if row else prefix).rstrip()
            for prefix, row in rows]


def paragraph(text: str, width: int, indent: str = "") -> list[str]:
    """A paragraph, every line at `indent`."""
    return wrap(text, width, indent, indent)


def hanging(text: str, width: int, indent: str = "", more: str = "  ") -> list[str]:
    """A paragraph whose lines after the first sit `more` further in than `indent`."""
    return wrap(text, width, indent, indent + more)


def bullet(text: str, width: int, indent: str = "  ", marker: str = "- ") -> list[str]:
    """`- text` at `indent`, its further lines under the text, not under the marker."""
    return wrap(text, width, indent + marker, " " * len(indent + marker))


def command(text: str, width: int, indent: str = "  ", outer: str = "    ") -> list[str]:
    """A shell command wrapped between its words with ` \\` closing every line but the last, so
    that it pastes into a shell whole: at `indent`, or at `outer` when a word of it (a URL) is too
    long for a line at `indent`."""
    longest = max((len(word) for _, word in _words(text)), default=0)
    at = indent if len(indent) + longest + 2 <= width else outer
    lines = wrap(text, width - 2, at, at)
    return [line + " \\" for line in lines[:-1]] + lines[-1:]


def key_value(key: str, value: str, width: int, key_width: int = 0, indent: str = "  ", gap: int = 2) -> list[str]:
    """`key` in a column of `key_width`, then `value`, wrapped under itself."""
    label = f"{indent}{key:<{key_width}}{' ' * gap}"
    return wrap(value, width, label, " " * len(label))


def key_values(rows: Sequence[tuple[str, str]], width: int, indent: str = "  ", gap: int = 2) -> list[str]:
    """`key  value` lines with the values in one column (as wide as the longest key)."""
    key_width = max((len(k) for k, _ in rows), default=0)
    return [line for key, value in rows for line in key_value(key, value, width, key_width, indent, gap)]


def shown_path(path: str | os.PathLike) -> str:
    """A path as the user would type it: relative when it lies under the current folder."""
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return str(path)


@dataclass(frozen=True)
class Column:
    """One column of `table`: its header, its cells, and whether they are numbers (right-aligned)."""

    header: str
    cells: Sequence[str]
    numeric: bool = False


def table(columns: Sequence[Column], width: int, indent: str = "  ", gap: int = 2, rule: bool = False,
          keys: int = 1) -> list[str]:
    """Columns side by side, each as wide as its widest cell and header. Where that is wider than
    `width`: the headers wrap between their words (a column as wide as its widest cell and
    header word), then the last column's cells wrap under it, if it holds words; numbers are never
    split. Where even that does not fit, the columns after the first `keys` (the ones that name a
    row) go into as many tables as it takes, each repeating the `keys` columns. `rule`: a line of
    dashes under the header."""
    sizes = _sizes(columns, width, indent, gap)
    if _fits(sizes, width, indent, gap) or len(columns) <= keys + 1:
        return _render(columns, sizes, indent, gap, rule)
    parts: list[list[Column]] = [[]]
    for col in columns[keys:]:        # each table takes columns while they fit beside the keys
        wider = [*columns[:keys], *parts[-1], col]
        if parts[-1] and not _fits(_sizes(wider, width, indent, gap), width, indent, gap):
            parts.append([])
        parts[-1].append(col)
    out: list[str] = []
    for n, part in enumerate(parts):
        chosen = [*columns[:keys], *part]
        out += ([""] if n else []) + _render(chosen, _sizes(chosen, width, indent, gap), indent, gap, rule)
    return out


def _fits(sizes: Sequence[int], width: int, indent: str, gap: int) -> bool:
    return len(indent) + sum(sizes) + gap * (len(sizes) - 1) <= width


def _sizes(columns: Sequence[Column], width: int, indent: str, gap: int) -> list[int]:
    """Each column's width: its widest cell and header where they fit, else narrower (see `table`)."""
    natural = [max([len(c) for c in col.cells] + [len(col.header)]) for col in columns]
    room = width - len(indent) - gap * (len(columns) - 1)
    if sum(natural) <= room:
        return natural
    # each column as narrow as its cells and header words allow; the last one's words fill what is
    # left, then a header takes back its line where the room allows
    sizes = [max([len(c) for c in col.cells] + [len(w) for w in col.header.split()] + [1]) for col in columns]
    last = columns[-1]
    if not last.numeric:
        words = [len(w) for c in last.cells for _, w in _words(c)] + [len(w) for w in last.header.split()]
        sizes[-1] = max(max(words, default=1), min(natural[-1], room - sum(sizes[:-1])))
    for i in sorted(range(len(columns)), key=lambda i: natural[i] - sizes[i]):
        if sum(sizes) - sizes[i] + natural[i] <= room:
            sizes[i] = natural[i]
    return sizes


def _render(columns: Sequence[Column], sizes: Sequence[int], indent: str, gap: int, rule: bool) -> list[str]:
    last = columns[-1]
    headers = [_header_lines(col.header, size) for col, size in zip(columns, sizes)]
    depth = max(len(h) for h in headers)
    headers = [[""] * (depth - len(h)) + h for h in headers]          # headers sit on the rule
    out = [_row([h[i] for h in headers], columns, sizes, indent, gap) for i in range(depth)]
    if rule:
        out.append(_row(["-" * s for s in sizes], columns, sizes, indent, gap))
    for r in range(len(last.cells)):
        cells = [col.cells[r] for col in columns]
        tail = wrap(cells[-1], sizes[-1]) if len(cells[-1]) > sizes[-1] else [cells[-1]]
        out.append(_row(cells[:-1] + [tail[0]], columns, sizes, indent, gap))
        out += [_row([""] * (len(columns) - 1) + [more], columns, sizes, indent, gap) for more in tail[1:]]
    return out


def _header_lines(header: str, size: int) -> list[str]:
    return wrap(header, size) if len(header) > size else [header]


def _row(cells: Sequence[str], columns: Sequence[Column], sizes: Sequence[int], indent: str, gap: int) -> str:
    parts = [c.rjust(s) if col.numeric else c.ljust(s) for c, col, s in zip(cells, columns, sizes)]
    return (indent + (" " * gap).join(parts)).rstrip().replace(NBSP, " ")


# `kgen ab`'s and `kgen tune`'s tables of figures, through rich: (header, cells, numeric) columns

FigureColumn = tuple[str, Sequence[str], bool]


def fitted_table(title: str, columns: Sequence[FigureColumn], width: int) -> list[str]:
    """The title, wrapped, over one rich table at `width`: numbers right-aligned, cells never split
    (each column at least its widest cell and the widest word of its header), headers wrapped
    between words. Where even that does not fit, `split_tables`: as many as it takes, the first
    column repeated in each."""
    import io
    import textwrap

    from rich import box
    from rich.console import Console
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=0)
    for header, cells, numeric in columns:
        need = max([len(c) for c in cells] + [len(w) for w in header.split()] + [1])
        # the header wrapped at its column's width here, so that rich never has to narrow a column
        table.add_column("\n".join(textwrap.wrap(header, need)) or header, justify="right" if numeric else "left",
                         no_wrap=True, min_width=need)
    for j in range(len(columns[0][1])):
        table.add_row(*[cells[j] for _, cells, _ in columns])
    if Console(width=10_000, color_system=None).measure(table).maximum > width:
        return split_tables(title, [columns[0][:2]], columns[1:], width)
    buf = io.StringIO()
    Console(file=buf, width=width, force_terminal=False, color_system=None, soft_wrap=False).print(table)
    return wrap(title, width, "  ", "    ") + [line.rstrip() for line in buf.getvalue().rstrip().splitlines()]


def split_tables(title: str, keys: Sequence[tuple[str, Sequence[str]]], columns: Sequence[FigureColumn],
                 width: int) -> list[str]:
    """Rows per variant (`keys`: header and cells of the leading columns), one column per figure,
    split into as many tables as it takes to fit `width`; numbers right-aligned."""
    import io

    from rich.console import Console

    make, chunks = split_columns(keys, columns, width)
    out = []
    for i, chunk in enumerate(chunks):
        # the title over the terminal's width, not the table's (rich would wrap it at the table's);
        # the part, `(1 of 3)`, is one word (no-break spaces), never split across lines
        part = f" ({keep_together(f'{i + 1} of {len(chunks)}')})" if len(chunks) > 1 else ""
        out += wrap(title + part, width, "", "  ")
        table = make(chunk)
        buf = io.StringIO()
        Console(file=buf, width=width, force_terminal=False, color_system=None, soft_wrap=False).print(table)
        out += [line.rstrip() for line in buf.getvalue().rstrip().splitlines()]
    return out


def split_columns(keys: Sequence[tuple[str, Sequence[str]]], columns: Sequence[FigureColumn], width: int):
    """(a maker of one table from some columns, the columns split into tables that fit `width`)."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    def need(header: str, cells: Sequence[str]) -> int:
        return max([len(c) for c in cells] + [len(w) for w in header.split()] + [1])

    def make(chunk: Sequence[FigureColumn]) -> Table:
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
        for h, cells in keys:
            table.add_column(h, no_wrap=True, min_width=need(h, cells))
        for h, cells, numeric in chunk:
            table.add_column(h, justify="right" if numeric else "left", overflow="fold", min_width=need(h, cells))
        for j in range(len(keys[0][1])):
            table.add_row(*[cells[j] for _, cells in keys], *[cells[j] for _, cells, _ in chunk])
        return table

    measure = Console(width=10_000, color_system=None)
    chunks: list[list[FigureColumn]] = [[]]
    for col in columns:       # each table takes columns while their unwrapped layout fits
        if chunks[-1] and measure.measure(make([*chunks[-1], col])).maximum > width:
            chunks.append([])
        chunks[-1].append(col)
    return make, chunks
