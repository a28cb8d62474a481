"""kgen's own version and the TT-Metal release whose kernel API, headers and JIT layout it targets.

Layers read them here; the package root re-exports them for users (`kgen.__version__`)."""

__version__ = "0.1.0"              # pyproject.toml's [project] version says the same
TT_METAL_VERSION = "0.81.1"
