"""The error map's guards (grader/check/error_map.py): no detector names a pattern the grid cannot support (a map of
one cell, one row of two cells, a uniform map, a triangle of one cell, an "every k-th" of less than two periods, a
property every row has), each checked on made-up grids, with the false positives of the H100 run of 2026-12-06
(scripts/error_maps.py over tests/known_wrong.yaml) rebuilt cell for cell; and the choice of the map an exercise
shows: the failing case whose map says the most, not the first (usually the smallest shape)."""
import pytest
from rich.console import Console

from grader.check import error_map, report
from grader.check.error_map import choose, detect


def _map(*panels, block=(1, 32), extent=None, names=(), sizes=(), diagonal=False, properties=(),
         rows="row", cols="column"):
    """A map as build() writes it, from its cells: each panel a list of strings, one character a cell."""
    grid = [list(p) for p in panels]
    extent = extent or [len(grid[0]) * block[0], len(grid[0][0]) * block[1]]
    return {"shape": [*sizes, *extent], "panels": list(names), "panel_sizes": list(sizes), "panels_per_cell": 1,
            "rows": rows, "cols": cols, "natural_block": list(block), "block": list(block), "extent": list(extent),
            "diagonal": diagonal, "grid": grid, "properties": [list(p) for p in properties]}


def _pattern(emap):
    return detect(emap)[0]


# -- the false positives of the H100 run, rebuilt from its JSON (maps-h100/<day>-<name>.json) --------------------
def test_day04_race_on_a_1x37_softmax_is_no_last_tile():
    # race_missing_syncthreads, fp32 1x37: one right column cell, one wrong; the race is anywhere on larger shapes
    assert _pattern(_map([".5"], block=(1, 32), extent=(1, 37), diagonal=True)) is None


@pytest.mark.parametrize("cell", ["5", "!"])
def test_day02_one_cell_is_no_probe_row(cell):
    # all_zeros ("5") and off_by_one_sum_skips_last_column ("!"), fp32 1x1: the one row has "one finite entry"
    emap = _map([cell], block=(1, 32), extent=(1, 1), diagonal=True,
                properties=[("with one finite entry", 1, 1, 1, 1)])
    assert _pattern(emap) is None


def test_day02_a_corner_cell_is_no_triangle():
    # off_by_one_sum_skips_last_column, fp32 33x129+1: below the diagonal lies one cell, the last row's first
    emap = _map(["44444", "22222", "33333", "22222", "11111", "44444", "33333", "33333", "....."],
                block=(4, 32), extent=(33, 129), diagonal=True)
    assert _pattern(emap) is None


def test_day07_one_right_cell_is_no_l_of_last_tiles():
    # tiled_missing_syncthreads_after_load, fp32 64x1000x3: every cell wrong but the first
    grid = ['.99999999999999999999999999!9999', '!99999999999999999999999999!99!9', '!99!9999999!99!999!99999999!9!!9',
            '!99!9!99999!999!99!9!9!9!99!!!!9', '999!999!9!9!9!9999!9999999999995', '999!9!9!!!999!99!!!9999999999!95',
            '9!9!9!9!!!9!9!99!9!9999999999!95', '9!9!9!!!!!999!!9!9!9!9!99!9!9!95']
    assert _pattern(_map(grid, block=(8, 32), extent=(64, 1000), diagonal=True)) is None


def test_day09_half_the_rows_wrong_is_no_last_tile():
    # warptile_no_barrier_between_stages, fp32 127x129x65: a race that hit rows 64-126 (wrong everywhere on the
    # other shapes)
    grid = ["................."] * 8 + ["44444444444444444", "44444444444444443", "44444444444444443", "44444444454444443",
                                      "44444444444444444", "44444444444444443", "44444444444444443", "44444444444444443"]
    assert _pattern(_map(grid, block=(8, 8), extent=(127, 129), diagonal=True)) is None


def test_day09_most_of_the_columns_unwritten_is_no_last_tile():
    # streamk_segment_not_clamped, fp32 129x384x1000: 16 of 24 column cells never written is no tail
    grid = ["........________________"] * 8 + ["........________________"]
    assert _pattern(_map(grid, block=(16, 16), extent=(129, 384), diagonal=True)) is None


# -- each guard on made-up grids ----------------------------------------------------------------------------------
@pytest.mark.parametrize("grid", [["5"], ["!"], ["_"], ["55"], ["5", "5"], ["444", "444"], ["__", "__"]])
def test_a_single_cell_or_uniform_map_names_nothing(grid):
    # even with a property every row has: nothing is right to contrast the wrong rows with
    emap = _map(grid, properties=[("whose max is very negative", len(grid), len(grid), len(grid), len(grid))])
    assert _pattern(emap) is None


@pytest.mark.parametrize("row,named", [
    (".5", False),  # one right cell before: chance as much as a rule
    ("..5", True),
    ("...55", True),
    ("..55", False),  # half the row: not its last tile
    ("..555", False),  # most of the row
    ("5..5", False),  # a wrong cell before the tail
])
def test_the_last_tile_needs_right_cells_before_it(row, named):
    assert (_pattern(_map([row])) == "last_tile") is named
    # the same along the rows
    assert (_pattern(_map(list(row))) == "last_tile") is named


def test_the_l_of_last_tiles_needs_right_cells_before_both_edges():
    assert _pattern(_map(["...4", "...4", "...4", "4444"])) == "last_tile"
    assert _pattern(_map([".444", "4444", "4444", "4444"])) is None


@pytest.mark.parametrize("row,named", [
    (".4.4", True),  # two whole periods of 2
    (".4.", False),  # one wrong cell: no period at all
    ("4...4..", False),  # every 4th, seen over less than two periods (7 cells)
    ("4...4...", True),  # two whole periods of 4
])
def test_every_kth_needs_two_periods(row, named):
    assert (_pattern(_map([row, row])) == "every_kth") is named


def test_probe_rows_need_a_right_row_without_the_property():
    wrong_rows = _map(["55", "..", "..", ".."], block=(1, 32))
    some = [("whose max is very negative", 1, 1, 4, 1)]  # one row of four has it, the one wrong
    assert detect(wrong_rows, some)[0] == "probe_rows"
    every = [("whose max is very negative", 4, 1, 4, 1)]  # every row has it: no row without it to be right
    assert detect(wrong_rows, every)[0] != "probe_rows"
    # the map recorded its properties: detect() reads them when none are given
    assert _pattern({**wrong_rows, "properties": [list(p) for p in some]}) == "probe_rows"


def test_one_head_or_batch_needs_two_of_them():
    one_batch = dict(names=("batch", "head"), block=(16, 16))
    # two batches of one head: batch 1 wrong is one batch; there is no second head to call it one head
    assert _pattern(_map(["....", "...."], ["4444", "4444"], sizes=(2, 1), **one_batch)) == "one_batch"
    # one batch of two heads: head 1 wrong
    assert _pattern(_map(["....", "...."], ["4444", "4444"], sizes=(1, 2), **one_batch)) == "one_head"
    # one panel in all, wrong in part: the wrong cells are in "one head" trivially, so none is named
    assert _pattern(_map(["....", "4444", "...."], sizes=(1, 1), **one_batch)) is None


def test_the_first_block_needs_two_panels_and_two_row_blocks():
    attn = dict(names=("batch", "head"), block=(16, 16))
    assert _pattern(_map(["4444", "....", "...."], ["4444", "....", "...."], sizes=(1, 2), **attn)) == "first_block"
    assert _pattern(_map(["4444", "....", "...."], sizes=(1, 1), **attn)) is None
    assert _pattern(_map(["4444"], ["...."], sizes=(1, 2), **attn)) == "one_head"  # one row block: a head, not a block


def test_a_triangle_needs_cells_on_both_sides():
    upper = [".444", "..44", "...4", "...."]
    assert _pattern(_map(upper, block=(32, 32), diagonal=True)) == "above_diagonal"
    # a 2 x 2 grid: one cell on each side of the diagonal is a corner, not a triangle
    assert _pattern(_map([".4", ".."], block=(32, 32), diagonal=True)) != "above_diagonal"


# -- the map an exercise shows ------------------------------------------------------------------------------------
def _case(label, grid, shape, pattern=None, ok=False):
    return {"kind": "correctness", "dtype": "fp32", "label": label, "ok": ok, "category": "mismatch",
            "message": f"wrong in {label}", "pattern": pattern,
            "error_map": {**_map(*grid), "shape": list(shape), "pattern": pattern, "pattern_text": pattern,
                          "legend": error_map.LEGEND}}


def test_choose_counts_a_pooled_cell_by_the_blocks_it_hides():
    # day11 mma_sync_ldmatrix_a_rows_repeat_the_first_eight: 272 cells of one 8 x 8 block each (127x129x65) show
    # every second 8-row block wrong; 288 cells of four blocks each (257x255x513) show it wrong everywhere
    fine = _case("127x129x65", [["." * 17, "4" * 17] * 8], (127, 129), "every_kth")
    fine["error_map"].update(block=[8, 8], natural_block=[8, 8])
    pooled = _case("257x255x513", [["4" * 32] * 9], (257, 255))
    pooled["error_map"].update(block=[32, 8], natural_block=[8, 8])
    assert error_map.cells(pooled["error_map"]) == 288 > error_map.cells(fine["error_map"]) == 272
    assert choose([pooled, fine]) is fine


def test_choose_takes_the_most_cells_then_the_largest_shape_then_the_first():
    small = _case("1x37", [[".5"]], (1, 37), "last_tile")
    big = _case("1000x37", [["..", "..", "__"]], (1000, 37), "last_tile")
    same_cells_larger = _case("2000x37", [["..", "..", "55"]], (2000, 37))
    same_again = _case("2000x37b", [["..", "5.", ".."]], (2000, 37))
    assert choose([small, big]) is big
    assert choose([small, big, same_cells_larger]) is same_cells_larger
    assert choose([same_cells_larger, same_again]) is same_cells_larger  # a tie: the first
    assert choose([{**big, "ok": True}, small]) is small  # a passing case is never shown
    assert choose([{"ok": False, "category": "crash"}]) is None


def test_the_report_and_watch_show_the_most_telling_map():
    small = _case("1x37", [[".5"]], (1, 37))
    filler = [_case(f"filler{i}", [["5"]], (1, 1)) for i in range(report.MAX_LISTED_FAILURES)]
    big = _case("1000x37", [["..", "..", "..", "__"]], (1000, 37), "last_tile")
    console = Console(record=True, width=100, color_system=None)
    report.render_correctness(console, [small, *filler, big])
    out = console.export_text()
    # listed after the first few failures (it is not among them), with its map under it, drawn once
    assert out.count("error map: one cell") == 1
    assert out.index("1000x37: wrong in 1000x37") < out.index("error map: one cell")
    assert "  ..\n" in out and "  __\n" in out


def test_the_watch_line_and_the_formats_show_the_same_map():
    from grader.check.verdict import ExerciseResult
    from grader.classroom import formats

    small = _case("1x37", [[".5"]], (1, 37))
    big = _case("1000x37", [["..", "..", "..", "__"]], (1000, 37), "last_tile")

    class Ex:
        threshold, baseline, name = 1.0, None, "softmax"

    res = ExerciseResult("day02", "softmax", "student", "days/day02", 1, status="fail", cases=[small, big])
    lines = report.compact(res, Ex())
    assert lines[1] == "  map fp32 1000x37: [..._] last_tile"
    doc = {"day": "day02", "exercises": [{"exercise": "softmax", "status": "fail", "message": "2 failed",
                                          "cases": [small, big]}]}
    drawn = formats._tests(doc, {"softmax": 10})[0]["map"]
    assert drawn[0] == "1000x37:"
