"""The GPU suite sharded over the GPUs of one machine (scripts/device_run.sh SHARDS=n; tests/conftest.py): every GPU
test runs in exactly one shard, those that need several GPUs in the shard that sees them all, and the shards are
balanced by the last recorded suite's seconds."""
from types import SimpleNamespace

from tests.conftest import _recorded_seconds, _sharded, shard_keeps, shard_of


def test_every_gpu_test_is_in_exactly_one_shard_and_the_multi_gpu_ones_see_every_gpu(gpu_marks):
    every = list(gpu_marks)
    multi = shard_keeps(gpu_marks, "multi")
    assert multi and all("day19" in t for t in multi), multi  # day 19's exercise in processes, and nothing else
    single = [t for t in every if t not in multi]
    alone = [t for t in single if "gpu_alone" in gpu_marks[t]]
    shards = shard_of(single, 4, _recorded_seconds(), alone=alone)
    kept = [shard_keeps(gpu_marks, f"{i}/4") for i in range(4)]
    assert kept[1] == {t for t, k in shards.items() if k == 1}
    assert set().union(*kept) == set(single) and sum(map(len, kept)) == len(single) and not kept[1] & multi


def test_the_collection_hook_keeps_its_shard_and_says_what_it_dropped(monkeypatch):
    # the hook (pytest_collection_modifyitems -> _sharded) on made-up items: a CPU test stays in every shard
    items = [SimpleNamespace(nodeid=n, keywords=set(k)) for n, k in
             [("a", {"gpu"}), ("b", {"gpu", "gpu_alone"}), ("c", {"gpu", "multi_gpu"}), ("d", set())]]
    dropped = []
    config = SimpleNamespace(hook=SimpleNamespace(pytest_deselected=lambda items: dropped.extend(items)))
    monkeypatch.setenv("GRADER_TEST_SHARD", "multi")
    kept = list(items)
    _sharded(config, kept)
    assert [it.nodeid for it in kept] == ["c", "d"] and [it.nodeid for it in dropped] == ["a", "b"]
    marks = {"a": [], "b": ["gpu_alone"], "c": ["multi_gpu"]}
    for i in (0, 1):
        monkeypatch.setenv("GRADER_TEST_SHARD", f"{i}/2")
        kept, dropped[:] = list(items), []
        _sharded(config, kept)
        assert {it.nodeid for it in kept} == shard_keeps(marks, f"{i}/2") | {"d"}
    assert shard_keeps(marks, "0/2") | shard_keeps(marks, "1/2") == {"a", "b"}


def test_shards_are_balanced_by_recorded_seconds():
    seconds = {"a": 100.0, "b": 60.0, "c": 50.0, "d": 40.0, "e": 10.0}
    got = shard_of(list(seconds), 2, seconds)
    load = [sum(seconds[t] for t, k in got.items() if k == i) for i in (0, 1)]
    # slowest first, each to the lighter shard: a | b, c | d (100 < 110) | e (110 < 140)
    assert got["a"] != got["b"] and got["b"] == got["c"] and sorted(load) == [120.0, 140.0], (got, load)
    assert shard_of(list(seconds), 2, seconds) == got  # the same in every process


def test_tests_that_run_alone_spread_over_the_shards_and_weigh_as_much_as_the_workers_they_hold():
    # Two profile-like tests run one at a time after their shard's parallel tests: in one shard they would add up
    # at the end of it (the suite of 2026-11-27 ran out of time exactly so).
    seconds = {"p1": 70.0, "p2": 60.0, "a": 400.0, "b": 300.0, "c": 200.0, "d": 100.0}
    got = shard_of(list(seconds), 2, seconds, alone=["p1", "p2"], alone_weight=16.0)
    assert got["p1"] != got["p2"], got
    # p1 weighs 1120 and p2 960; then a to p2's shard (1360), b to p1's (1420), c to p2's (1560), d to p1's (1520)
    assert [t for t in "abcd" if got[t] == got["p2"]] == ["a", "c"], got
    assert shard_of(list(seconds), 2, seconds, alone=["p1", "p2"]) != got  # unweighted, they count as seconds
