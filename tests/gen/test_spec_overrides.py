"""spec.override_entry / with_variant: command-line variants go through the same grammar and schema as
a `variants` block in the file, and resolve to the same MatmulSpec."""

from __future__ import annotations

import pytest

from conftest import example
from kgen.core.errors import SpecError
from kgen.gen.spec import load_file, numeric_keys, override_entry, resolve, with_variant


def test_a_command_line_variant_resolves_like_the_same_variant_in_the_file():
    sf = load_file(example("peak_bf16"))
    made = with_variant(sf, "spill2", {"compute.packer_l1_acc": override_entry("compute.packer_l1_acc", "false", "--vary")})
    a, b = resolve(made, "spill2"), resolve(sf, "spill")
    assert a.compute == b.compute and a.block == b.block and (a.m, a.n, a.k) == (b.m, b.n, b.k)
    assert a.variant == "spill2" and "spill2" in a.variants


def test_with_variant_starts_from_a_file_variant_and_keeps_the_file_intact():
    sf = load_file(example("peak_small"))
    made = with_variant(sf, "fp32_hifi4", {"compute.math_fidelity": override_entry("compute.math_fidelity", "HiFi4", "x")},
                        base="fp32")
    s = resolve(made, "fp32_hifi4")
    assert s.compute.fp32_dest_acc and s.compute.math_fidelity == "HiFi4"
    assert "fp32_hifi4" not in sf.variants and resolve(sf, "fp32").compute.math_fidelity == "HiFi2"


@pytest.mark.parametrize("key, value, words", [
    ("block.in0_blok_w", "4", ["unknown key `block.in0_blok_w`", "block.in0_block_w"]),
    ("grid", "8 x", ["--vary"]),
    ("shape", "64 x 64", ["expected 3 numbers"]),
    ("compute.fp32_dest_acc", "yes", ["expected true or false"]),
])
def test_bad_overrides_are_spec_errors_that_point_at_the_flag(key, value, words):
    with pytest.raises(SpecError) as exc:
        override_entry(key, value, "--vary")
    text = exc.value.render()
    assert text.startswith("--vary:1:")
    for w in words:
        assert w in text, text


def test_numeric_keys_are_the_whole_number_fields():
    assert set(numeric_keys()) == {"batch", "block.in0_block_w"}
