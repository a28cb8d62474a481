"""The IR's transfer loop nests: one page formula each, printed by the template and bounded by the verifier."""

import itertools

import pytest

from kgen.gen.ir import Affine, RowNest, TileNest, op
from kgen.gen.render import cxx_index


def test_tile_nest_pages_are_a_row_major_block_of_the_tensor():
    # A 2 x 3 tile block whose top-left tile is page 5 of a row-major interleaved tensor 10 tiles wide:
    # rows of the block are 10 pages apart, tiles within a row adjacent.
    nest = TileNest.of(op("read_tiles", "in0", 0, Affine.of(5), 2, 3, 10))
    pages = [nest.page.eval({"first_tile": 5, "tile_row": r, "tile_col": c})
             for r, c in itertools.product(range(2), range(3))]
    assert pages == [5, 6, 7, 15, 16, 17]
    assert nest.last_page({}) == max(pages)


def test_tile_nest_last_page_ranges_over_the_enclosing_loops_and_cores():
    # start = 4*core_y + 2*bh over core_y < 3, bh < 2: the highest block starts at 4*2 + 2*1 = 10
    nest = TileNest.of(op("write_tiles", "out", 16, Affine.of(0, core_y=4, bh=2), 1, 2, 7))
    assert nest.last_page({"core_y": 3, "bh": 2}) == 10 + 0 * 7 + 1


def test_tile_nest_prints_as_the_readers_index_tile_ids():
    nest = TileNest.of(op("read_tiles", "in1", 1, Affine.of(0), 4, 2, 8))
    assert cxx_index(nest.page) == "first_tile + tile_row * 8 + tile_col"


def test_only_tile_transfers_have_a_tile_nest():
    with pytest.raises(TypeError):
        TileNest.of(op("cb_wait_front", 0, 1))


def test_row_nest_writes_consecutive_rows_at_a_byte_offset_within_each_page():
    # 32 untilized rows (one tile row) from row 64 + 32*bh, each 128 bytes at byte 256*bw of its page
    nest = RowNest.of(op("write_rows", "out", 16, Affine.of(64, bh=32), 32, 128, Affine.of(0, bw=256)))
    assert [nest.page.eval({"first_row": 64, "row": r}) for r in (0, 1, 31)] == [64, 65, 95]
    assert nest.last_page({"bh": 2}) == 64 + 32 + 31
    assert nest.end_byte({"bw": 3}) == 2 * 256 + 128
    assert cxx_index(nest.page) == "first_row + row"
    with pytest.raises(TypeError):
        RowNest.of(op("read_tiles", "in0", 0, Affine.of(0), 1, 1, 1))


def test_counted_is_walk_with_the_loop_counts_multiplied():
    import math
    from collections import Counter

    from conftest import example
    from kgen.gen.ir import counted, walk
    from kgen.gen.pipeline import run
    from kgen.gen.spec import load

    program = run(load(example("l1acc_two_blocks_bias")), "verified").verified
    for kernel in program.kernels:
        by_walk, by_counted = Counter(), Counter()
        for o, loops in walk(kernel.body):
            by_walk[o.kind] += math.prod(loop.count for loop in loops)
        for o, n in counted(kernel.body):
            by_counted[o.kind] += n
        assert +by_walk == by_counted, kernel.name


def test_extents_cap_the_pages_a_padded_nest_touches():
    from kgen.gen.ir import Extent
    # in0 of a 7 x 8-tile tensor read in 2 x 2 blocks per core_y (per_core_M = 4): rows 7 on are padding,
    # so the highest page is row 6's last tile, 6 * 8 + 7 = 55, not row 7's.
    rows = Extent(Affine.of(0, core_y=4, bh=2), 7)
    nest = TileNest.of(op("read_tiles", "in0", 0, Affine.of(0, core_y=32, bh=16, block=2), 2, 2, 8, rows, None))
    assert nest.last_page({"core_y": 2, "bh": 2, "block": 4}) == 6 * 8 + 7
    unguarded = TileNest.of(op("read_tiles", "in0", 0, Affine.of(0, core_y=32, bh=16, block=2), 2, 2, 8))
    assert unguarded.last_page({"core_y": 2, "bh": 2, "block": 4}) == 7 * 8 + 7
    # columns: in1 7 tiles wide, 4-column blocks per core_x, the last column of tiles is 6
    cols = Extent(Affine.of(0, core_x=4), 7)
    nest = TileNest.of(op("read_tiles", "in1", 1, Affine.of(0, block=14, core_x=4), 2, 4, 7, None, cols))
    assert nest.last_page({"core_x": 2, "block": 3}) == 2 * 14 + 1 * 7 + 6
