"""The targets of `--target`, registered once: the runtimes kgen's kernels are for, each a `Target`
(kgen/proof/chain.py) that says what `built` writes for it and how the chain's later steps run for
it. TT-Metal, the default, is kgen's own build folder and the chain's own steps; an export target is
one module of kgen/gen/targets/ (what it renders) and one of kgen/proof/ (its steps and `TARGET`).

Adding a target is those two modules and one line here. Each target is imported when it is asked
for, so the CLI lists the names without loading the pipeline.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kgen.proof.chain import Target


def _tt_metal() -> Target:
    from kgen.proof.chain import TT_METAL
    return TT_METAL


def _blackhole_py() -> Target:
    from kgen.proof.bhpy import TARGET
    return TARGET


DEFAULT = "tt-metal"
# target name -> its Target, imported on use
REGISTRY: Mapping[str, Callable[[], Target]] = MappingProxyType({
    DEFAULT: _tt_metal,
    "blackhole-py": _blackhole_py,
})
NAMES: tuple[str, ...] = tuple(REGISTRY)


def get(name: str) -> Target:
    """The target called `name`; a name kgen does not know is exit 2."""
    from kgen.core.errors import SpecError

    if name not in REGISTRY:
        raise SpecError(f"--target {name}: kgen builds for {', '.join(NAMES)}", hint="pass one of those")
    return REGISTRY[name]()
