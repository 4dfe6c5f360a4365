"""The leaderboard: ranked results on boards per day and GPU model, every kind of untrustworthy result rejected with
its reason, and two builds at once leaving one build's files."""
import copy
import json
import subprocess
import sys
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import pytest

from grader.classroom import leaderboard as lb
from tests.conftest import run_grader

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)
SHA = "ab" * 32
H100 = {"gpu": "NVIDIA H100 80GB HBM3", "capability": "9.0", "sms": 132, "torch": "2.11.0+cu130", "cuda": "13.0",
        "driver": "580.65.06"}
H200 = {**H100, "gpu": "NVIDIA H200", "sms": 132}


def case(ms, base_ms, run=1, nbytes=64 << 20, copy_ms=None, dtype="fp32"):
    copy_ms = ms * 0.8 if copy_ms is None else copy_ms
    return {"kind": "benchmark", "dtype": dtype, "label": "4096x4096", "ok": True, "run": run,
            "time": {"median_ms": ms}, "baseline_time": {"median_ms": base_ms}, "speedup": base_ms / ms,
            "bytes": nbytes, "gbps": nbytes / ms / 1e6, "copy_ms": copy_ms, "pct_of_copy": copy_ms / ms}


def exercise(name="softmax", speedups=(2.0, 2.0), info=H100):
    cases = [case(1.0, s, run=k) for k, s in enumerate(speedups, 1)]
    return {"exercise": name, "status": "pass", "message": "correct", "speedup": min(speedups), "info": dict(info),
            "cases": cases, "ranked": True, "seed_sha256": SHA, "seed": None}


def result(*exercises, day="day01", when="2026-11-19T10:00:00Z"):
    return {"day": day, "variant": "student", "when": when, "ranked": True, "seed_sha256": SHA,
            "exercises": list(exercises) or [exercise()]}


def put(root: Path, who: str, doc, name="day01.json") -> Path:
    p = root / who / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return p


def judge(tmp_path, doc, **kw):
    """The one rejection of a lone result (or None if it was accepted)."""
    put(tmp_path / "r", "alice", doc)
    entries, rejected, apart = lb.collect(lb.result_files([tmp_path / "r"]), now=NOW, **kw)
    assert len(entries) + len(rejected) == 1 and not apart
    return rejected[0] if rejected else None


def test_good_results_are_ranked_per_day_and_gpu_by_geomean_speedup(tmp_path):
    r = tmp_path / "r"
    put(r, "alice", result(exercise("a", (2.0, 3.0)), exercise("b", (8.0, 8.0))))  # geomean(2, 8) = 4
    put(r, "bob", result(exercise("a", (5.0, 5.0)), exercise("b", (5.0, 6.0))))  # 5
    put(r, "carol", result(exercise("a", (9.0, 9.0), info=H200), exercise("b", (1.0, 1.0), info=H200)))
    put(r, "bob", result(exercise("x", (1.5, 1.5)), day="day02"), "day02.json")
    board = lb.build([r], now=NOW)
    assert not board.rejected and board.accepted == 4
    keys = [(b["day"], b["gpu"]) for b in board.boards]
    assert keys == [("day01", H100["gpu"]), ("day01", H200["gpu"]), ("day02", H100["gpu"])]
    first = board.boards[0]["entries"]
    assert [(e["rank"], e["name"]) for e in first] == [(1, "bob"), (2, "alice")]
    assert first[0]["speedup"] == pytest.approx(5.0) and first[1]["speedup"] == pytest.approx(4.0)
    assert first[0]["roofline"] == pytest.approx(0.8) and first[0]["exercises"] == {"a": 5.0, "b": 5.0}
    out = tmp_path / "out"
    lb.write(board, out)
    md = (out / "leaderboard.md").read_text()
    assert "| 1 | bob | 5.00x | 80% |" in md and "## day01 · NVIDIA H200" in md
    for b in board.boards:
        assert (out / b["plot"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and b["plot"] in md
    assert json.loads((out / "rejected.json").read_text())["rejected"] == []
    assert not list(out.rglob("*.tmp*"))


def _bad(doc_fn):
    doc = result(exercise("a", (2.0, 2.5)), exercise("b", (3.0, 3.0)))
    doc_fn(doc)
    return doc


def _set(path, value):
    def f(doc):
        *head, last = path
        d = doc
        for k in head:
            d = d[k]
        d[last] = value
    return f


def _case_edit(**kv):
    return lambda doc: doc["exercises"][0]["cases"][0].update(kv)


# (what is wrong, the result, its kind, words of the reason)
BAD = [
    ("not JSON", "{not json", "malformed", "not JSON"),
    ("a list", "[1, 2]", "malformed", "not an object"),
    ("no exercises", _bad(_set(["exercises"], [])), "malformed", "no exercises"),
    ("no time of run", _bad(_set(["when"], "yesterday")), "malformed", "no valid `when`"),
    ("no GPU named", _bad(lambda d: d["exercises"][0]["info"].pop("gpu")), "malformed", "which GPU"),
    ("negative time", _bad(_case_edit(time={"median_ms": -1.0})), "malformed", "no positive median time"),
    ("an ordinary check", _bad(_set(["ranked"], False)), "not_ranked", "not a ranked run"),
    ("an exercise of another secret", _bad(_set(["exercises", 1, "seed_sha256"], "cd" * 32)), "not_ranked",
     "b not marked ranked"),
    ("a simulated GPU", _bad(lambda d: [e["info"].update(gpu=e["info"]["gpu"] + ", simulating sm_86 (99 KiB a block, "
                                                          "no Hopper paths)") for e in d["exercises"]]),
     "inconsistent", "ran as a simulated GPU"),
    ("two GPUs in one entry", _bad(_set(["exercises", 1, "info", "gpu"], "NVIDIA A100")), "inconsistent",
     "gpu differs within the entry"),
    ("two drivers", _bad(_set(["exercises", 1, "info", "driver"], "570.1")), "inconsistent",
     "driver differs within the entry: '580.65.06' for a, '570.1' for b"),
    ("two torch builds", _bad(_set(["exercises", 1, "info", "torch"], "2.9.0")), "inconsistent",
     "torch differs within the entry"),
    ("a case speedup its times deny", _bad(_case_edit(speedup=40.0)), "inconsistent",
     "speedup 40x does not follow from its times"),
    ("an exercise speedup its cases deny", _bad(_set(["exercises", 0, "speedup"], 7.0)), "inconsistent",
     "not the geometric mean of its timed cases"),
    ("a rate its bytes deny", _bad(_case_edit(gbps=9000.0)), "inconsistent", "GB/s does not follow"),
    ("a speedup without timed cases", _bad(_set(["exercises", 0, "cases"], [])), "inconsistent",
     "without a timed case"),
    ("from the future", _bad(_set(["when"], "2026-11-21T12:00:00Z")), "inconsistent", "later than now"),
    ("faster than a copy", _bad(_case_edit(copy_ms=3.0, pct_of_copy=3.0)), "impossible",
     "300% of a device copy"),
    ("above any GPU's memory", _bad(_case_edit(bytes=10**12, gbps=10**6, pct_of_copy=None)), "impossible",
     "above any GPU's memory"),
    ("above the tensor-core peak", _bad(_case_edit(flops=5 * 10**12, tflops=5000.0)), "impossible",
     "5,000 TFLOP/s is above the peak"),
    ("a failed exercise", _bad(_set(["exercises", 1, "status"], "fail")), "failed", "b: fail"),
    ("nothing timed", result(exercise("a") | {"speedup": None, "cases": []}), "untimed", "nothing to rank"),
    ("too old", _bad(_set(["when"], "2026-09-01T10:00:00Z")), "stale", "more than 30 day(s) ago"),
]


@pytest.mark.parametrize("what,doc,kind,words", BAD, ids=[b[0] for b in BAD])
def test_each_bad_result_is_rejected_with_its_reason(tmp_path, what, doc, kind, words):
    r = judge(tmp_path, doc)
    assert r is not None, f"{what}: accepted"
    assert (r.kind, words in r.reason) == (kind, True), r.reason


def test_a_good_result_passes_the_same_checks(tmp_path):
    assert judge(tmp_path, _bad(lambda d: None)) is None
    assert judge(tmp_path, _bad(_set(["when"], "2026-09-01T10:00:00Z")), max_age_days=None) is None  # no window


def test_a_result_of_an_old_secret_is_stale(tmp_path):
    r = judge(tmp_path, _bad(lambda d: None), seed_sha256="cd" * 32)
    assert r.kind == "stale" and "ranked with another secret (seed hash abababab…" in r.reason


def test_duplicates_the_same_file_twice_and_older_runs_of_one_participant(tmp_path):
    r = tmp_path / "r"
    doc = result(exercise("a", (2.0, 2.0)))
    put(r, "alice", doc)
    put(r, "alice", doc, "copy.json")
    put(r, "bob", result(exercise("a", (3.0, 3.0)), when="2026-11-18T10:00:00Z"), "old.json")
    put(r, "bob", result(exercise("a", (2.5, 2.5)), when="2026-11-19T10:00:00Z"), "new.json")
    entries, rejected, _ = lb.collect(lb.result_files([r]), now=NOW)
    assert sorted((e.name, e.speedup) for e in entries) == [("alice", 2.0), ("bob", 2.5)]  # the latest counts
    why = {Path(x.source).name: (x.kind, x.reason) for x in rejected}
    assert why["day01.json"][0] == "duplicate" and "the same result as" in why["day01.json"][1]
    assert why["old.json"] == ("duplicate", f"bob has a later ranked result for day01 on {H100['gpu']} "
                                            f"({r / 'bob' / 'new.json'}); the latest counts")


def test_missing_and_compiled_only_results_are_not_entered_and_not_rejected(tmp_path):
    """`grader grade`'s record of a day a submission has no folder for, and a check that only compiled, are results
    of another kind: listed apart in their own words, never as malformed."""
    r = tmp_path / "r"
    put(r, "alice", result(when=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")))
    missing = result()
    missing.pop("when")
    missing.update(ranked=False, grade={"missing": True, "when": "2026-11-20 10:00:00"})
    put(r, "bob", missing)
    compiled = result()
    for ex in compiled["exercises"]:
        ex["status"], ex["info"] = "no_gpu", {}
    put(r, "carol", compiled)
    entries, rejected, apart = lb.collect(lb.result_files([r]), now=datetime.now(timezone.utc))
    assert [e.name for e in entries] == ["alice"] and rejected == []
    assert {(Path(x.source).parent.name, x.kind) for x in apart} == {("bob", "missing"), ("carol", "compiled_only")}
    out = tmp_path / "out"
    p = run_grader("leaderboard", "build", str(r), "--out", str(out))
    assert p.returncode == 0 and "0 rejected, 2 not entered" in " ".join(p.stdout.split()), p.stdout
    md = (out / "leaderboard.md").read_text()
    assert "## Not entered" in md and "| bob/day01.json | missing |" in md and "## Rejected" not in md
    assert json.loads((out / "rejected.json").read_text())["rejected"] == []


def test_the_command_prints_and_lists_each_rejection(tmp_path):
    r = tmp_path / "r"
    put(r, "alice", result(when=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")))
    put(r, "bob", "{broken")
    out = tmp_path / "out"
    p = run_grader("leaderboard", "build", str(r), "--out", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "rejected" in p.stdout and "(malformed): not JSON" in p.stdout and "1 result(s) ranked" in p.stdout
    rej = json.loads((out / "rejected.json").read_text())["rejected"]
    assert [(Path(x["source"]).parent.name, x["kind"]) for x in rej] == [("bob", "malformed")]
    assert "| bob/day01.json | malformed |" in (out / "leaderboard.md").read_text()


@pytest.mark.parametrize("args,text", [
    (["/no/such/folder"], "/no/such/folder does not exist"),
    (["--seed-sha256", "xyz"], "--seed-sha256 takes the 64 hex digits"),
])
def test_bad_arguments_get_a_message_not_a_traceback(tmp_path, args, text):
    (tmp_path / "r").mkdir()
    argv = args if args[0].startswith("/") else [str(tmp_path / "r"), *args]
    p = run_grader("leaderboard", "build", *argv, "--out", str(tmp_path / "out"))
    assert p.returncode == 2 and text in p.stdout and "Traceback" not in p.stdout + p.stderr


def test_an_empty_folder_is_an_error(tmp_path):
    (tmp_path / "r").mkdir()
    p = run_grader("leaderboard", "build", str(tmp_path / "r"), "--out", str(tmp_path / "out"))
    assert p.returncode == 2 and "no result files" in p.stdout


BUILDER = textwrap.dedent("""
    import sys
    from datetime import datetime, timezone
    from grader.classroom import leaderboard as lb
    now = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)
    for _ in range(int(sys.argv[3])):
        lb.write(lb.build([sys.argv[1]], now=now), sys.argv[2])
""")


def test_two_builds_at_once_leave_the_files_of_one_build(tmp_path):
    """Two processes build different inputs into one folder, over and over: at the end every file belongs to the
    same build, and is what that input alone gives."""
    a, b = tmp_path / "a", tmp_path / "b"
    for k in range(6):
        put(a, f"a{k}", result(exercise("a", (1.0 + k, 1.0 + k))))
        put(b, f"b{k}", result(exercise("a", (2.0 + k, 2.0 + k)), day="day02"), "day02.json")
    put(b, "zz", "{broken")
    out = tmp_path / "out"
    root = Path(__file__).resolve().parents[1]
    env = {"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", "MPLBACKEND": "Agg"}
    procs = [subprocess.Popen([sys.executable, "-c", BUILDER, str(src), str(out), "4"], env=env, cwd=tmp_path,
                              stderr=subprocess.PIPE, text=True) for src in (a, b)]
    for p in procs:
        assert p.wait(timeout=300) == 0, p.stderr.read()
    doc = json.loads((out / "leaderboard.json").read_text())
    rej = json.loads((out / "rejected.json").read_text())
    md = (out / "leaderboard.md").read_text()
    assert rej["build"] == doc["build"] and f"<!-- build {doc['build']} -->" in md
    days = {bd["day"] for bd in doc["boards"]}
    assert days in ({"day01"}, {"day02"})
    assert len(rej["rejected"]) == (1 if days == {"day02"} else 0)
    assert sorted(p.name for p in (out / "plots").iterdir()) == [Path(bd["plot"]).name for bd in doc["boards"]]
    assert not [p for p in out.rglob("*") if ".tmp" in p.name]


def test_the_lock_waits_then_says_who_holds_it(tmp_path):
    import fcntl
    import os

    out = tmp_path / "out"
    out.mkdir()
    fd = os.open(out / ".leaderboard.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        from grader.errors import GraderError

        with pytest.raises(GraderError, match="another leaderboard build has held"):
            with lb._Lock(out, wait_s=0.2):
                pass
    finally:
        os.close(fd)
    with lb._Lock(out, wait_s=0.2):
        pass


def test_copies_are_independent():
    # BAD's documents are built once at import: the parametrised cases must not share mutable parts.
    docs = [d for _, d, _, _ in BAD if isinstance(d, dict)]
    assert len({id(e) for d in docs for e in d["exercises"]}) == sum(len(d["exercises"]) for d in docs)
    assert copy.deepcopy(docs) == docs


def test_the_summary_grader_grade_writes_beside_the_results_is_not_taken_for_one(tmp_path):
    r = tmp_path / "r"
    put(r, "alice", result(exercise("a", (2.0, 2.0))))
    (r / "summary.json").write_text('{"alice": {"day01": {"cell": "PASS"}}}')
    files = lb.result_files([r])
    assert [f.relative_to(r).as_posix() for f in files] == ["alice/day01.json"]
    assert lb.result_files([r / "summary.json"]) == [r / "summary.json"]  # named explicitly, it is judged as given


A100 = {**H100, "gpu": "NVIDIA A100-SXM4-80GB", "capability": "8.0", "sms": 108}


def test_an_optional_step_neither_rejects_an_entry_nor_enters_its_ranking(tmp_path):
    """Day 11's Hopper track (course.yaml: optional): on an A100 it is skipped, on an H100 a student may leave it as
    released or do it; every entry ranks on the mandatory steps alone. Which steps are optional is the course's to
    say: a result file that marks a mandatory step optional changes nothing."""
    optional = {"day11": frozenset({"hopper"})}
    skipped = {"exercise": "hopper", "status": "skipped", "message": "an optional step that runs on compute "
               "capability 9.0 only", "info": dict(A100), "cases": [], "ranked": True, "seed_sha256": SHA}
    on_a100 = result(exercise("a", (3.0, 3.0), info=A100), skipped, day="day11")
    assert judge(tmp_path / "1", on_a100, optional=optional) is None
    assert judge(tmp_path / "2", on_a100).kind == lb.FAILED  # without the course's word it is a failure
    done = result(exercise("a", (3.0, 3.0)), exercise("hopper", (9.0, 9.0)), day="day11")
    put(tmp_path / "3" / "r", "bob", done, "day11.json")
    (entry,), rejected, _ = lb.collect(lb.result_files([tmp_path / "3" / "r"]), now=NOW, optional=optional)
    assert not rejected and entry.speedup == pytest.approx(3.0) and entry.exercises == {"a": 3.0}
    forged = result({**exercise("a"), "status": "not_implemented", "optional": True}, exercise("hopper"), day="day11")
    assert judge(tmp_path / "4", forged, optional=optional).kind == lb.FAILED
