from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.kspec"))


@pytest.fixture
def write_spec(tmp_path):
    """Write spec text to a file and return its path."""
    def write(text: str, name: str = "t.kspec") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path
    return write


def example(name: str) -> Path:
    return ROOT / "examples" / f"{name}.kspec"
