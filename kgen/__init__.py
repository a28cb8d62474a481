"""kgen: matmul kernel generator for Tenstorrent Tensix, targeting TT-Metal 0.81.1.

Stages (one module each): spec (parse) -> plan -> lower (IR) -> verify. Each stage is a plain
function from one immutable value to the next.
"""

__version__ = "0.1.0"
TT_METAL_VERSION = "0.81.1"
