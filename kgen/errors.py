"""Errors: `SpecError` for anything a user can cause (exit code 2), `KgenBug` for kgen's own faults."""

from __future__ import annotations

from dataclasses import dataclass


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
            text = self.span.source_line.rstrip("\n").expandtabs(1)
            gutter = f"{self.span.line:5d} | "
            width = 1
            if self.span.end_line == self.span.line and self.span.end_column > self.span.column:
                width = self.span.end_column - self.span.column
            width = max(1, min(width, max(1, len(text) - self.span.column + 1)))
            lines.append(gutter + text)
            lines.append(" " * (len(gutter) + self.span.column - 1) + "^" + "~" * (width - 1))
        if self.hint:
            lines.append(f"hint: {self.hint}")
        return "\n".join(lines)


class KgenBug(Exception):
    """An internal inconsistency (for example an IR that fails verification): a bug in kgen."""
