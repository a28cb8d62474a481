"""The float64 reference of `kgen ab` and `kgen emulate` is the oracle's (kgen/proof/oracle.py): each
fused function as torch defines it (erf GELU, exact sigmoid, softplus with its threshold), checked
against math.erf and numpy float64. Moved here from tests/gen/test_activation_table.py when the
activation table's own float64 reference (activations.reference_f64) was removed."""

from __future__ import annotations

from math import erf, sqrt

import numpy as np

from kgen.proof.oracle import fused


def test_reference_is_torchs_float64():
    x = np.array([-3.0, -0.5, 0.0, 0.5, 3.0])
    gelu = fused("gelu")(x)
    assert np.allclose(gelu, [0.5 * v * (1 + erf(v / sqrt(2))) for v in x], rtol=0, atol=1e-15)
    assert np.allclose(fused("sigmoid")(x), 1 / (1 + np.exp(-x)), rtol=0, atol=1e-15)
    sp = fused("softplus(2, 1)")(x)
    assert sp[-1] == 3.0 and np.isclose(sp[0], np.log1p(np.exp(-6.0)) / 2)
