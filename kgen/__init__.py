"""kgen: matmul kernel generator for Tenstorrent Tensix, targeting TT-Metal 0.81.1.

Stages (one module each): spec (parse) -> plan -> lower (IR) -> verify. Each stage is a plain
function from one immutable value to the next.
"""

from kgen.core.version import TT_METAL_VERSION, __version__

__all__ = ["TT_METAL_VERSION", "__version__"]
