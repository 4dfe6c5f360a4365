"""The compile records (tests/compile_records.py): a recorded key is not compiled, an edit to any input is, a
forged record fails the run that samples it, and one compile serves every xdist worker. The units here compile
nothing: their produce writes the depfile a compiler would, so no nvcc is needed."""
from __future__ import annotations

import json
import threading
import time

import pytest

from tests import compile_records as cr
from tests.conftest import fail_without_nvcc, nvcc_mark


@pytest.fixture
def records(tmp_path, monkeypatch):
    """A record file, an update run's output folder and a run's shared state of this test's own; the records'
    per-process caches emptied before and after."""
    import tests.conftest

    caches = (cr.load, cr._by_base, cr._env_digest, cr.sample)
    for c in caches:
        c.cache_clear()
    monkeypatch.setattr(cr, "RECORDS", tmp_path / "records.json")
    monkeypatch.setattr(cr, "identity", lambda compiler: f"{compiler} 1.0 (fake)")
    monkeypatch.setattr(tests.conftest, "SHARED_STATE", tmp_path / "shared")
    monkeypatch.setenv(cr.SEED_ENV, "test")
    monkeypatch.delenv(cr.MODE_ENV, raising=False)
    monkeypatch.delenv(cr.SAMPLE_ENV, raising=False)
    (tmp_path / "out").mkdir()
    yield tmp_path
    for c in caches:
        c.cache_clear()


class Compiler:
    """A unit's produce: "compiles" k.cu, reading h.cuh beside it and sys.h outside the course, and counts its
    runs; its result is the source's first line and the headers' text."""

    def __init__(self, folder):
        self.runs = 0
        self.src = folder / "src" / "k.cu"
        self.src.parent.mkdir(parents=True, exist_ok=True)
        self.src.write_text("__global__ void k() {}\n#include \"h.cuh\"\n#include <sys.h>\n")
        (self.src.parent / "h.cuh").write_text("#define H 1\n")
        self.system = folder / "system" / "sys.h"
        self.system.parent.mkdir(parents=True, exist_ok=True)
        self.system.write_text("#define SYS 1\n")

    def __call__(self, depfile):
        self.runs += 1
        time.sleep(0.2)  # long enough for a second worker to arrive while it runs
        if depfile is not None:
            depfile.write_text(f"k.o : {self.src} \\\n    {self.src.parent / 'h.cuh'} \\\n    {self.system}\n")
        text = "".join(p.read_text() for p in (self.src, self.src.parent / "h.cuh", self.system))
        return {"ok": True, "text": text}, True

    def unit(self):
        return cr.Unit("nvcc", self.src, [], ["-O3"], ("code",), self)


def _update_run(folder, unit):
    """What scripts/compile_records.py --update does for one unit (or a call that compiles through the records, as
    python_kernels): the test run, then the merge."""
    import importlib.util

    from tests.conftest import ROOT

    spec = importlib.util.spec_from_file_location("compile_records_script", ROOT / "scripts" / "compile_records.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(cr.MODE_ENV, "update")
        mp.setenv(cr.OUT_ENV, str(folder / "out"))
        cr.result(unit) if isinstance(unit, cr.Unit) else unit()
    old = cr.load()
    cr.RECORDS.write_text(json.dumps(script.merge(script._lines(folder / "out"), old)))
    for c in (cr.load, cr._by_base, cr._env_digest, cr.sample):
        c.cache_clear()


def test_a_recorded_key_is_not_compiled_and_an_edit_to_any_input_is(records, monkeypatch):
    monkeypatch.setattr(cr, "MIN_SAMPLE", 0)  # nothing sampled: a hit must come from the record alone
    monkeypatch.setattr(cr, "SAMPLE_FRACTION", 0.0)
    compiler = Compiler(records)
    _update_run(records, compiler.unit())
    saved = json.loads(cr.RECORDS.read_text())
    (rec,) = saved["records"].values()
    assert rec["deps"] == ["@src/h.cuh"] and str(compiler.system) in saved["environments"]["nvcc"]["headers"]
    assert compiler.runs == 1

    got, how = cr.result(compiler.unit())
    assert how == "recorded" and compiler.runs == 1 and got == {"ok": True, "text": rec["result"]["text"]}
    for i, edit in enumerate((compiler.src, compiler.src.parent / "h.cuh", compiler.system)):  # source, ours, system
        edit.write_text(edit.read_text() + "// edited\n")
        for c in (cr._env_digest, cr._external_sha):  # a new process: headers outside the course read again
            c.cache_clear()
        runs = compiler.runs
        got, how = cr.result(compiler.unit())
        assert how == "compiled" and compiler.runs == runs + 1 and got["text"].count("// edited") == i + 1, edit
    # Another compiler version is another key.
    compiler.src.write_text(compiler.src.read_text().replace("// edited\n", ""))
    monkeypatch.setattr(cr, "identity", lambda compiler: f"{compiler} 2.0 (fake)")
    assert cr.result(compiler.unit())[1] == "compiled"


class PackageCompiler(Compiler):
    """A compile that also reads a header of an optional package, outside the course (CUTLASS's wheel)."""

    def __init__(self, folder):
        super().__init__(folder / "with-package")
        self.package = folder / "site-packages" / "pkg.h"
        self.package.parent.mkdir(parents=True, exist_ok=True)
        self.package.write_text("#define PKG 1\n")

    def __call__(self, depfile):
        got, keep = super().__call__(depfile)
        if depfile is not None:
            depfile.write_text(depfile.read_text().rstrip("\n") + f" \\\n    {self.package}\n")
        return {**got, "text": got["text"] + self.package.read_text()}, keep

    def unit(self):
        return cr.Unit("nvcc", self.src, [], ["-O3"], ("code",), self, environment="nvcc+pkg")


def test_an_optional_packages_headers_key_only_the_records_that_read_them(records, monkeypatch):
    """A unit's own environment (Unit.environment) holds the package's headers: where the package changes or is
    missing, that unit compiles and every other record still applies."""
    monkeypatch.setattr(cr, "MIN_SAMPLE", 0)
    monkeypatch.setattr(cr, "SAMPLE_FRACTION", 0.0)
    plain, with_package = Compiler(records), PackageCompiler(records)
    _update_run(records, plain.unit())
    _update_run(records, with_package.unit())
    saved = json.loads(cr.RECORDS.read_text())
    assert str(with_package.package) in saved["environments"]["nvcc+pkg"]["headers"]
    assert str(with_package.package) not in saved["environments"]["nvcc"]["headers"]
    assert cr.result(plain.unit())[1] == "recorded" and cr.result(with_package.unit())[1] == "recorded"
    with_package.package.write_text("#define PKG 2\n")  # the package upgraded
    for c in (cr._env_digest, cr._external_sha):
        c.cache_clear()
    assert cr.result(plain.unit())[1] == "recorded"
    got, how = cr.result(with_package.unit())
    assert how == "compiled" and "PKG 2" in got["text"]


def test_a_python_routes_record_is_keyed_by_every_file_of_its_folder(records, monkeypatch):
    """A route that builds its kernels with no GPU (python_kernels, tests/test_cpu_compile.py): Python names no files
    it read, so the record holds every file of the route's folder, and an edit to a neighbour (day 13's Mojo route
    reads its .mojo file) compiles again; so does another version of the extra's packages."""
    from grader.check import compile_check as cc

    monkeypatch.setattr(cr, "MIN_SAMPLE", 0)
    monkeypatch.setattr(cr, "SAMPLE_FRACTION", 0.0)
    route = records / "route" / "r.py"
    route.parent.mkdir()
    route.write_text("def compile_for(dtype, device): ...\n")
    kernel = route.with_name("r.mojo")
    kernel.write_text("fn k(): pass\n")
    runs = []

    def compile_python_kernels(src, function, dtypes, root):  # reads the neighbour, as a route may
        runs.append(src)
        time.sleep(0.05)  # a compile of 0 s would fit in any sample, even the empty one asked for above
        return cc.CompileReport(src.name, True, "python", note=kernel.read_text())

    monkeypatch.setattr(cc, "compile_python_kernels", compile_python_kernels)
    build = lambda: cr.python_kernels(route, "compile_for", ["fp32"], "pkg")  # noqa: E731
    _update_run(records, build)
    saved = json.loads(cr.RECORDS.read_text())
    (rec,) = saved["records"].values()
    assert rec["compiler"] == "python+pkg" and rec["deps"] == ["@src/r.mojo"] and len(runs) == 1
    report, how = build()
    assert how == "recorded" and report.cached and report.note == "fn k(): pass\n" and len(runs) == 1
    kernel.write_text("fn k(): return\n")
    report, how = build()
    assert how == "compiled" and report.note == "fn k(): return\n" and len(runs) == 2
    kernel.write_text("fn k(): pass\n")
    assert build()[1] == "recorded"
    monkeypatch.setattr(cr, "identity", lambda compiler: f"{compiler} 2.0 (fake)")
    assert build()[1] == "compiled" and len(runs) == 3


def test_a_forged_record_fails_the_run_that_samples_it(records, monkeypatch):
    compiler = Compiler(records)
    _update_run(records, compiler.unit())
    saved = json.loads(cr.RECORDS.read_text())
    (k,) = saved["records"]
    assert cr.result(compiler.unit())[1] == "sampled"  # one record: always in the sample (MIN_SAMPLE)
    saved["records"][k]["result"]["ok"] = False  # a failing compile recorded as a pass, or the reverse
    cr.RECORDS.write_text(json.dumps(saved))
    cr.load.cache_clear(), cr._by_base.cache_clear(), cr.sample.cache_clear()
    with pytest.raises(pytest.fail.Exception, match='(?s)not what the compiler gives now.*"ok": false'):
        cr.result(compiler.unit())
    # A record keyed without a header the compile reads (the environment forged to leave it out, the key made to
    # match) is refused too: that header could change and the key would not.
    saved["records"][k]["result"]["ok"] = True
    env = saved["environments"]["nvcc"]
    env["headers"] = [h for h in env["headers"] if h != str(compiler.system)]
    rec = saved["records"].pop(k)
    forged = cr.key(rec["base"], cr.environment_digest(env), cr.dep_shas(rec["deps"], compiler.src))
    saved["records"][forged] = rec
    cr.RECORDS.write_text(json.dumps(saved))
    for c in (cr.load, cr._by_base, cr._env_digest, cr.sample):
        c.cache_clear()
    with pytest.raises(pytest.fail.Exception, match="headers the record's environment does not list"):
        cr.result(compiler.unit())


def test_a_key_the_records_lack_is_compiled_once_for_every_worker(records):
    compiler = Compiler(records)
    got = []
    # Two workers asking at once (the file lock is per open file, so two threads contend as two processes do).
    threads = [threading.Thread(target=lambda: got.append(cr.result(compiler.unit()))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert compiler.runs == 1 and len(got) == 2 and got[0][0] == got[1][0]


def test_the_sample_is_its_share_of_the_records_at_least_min_sample_and_fixed_by_the_seed(records, monkeypatch):
    def sample(n: int, seed: str) -> frozenset:
        cr.RECORDS.write_text(json.dumps({"format": cr.FORMAT, "environments": {},
                                          "records": {f"{i:04x}": {"base": "b"} for i in range(n)}}))
        monkeypatch.setenv(cr.SEED_ENV, seed)
        cr.load.cache_clear(), cr.sample.cache_clear()
        return cr.sample()

    monkeypatch.setattr(cr, "SAMPLE_FRACTION", 0.1)
    assert cr.MIN_SAMPLE == 1  # the two small counts below are that minimum
    assert [len(sample(n, "a")) for n in (200, 50, 10, 2)] == [20, 5, 1, 1]
    assert sample(200, "a") == sample(200, "a") != sample(200, "b")
    monkeypatch.setenv(cr.SAMPLE_ENV, "1")  # scripts/compile_records.py --verify
    assert len(sample(200, "a")) == 200


def test_a_sample_drawn_by_seconds_never_costs_more_than_its_share_of_the_compile_time(records, monkeypatch):
    """Records with their compile seconds: the sample takes keys in the seed's order while they fit in its share of
    the seconds, so on every seed it costs that share within one fast key, and a slow key is taken only where it
    fits or comes first; drawn by number, a seed that draws the slow keys costs more."""
    monkeypatch.setattr(cr, "SAMPLE_FRACTION", 0.1)
    secs = {f"{i:04x}": (40.0 if i % 10 == 0 else 2.0) for i in range(200)}  # 20 slow keys, 180 fast: 1160 s
    cr.RECORDS.write_text(json.dumps({"format": cr.FORMAT, "environments": {},
                                      "records": {k: {"base": "b", "seconds": v} for k, v in secs.items()}}))
    budget, costs, samples, slow_taken = 116.0, [], set(), 0
    for seed in map(str, range(40)):
        monkeypatch.setenv(cr.SEED_ENV, seed)
        cr.load.cache_clear(), cr.sample.cache_clear()
        chosen = cr.sample()
        cost = sum(secs[k] for k in chosen)
        costs.append(cost)
        samples.add(chosen)
        assert budget - 2.0 < cost <= budget and len(chosen) >= cr.MIN_SAMPLE
        slow_taken += any(secs[k] == 40.0 for k in chosen)
    cr.sample.cache_clear()
    assert cr.sample() == chosen and len(samples) == 40  # a seed fixes it; seeds differ
    assert slow_taken > 0  # the slow keys are sampled too, where they fit
    # first keys that alone pass the share are all taken, and nothing after them
    heavy = {f"{i:04x}": 100.0 for i in range(3)} | {f"{i:04x}": 1.0 for i in range(3, 200)}
    cr.RECORDS.write_text(json.dumps({"format": cr.FORMAT, "environments": {},
                                      "records": {k: {"base": "b", "seconds": v} for k, v in heavy.items()}}))
    for seed in map(str, range(200)):
        monkeypatch.setenv(cr.SEED_ENV, seed)
        cr.load.cache_clear(), cr.sample.cache_clear()
        order = sorted(heavy, key=lambda k: cr._hash(seed, k))
        if sum(heavy[k] for k in order[:cr.MIN_SAMPLE]) > 0.1 * sum(heavy.values()):
            assert cr.sample() == frozenset(order[:cr.MIN_SAMPLE])
            break
    else:
        pytest.fail("no seed put the heavy keys first")
    by_number = []
    for seed in map(str, range(40)):  # the same keys without their seconds: the old rule, a tenth by number
        cr.RECORDS.write_text(json.dumps({"format": cr.FORMAT, "environments": {},
                                          "records": {k: {"base": "b"} for k in secs}}))
        monkeypatch.setenv(cr.SEED_ENV, seed)
        cr.load.cache_clear(), cr.sample.cache_clear()
        by_number.append(sum(secs[k] for k in cr.sample()))
    assert max(by_number) - min(by_number) > max(costs) - min(costs)


def test_without_nvcc_the_compile_tests_skip_but_fail_under_ci():
    assert nvcc_mark(missing=True, in_ci=False).name == "skipif"
    failing = nvcc_mark(missing=True, in_ci=True)
    assert failing.name == "usefixtures" and failing.args == ("_nvcc_required_in_ci",)
    assert nvcc_mark(missing=False, in_ci=True).name == "skipif" and nvcc_mark(False, True).args == (False,)
    with pytest.raises(pytest.fail.Exception, match="CI=true: the compile tests must run in CI"):
        fail_without_nvcc()


def test_the_workers_of_a_run_share_one_compile_cache():
    """compile_check's cache of the course's files (what `grader check` and the other CPU tests compile) is the
    run's shared one, not one per xdist worker."""
    from grader.paths import Paths
    from tests.conftest import ROOT, SHARED_STATE, STATE

    assert SHARED_STATE != STATE
    mine = Paths(ROOT).cache() / "compile"
    assert mine.resolve() == (Paths(ROOT, state_base=SHARED_STATE).cache() / "compile").resolve()
    assert str(mine).startswith(str(STATE))  # the worker's own state, linked


def test_the_code_in_a_key_is_what_makes_the_report():
    """The code part of a compile record's key follows compile_cuda and compile_host into what they call (ptxas's
    parser, the build's flags, imports inside a function included), and leaves out the rest of the module, so that
    an edit to another command keeps the records."""
    from grader.check import compile_check as cc

    names = {c.split(":\n")[0].split(" = ")[0] for c in cr.code_closure(cc.compile_cuda, cc.compile_host)}
    assert {"grader.check.compile_check.parse_ptxas", "grader.check.compile_check.ARCHS",
            "grader.check.compile_check.BASE_CUDA_FLAGS", "grader.check.build.parse_diagnostics",
            "grader.check.compile_check._SERIALIZED"} <= names
    assert not {"grader.check.compile_check.compile_sources", "grader.check.compile_check.cache_key"} & names

    def uses_a_local_import():
        from grader.check.build import HEADER_SUFFIXES

        return HEADER_SUFFIXES

    assert any(c.startswith("grader.check.build.HEADER_SUFFIXES = tuple(") for c in cr.code_closure(uses_a_local_import))
    # Sets in a stable order, and no constant that names a path of this checkout.
    assert cr._constant({"b", "a"}) == cr._constant({"a", "b"}) == "set('a', 'b')"
    assert cr._constant(("x", cr.ROOT)) is None


def test_a_record_file_that_is_not_json_fails_instead_of_compiling_everything(records):
    cr.RECORDS.write_text('{"format": 1,\n<<<<<<< HEAD\n')
    with pytest.raises(pytest.fail.Exception, match="is not JSON.*compile_records.py --update"):
        cr.load()
    cr.RECORDS.unlink()
    assert cr.load()["records"] == {}  # no file yet: every key is compiled
