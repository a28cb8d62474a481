"""Errors: `SpecError` for anything a user can cause (exit code 2), `KgenBug` for kgen's own faults."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

MAX_SHOWN_LINE = 160       # characters of a source line shown under an error


@dataclass(frozen=True)
class Span:
    """A place in a source file: 1-based line and column, end exclusive."""

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    source_line: str = ""

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}"


class KgenError(Exception):
    """Base class of errors kgen reports to the user."""

    exit_code = 2


EXIT_INCOMPLETE = 4          # a check that was asked for could not run (1: one ran and failed)


class Incomplete(KgenError):
    """A check that was asked for could not run (a missing tool); the message says which and why."""

    exit_code = EXIT_INCOMPLETE


class SpecError(KgenError):
    """Bad input: a spec, a flag or a path. Rendered as one paragraph with a caret under the text."""

    def __init__(self, message: str, span: Span | None = None, hint: str | None = None,
                 path: str | None = None):
        super().__init__(message)
        self.message = message
        self.span = span
        self.hint = hint
        self.path = path

    def render(self) -> str:
        where = str(self.span) if self.span else self.path
        lines = [f"{where}: error: {self.message}" if where else f"error: {self.message}"]
        if self.span and self.span.source_line:
            # One character shown per character of the line, so the caret stays under its column:
            # a tab as one space, other control and line-separator characters as U+FFFD.
            text = "".join(" " if c == "\t" else "\ufffd" if unicodedata.category(c) in ("Cc", "Zl", "Zp") else c
                           for c in self.span.source_line.rstrip("\n"))
            column = self.span.column
            width = 1
            if self.span.end_line == self.span.line and self.span.end_column > self.span.column:
                width = self.span.end_column - self.span.column
            if len(text) > MAX_SHOWN_LINE:         # a window around the column keeps it one paragraph
                first = 0 if column <= MAX_SHOWN_LINE * 3 // 4 else \
                    max(0, min(column - 1 - MAX_SHOWN_LINE // 2, len(text) - MAX_SHOWN_LINE))
                text = ("..." if first else "") + text[first:first + MAX_SHOWN_LINE] + \
                       ("..." if first + MAX_SHOWN_LINE < len(text) else "")
                column = column - first + (3 if first else 0)
            width = max(1, min(width, max(1, len(text) - column + 1)))
            gutter = f"{self.span.line:5d} | "
            lines.append(gutter + text)
            lines.append(" " * (len(gutter) + column - 1) + "^" + "~" * (width - 1))
        if self.hint:
            lines.append(f"hint: {self.hint}")
        return "\n".join(lines)


class KgenBug(Exception):
    """An internal inconsistency (for example an IR that fails verification): a bug in kgen."""
