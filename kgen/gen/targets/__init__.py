"""Export targets of `kgen build --target`: one module per runtime kgen's kernels can be handed to,
behind one registry. TT-Metal (the default) is kgen's own build folder and has no module here."""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

from kgen.core.errors import SpecError

DEFAULT = "tt-metal"
BLACKHOLE_PY = "blackhole-py"
# target name -> the module that exports it (imported on use, so the CLI starts quickly)
REGISTRY: Mapping[str, str | None] = MappingProxyType({
    DEFAULT: None,
    BLACKHOLE_PY: "kgen.gen.targets.blackhole_py",
})
NAMES: tuple[str, ...] = tuple(REGISTRY)


def module(name: str):
    """The export module of target `name`, or None for TT-Metal; a name kgen does not know is exit 2."""
    import importlib

    if name not in REGISTRY:
        raise SpecError(f"--target {name}: kgen exports to {', '.join(NAMES)}", hint="pass one of those")
    path = REGISTRY[name]
    return importlib.import_module(path) if path else None
