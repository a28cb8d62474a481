"""What kgen renders for an export target of `--target`: one module per runtime kgen's kernels can
be handed to (blackhole_py.py: blackhole-py's ABI view of a rendered program; bhpy_export.py: the
module it prints). TT-Metal (the default) is kgen's own build folder and has no module here.

The targets themselves, each with its outputs and the proof chain's steps for it, are registered
once in kgen/proof/targets.py: a target's steps are proof's, which this layer cannot import.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PortPlan:
    """A target's own port plan as `kgen ab --target` lays it out, stage by stage: each stage the spec
    with one value of `field`, after the stages kgen cannot render (listed with why)."""

    field: str                                       # a spec field, as `kgen ab --vary` names it
    stages: tuple[tuple[str, str], ...]              # (stage, the field's value)
    not_rendered: tuple[tuple[str, str], ...] = ()   # (stage, why kgen cannot render it)
