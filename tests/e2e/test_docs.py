"""The manual against the code: docs/spec.md's table of keys holds every key the spec parser
accepts and nothing else, with the values, defaults and dataflows the parser and planner apply;
the front page stays a front page; no page links outside the repository."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from conftest import ROOT
from kgen.core.errors import KgenError, SpecError
from kgen.gen.plan import plan
from kgen.gen.spec import COMPUTE_KEYS, MATMUL_GROUPS, MATMUL_KEYS, REQUIRED_MATMUL_KEYS, override_entry, parse_text, resolve

SPEC_PAGE = ROOT / "docs" / "spec.md"
BASE = ("arch = wormhole_b0  shape = 256 x 256 x 256  dtype { in0 = bfloat16  in1 = bfloat16  out = bfloat16 }  "
        "grid = 2 x 2  block { per_core = 4 x 4 }")


def key_table() -> dict[str, list[str]]:
    """key -> [type and values, default, where the default comes from, dataflows], from the one
    table under `## Every key`."""
    text = SPEC_PAGE.read_text()
    section = text.split("## Every key", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        if line.startswith("| `"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
            key = cells[0].strip("`")
            assert key not in rows, f"{key} is listed twice"
            rows[key] = cells[1:]
    return rows


TABLE = key_table()


def test_the_table_lists_every_key_the_parser_accepts_and_no_other():
    schema = set(MATMUL_KEYS) | {"variants.NAME"}
    assert set(TABLE) == schema, (sorted(schema - set(TABLE)), sorted(set(TABLE) - schema))
    # every group of a matmul body has its keys in the table
    assert {k.split(".")[0] for k in TABLE if "." in k} == set(MATMUL_GROUPS)
    # a `compute NAME { }` block takes the compute.* keys without the prefix
    assert {k.split(".", 1)[1] for k in TABLE if k.startswith("compute.")} == set(COMPUTE_KEYS)


@pytest.mark.parametrize("key", sorted(k for k in TABLE if k != "variants.NAME"))
def test_the_parser_knows_each_listed_key(key):
    # A made-up value is a value error for a key the parser knows, never "unknown key".
    # (In a variant, because parse_text checks a variant's values at once.)
    with pytest.raises(SpecError) as err:
        parse_text(f"matmul t {{ variants {{ v {{ {key} = 1.5 }} }} }}")
    assert "unknown key" not in str(err.value), err.value


def test_a_key_not_in_the_table_is_refused():
    with pytest.raises(SpecError, match="unknown key"):
        parse_text("matmul t { block.per_core_m = 4 }")


def _listed_values(cell: str) -> list[str]:
    return re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", cell.split(";")[0].split(":")[0])


@pytest.mark.parametrize("key", sorted(k for k in TABLE if "\\|" in TABLE[k][0]))
def test_listed_values_are_the_accepted_ones(key):
    values = _listed_values(TABLE[key][0])
    for value in values:
        override_entry(key, value, "docs/spec.md")            # accepted
    with pytest.raises(SpecError):
        override_entry(key, "not_a_value", "docs/spec.md")
    check = MATMUL_KEYS[key]
    options = getattr(check, "__closure__", None) or ()
    enum = next((c.cell_contents for c in options if isinstance(c.cell_contents, tuple)), None)
    if enum is not None:
        assert set(values) == set(enum), (key, values, enum)


def _resolved(spec, key: str):
    compute = {f"compute.{k}": getattr(spec.compute, k) for k in COMPUTE_KEYS}
    table = {
        "batch": spec.batch, "grid": spec.grid, "dataflow": spec.dataflow, "compute": spec.compute.preset,
        "block.in0_block_w": spec.block.in0_block_w, "block.out_subblock": spec.block.out_subblock,
        "block.per_core": spec.block.per_core, "block.out_block": spec.block.out_block,
        "fuse.bias": spec.fuse_bias, "fuse.activation": spec.activation, "untilize_out": spec.untilize_out,
        "transpose_mcast": spec.transpose_mcast, "broadcast_in1": spec.broadcast_in1, "memory.in0": spec.memory.in0, "memory.in1": spec.memory.in1,
        "memory.out": spec.memory.out, "transpose_a": spec.transpose_a, "transpose_b": spec.transpose_b, **compute,
    }
    value = table[key]
    return "auto" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


@pytest.mark.parametrize("key", sorted(k for k in TABLE if k != "variants.NAME"))
def test_the_default_is_what_the_parser_fills_in(key):
    default = TABLE[key][1]
    if key in REQUIRED_MATMUL_KEYS:
        assert default == "required"
        return
    spec = resolve(parse_text("matmul t { arch = wormhole_b0  shape = 64 x 64 x 64 "
                              "dtype { in0 = bfloat16  in1 = bfloat16  out = bfloat8_b } }"))
    if key == "dtype.bias":
        assert default == "`dtype.out`" and spec.dtype_bias == spec.dtype_out
    elif key == "memory.orientation":
        assert spec.memory.orientation is None          # none given: the one TT-Metal requires
    elif key.endswith("_shard"):                        # none given: the planner lays the shards out
        assert default.startswith("none") and spec.memory.shard(key.split(".")[1].split("_")[0]) is None
    elif key == "fuse_batch":                           # none given: fused unless in1 is batched
        assert default.startswith("`true` (`false` with `broadcast_in1 = false`)") and spec.fuse_batch is None
        assert spec.fuses_batch and not replace(spec, batch=2, broadcast_in1=False).fuses_batch
    else:
        assert default == f"`{_resolved(spec, key)}`", (key, default)


SAMPLES = {"transpose_mcast": "transpose_mcast = true",
           "memory.orientation": "memory { in0 = l1_block_sharded  orientation = row_major }"}
# the memory keys: `dram` and `l1` (interleaved) on every dataflow but dram_sharded, the sharded
# placements the table gives `mcast_2d` on it alone
SHARDED_SAMPLES = {"memory.in0": "memory { in0 = l1_block_sharded }", "memory.out": "memory { out = l1_block_sharded }"}


# A small matmul each dataflow plans as it is (the 1D ones need one row or column of blocks).
DATAFLOW_BASES = {
    "mcast_2d": ("256 x 256 x 256", "4 x 4"), "reuse": ("256 x 256 x 256", "4 x 4"),
    "mcast_1d_in0": ("64 x 1024 x 256", "2 x 4"), "mcast_1d_in1": ("1024 x 64 x 256", "4 x 2"),
}


def _dataflow_spec(dataflow: str, extra: str = ""):
    shape, per_core = DATAFLOW_BASES[dataflow]
    return resolve(parse_text(f"matmul t {{ arch = wormhole_b0  shape = {shape}  grid = 4 x 2  dataflow = {dataflow} "
                              f"dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}  "
                              f"block {{ per_core = {per_core} }}  {extra} }}"))


@pytest.mark.parametrize("key", sorted(k for k in TABLE if TABLE[k][3].startswith("`mcast_2d`")))
def test_keys_of_one_dataflow_are_refused_by_the_others(key):
    assert set(SAMPLES) == {k for k in TABLE if TABLE[k][3].startswith("`mcast_2d`")}
    plan(_dataflow_spec("mcast_2d", SAMPLES[key]))
    for other in ("reuse", "mcast_1d_in0", "mcast_1d_in1"):
        plan(_dataflow_spec(other))                                   # the base plans there
        with pytest.raises(KgenError, match=f"with dataflow = {other}"):
            plan(_dataflow_spec(other, SAMPLES[key]))


@pytest.mark.parametrize("key", ["transpose_a", "transpose_b"])
def test_the_transposes_are_taken_by_the_dataflows_the_table_lists(key):
    listed = set(re.findall(r"`(\w+)`", TABLE[key][3]))
    assert listed == {"reuse", "mcast_2d", "mcast_1d_in0", "mcast_1d_in1"}
    for dataflow in DATAFLOW_BASES:
        if dataflow in listed:
            plan(_dataflow_spec(dataflow, f"{key} = true"))
        else:
            with pytest.raises(KgenError, match=f"with dataflow = {dataflow}"):
                plan(_dataflow_spec(dataflow, f"{key} = true"))


@pytest.mark.parametrize("key", ["memory.in0", "memory.in1", "memory.out"])
def test_interleaved_placements_are_every_dataflows_and_sharded_ones_mcast_2ds(key):
    tensor = key.split(".")[1]
    assert TABLE[key][3].startswith("`dram`, `l1`: every dataflow but `dram_sharded`")
    for dataflow in DATAFLOW_BASES:
        plan(_dataflow_spec(dataflow, f"memory {{ {tensor} = l1 }}"))
    if key in SHARDED_SAMPLES:
        assert "`l1_block_sharded`" in TABLE[key][0]
        plan(_dataflow_spec("mcast_2d", SHARDED_SAMPLES[key]))
        for other in ("reuse", "mcast_1d_in0", "mcast_1d_in1"):
            with pytest.raises(KgenError, match=f"with dataflow = {other}"):
                plan(_dataflow_spec(other, SHARDED_SAMPLES[key]))


def test_the_readme_is_a_front_page():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) < 200, len(lines)
    long = [(i + 1, len(line)) for i, line in enumerate(lines) if len(line) > 100]
    assert not long, long


def test_no_page_links_outside_the_repository():
    pages = [ROOT / "README.md", ROOT / "benchmarks" / "RESULTS.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for page in pages:
        text = page.read_text()
        assert "shared/reference" not in text and "../shared" not in text, page
        for target in re.findall(r"\]\(([^)#\s]+)", text):
            if target.startswith(("http://", "https://")):
                continue
            resolved = (page.parent / target).resolve()
            assert resolved.is_relative_to(ROOT), (page, target)
            assert resolved.exists(), (page, target)


# The DRAM-sharded factory's placements: the three together on dram_sharded only, and dram_sharded
# with any other placement refused.
DRAM_SHARDED_MEMORY = "memory { in0 = l1_width_sharded  in1 = dram_width_sharded  out = l1_width_sharded }"


def test_the_dram_sharded_placements_are_that_dataflows_alone():
    for key in ("memory.in0", "memory.in1", "memory.out"):
        assert "`dram_sharded`" in TABLE[key][3], key
    decode = ("matmul t { arch = wormhole_b0  shape = 32 x 384 x 256  dataflow = dram_sharded "
              "dtype { in0 = bfloat16  in1 = bfloat8_b  out = bfloat16 }  %s }")
    plan(resolve(parse_text(decode % DRAM_SHARDED_MEMORY)))
    with pytest.raises(KgenError, match="with dataflow = dram_sharded"):
        plan(resolve(parse_text(decode % "")))                 # DRAM tensors: not this factory's
    for other in ("mcast_2d", "reuse", "mcast_1d_in0", "mcast_1d_in1"):
        with pytest.raises(KgenError, match=f"with dataflow = {other}"):
            plan(_dataflow_spec(other, DRAM_SHARDED_MEMORY))

