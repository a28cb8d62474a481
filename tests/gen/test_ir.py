"""The IR's tile loop nest: one page formula, printed by the template and bounded by the verifier."""

import itertools

import pytest

from kgen.gen.ir import Affine, TileNest, op
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
