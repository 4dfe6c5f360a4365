import atexit
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The grader's state (builds, logs, results, caches) goes to a temporary folder of this test process, never into
# the checkout's .grader/ (a student's own results and builds). Set at import, so the grader run in-process and
# every `grader` subprocess (run_grader) both see it; each xdist worker gets its own.
STATE = Path(tempfile.mkdtemp(prefix=f"grader-test-state-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-"))
os.environ["GRADER_STATE"] = str(STATE)
atexit.register(shutil.rmtree, STATE, ignore_errors=True)
# No warm worker outlives a test's check (grader/check/resident.py): each test's verdict comes from processes of its
# own, and none is left running after the suite. tests/test_resident.py turns it on where it is the subject.
os.environ["GRADER_RESIDENT"] = "0"
# torch's CPU threads: each xdist worker gets its share of the cores. By default every worker starts one thread a
# core, and on CI's 2 cores two workers (and their nvcc) then contend: a fp64 reference test ran 2.5x slower
# beside one nvcc loop than with one thread (NOTES.md). Set before anything imports torch; subprocesses inherit it.
if "PYTEST_XDIST_WORKER" in os.environ:  # not in xdist's controller, whose environment the workers inherit
    _workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // _workers)))

# The GPU tests share one state across the run's xdist workers instead: their builds are the expensive part, and
# builds are keyed by content, so the solution a known-wrong kernel was copied from, the bindings it did not edit
# and the baselines of timed checks are compiled once for the whole suite, not once per worker. Made by the main
# process (xdist's controller, which starts the workers after loading this file, so they inherit it).
# A caller may name the folder itself (scripts/device_run.sh does, so that the suite's second phase, the
# gpu_alone tests, finds the builds of the first); it then owns it, and it is not removed here.
SHARED_ENV = "GRADER_TEST_SHARED_STATE"
if "PYTEST_XDIST_WORKER" not in os.environ and not os.environ.get(SHARED_ENV):
    _shared = Path(tempfile.mkdtemp(prefix="grader-test-shared-state-"))
    os.environ[SHARED_ENV] = str(_shared)
    atexit.register(shutil.rmtree, _shared, ignore_errors=True)
SHARED_STATE = Path(os.environ.get(SHARED_ENV) or STATE)


def _share_compile_cache() -> None:
    """The compile-only reports of the course's own files (compile_check's cache, keyed by content) in one folder
    for every xdist worker of the run, the GPU tests' shared state's: a file one worker compiled is not compiled
    again by the other. Each worker's own state links its compile cache there; the reports are written whole and
    renamed, so two workers never see half of one."""
    from grader.paths import Paths

    if SHARED_STATE == STATE:
        return
    shared, mine = (Paths(ROOT, state_base=SHARED_STATE).cache() / "compile", Paths(ROOT).cache() / "compile")
    shared.mkdir(parents=True, exist_ok=True)
    mine.parent.mkdir(parents=True, exist_ok=True)
    if not mine.exists():
        mine.symlink_to(shared, target_is_directory=True)


_share_compile_cache()


def _log_test_time(report):
    """$GRADER_TEST_TIMES names a file that gets one JSON line per test phase (id, phase, outcome, seconds and the
    test's recorded properties, e.g. its build seconds): scripts/gpu_suite.py makes the suite's record from it, and
    a suite cut off by its time limit still leaves the lines of every test that finished."""
    path = os.environ.get("GRADER_TEST_TIMES")
    if not path or hasattr(report, "node"):  # xdist's controller sees each worker's reports again (report.node)
        return
    line = {"id": report.nodeid, "when": report.when, "outcome": report.outcome, "seconds": round(report.duration, 2),
            "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"), "props": dict(report.user_properties)}
    if report.failed:  # a suite cut off by its limit prints no failures: keep each one's end here
        line["message"] = report.longreprtext[-3000:]
    with open(path, "a") as f:  # one short write per line: lines from several xdist workers never interleave
        f.write(json.dumps(line) + "\n")


# The CPU tests' order and the number of xdist workers `-n auto` starts, from the seconds of a recorded run
# (tests/data/test-seconds.json: every test that took SLOW_TEST_S or more, written by a run with
# $GRADER_TEST_SECONDS=update). A stale record costs balance only, never a test.
TEST_SECONDS = ROOT / "tests" / "data" / "test-seconds.json"
SLOW_TEST_S = 2.0
_seen_seconds: dict = {}


def _test_seconds() -> dict:
    try:
        return json.loads(TEST_SECONDS.read_text()).get("seconds") or {}
    except (OSError, ValueError):
        return {}


@pytest.hookimpl(optionalhook=True)  # a run without xdist (-p no:xdist) knows no such hook
def pytest_xdist_auto_num_workers(config):
    """`-n auto`: a worker more than the cores. Much of a CPU test's time is a wait (a Slurm job scheduled and
    polled, a job run to its time limit, a browser, a subprocess importing torch): on the 2-core machine the run's
    processes used 557 CPU-seconds of a 491 s run with two workers (57% of both cores), so a third worker runs
    while the others wait. $PYTEST_XDIST_AUTO_NUM_WORKERS still decides where set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS") or config.option.numprocesses == "logical":
        return None  # xdist's own hook answers
    return (os.cpu_count() or 1) + 1


def _slow_modules_first(items) -> None:
    """The CPU tests' modules in the order of their slowest recorded test, slowest first (a module not recorded
    keeps its place after them), each module's tests together and in their own order: xdist hands out the first
    quarter of the list round-robin, so no long test starts last and holds the run's end, and no module-scoped
    fixture (a clone of the course) is set up twice on one worker."""
    seconds = _test_seconds()
    slowest: dict = {}
    for nodeid, s in seconds.items():
        module = nodeid.split("::")[0]
        slowest[module] = max(slowest.get(module, 0.0), s)
    items.sort(key=lambda it: -slowest.get(it.nodeid.split("::")[0], 0.0))


def pytest_runtest_logreport(report):
    _log_test_time(report)
    if os.environ.get("GRADER_TEST_SECONDS") == "update" and report.passed and report.when in ("setup", "call"):
        # xdist's controller sees every worker's reports (report.node); without xdist, this process its own
        if hasattr(report, "node") or "PYTEST_XDIST_WORKER" not in os.environ:
            _seen_seconds[report.nodeid] = _seen_seconds.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session, exitstatus):
    """$GRADER_TEST_SECONDS=update: the record rewritten from this run (a whole run of the CPU suite: the tests
    not run here drop out of it)."""
    if os.environ.get("GRADER_TEST_SECONDS") != "update" or "PYTEST_XDIST_WORKER" in os.environ:
        return
    slow = {n: round(s, 1) for n, s in sorted(_seen_seconds.items()) if s >= SLOW_TEST_S}
    about = f"seconds of each CPU test that took {SLOW_TEST_S:g} s or more, setup included (tests/conftest.py)"
    TEST_SECONDS.write_text(json.dumps({"about": about, "seconds": slow}, indent=1) + "\n")


def _slowest_first(items) -> None:
    """GPU tests in the suite's order for this run's xdist workers (tests/gpu_schedule.py: the slowest first, each
    of the first hand-out paired with a fast one, so that no long test starts last or waits behind another), from
    their seconds in the last recorded suite (measured/gpu-suite.json); a test not recorded is estimated from its
    day's. Every xdist worker computes the same list, as xdist requires."""
    from tests.gpu_schedule import order

    gpu = {it.nodeid: it for it in items if "gpu" in it.keywords}
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    ordered = [gpu[t] for t in order(list(gpu), _recorded_seconds(), workers)]
    items[:] = ordered + [it for it in items if it.nodeid not in gpu]


def _recorded_seconds() -> dict:
    try:
        return json.loads((ROOT / "measured" / "gpu-suite.json").read_text()).get("seconds") or {}
    except (OSError, ValueError):
        return {}


def shard_of(items, shards: int, seconds: dict, alone=(), alone_weight: float = 1.0) -> dict:
    """Each GPU test's shard (0 .. shards-1), balanced by the seconds of the last recorded suite: the slowest first,
    each to the shard with the least so far (a test not recorded is estimated from its day's: gpu_schedule.estimate).
    The same for every process that computes it (ties go to the lower shard; the order is by seconds, then name).
    alone: the tests among items that run one at a time after the shard's parallel ones (gpu_alone). They are placed
    first, so that they spread over the shards, and each counts alone_weight times its seconds (the workers a shard
    runs in parallel: a second alone holds the whole shard)."""
    from tests.gpu_schedule import estimate

    load = [0.0] * shards
    out = {}
    alone = set(alone)
    for group, weight in ((alone, alone_weight), ([n for n in items if n not in alone], 1.0)):
        for nodeid in sorted(group, key=lambda n: (-estimate(n, seconds), n)):
            k = min(range(shards), key=lambda i: (load[i], i))
            out[nodeid] = k
            load[k] += weight * estimate(nodeid, seconds)
    return out


def shard_keeps(marks: dict, spec: str, workers: float = 1.0) -> set:
    """The GPU tests a shard keeps, from {nodeid: [marks]} of the GPU tests: "i/n" shard i of those that need one GPU
    (shard_of, balanced by the recorded seconds); "multi" those that need several (multi_gpu)."""
    if spec == "multi":
        return {t for t, m in marks.items() if "multi_gpu" in m}
    i, _, n = spec.partition("/")
    single = [t for t, m in marks.items() if "multi_gpu" not in m]
    alone = [t for t in single if "gpu_alone" in marks[t]]
    shards = shard_of(single, int(n), _recorded_seconds(), alone, workers)
    return {t for t, k in shards.items() if k == int(i)}


def _sharded(config, items) -> None:
    """$GRADER_TEST_SHARD (scripts/device_run.sh SHARDS=n on a machine of several GPUs, one pytest run a GPU): "i/n"
    keeps shard i of the GPU tests that need one GPU; "multi" keeps those that need several (multi_gpu), run where
    every GPU is visible. Tests without the gpu mark are left alone."""
    spec = os.environ.get("GRADER_TEST_SHARD")
    if not spec:
        return
    from tests.collect_marks import MARKS

    gpu = [it for it in items if "gpu" in it.keywords]
    marks = {it.nodeid: [m for m in MARKS if m in it.keywords] for it in gpu}
    workers = float(os.environ.get("GRADER_TEST_SHARD_WORKERS") or 1)  # device_run.sh: each shard's -n
    keep = shard_keeps(marks, spec, workers)
    dropped = [it for it in gpu if it.nodeid not in keep]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [it for it in items if it not in dropped]


def has_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


_WHOLE_RUN_MARKS: dict[str, list[str]] | None = None  # the GPU tests' marks, where this run collected every test


def _whole_collection(config) -> bool:
    """Whether this run collected every test of tests/ (the README's command, each xdist worker of it): no path or
    node given but the folder, nothing ignored. -k, -m and --deselect act after this hook (tryfirst)."""
    return ([Path(a).resolve() for a in config.args] in ([ROOT / "tests"], [ROOT])
            and not config.getoption("ignore") and not config.getoption("ignore_glob"))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    global _WHOLE_RUN_MARKS
    if _whole_collection(config):
        from tests.collect_marks import MARKS

        _WHOLE_RUN_MARKS = {it.nodeid: [m for m in MARKS if m in it.keywords] for it in items if "gpu" in it.keywords}
    _sharded(config, items)
    if has_gpu():
        _slowest_first(items)
        return
    _slow_modules_first(items)
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def course():
    from grader.course import load_course

    return load_course(ROOT / "course.yaml")


def lesson_table():
    """scripts/lessons/lesson_table.py as a module (it is a script, not a package): builds of a solution with its
    knobs (solution_with_defines, build_module) for tests that build outside `grader check`."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("lesson_table", ROOT / "scripts" / "lessons" / "lesson_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def gpu_marks() -> dict[str, list[str]]:
    """The GPU tests and their marks. A run that collected every test (the README's command) has them from its own
    collection. Otherwise one collection for the whole run (tests/collect_marks.py): the first xdist worker that asks
    collects (15-20 s on CI's busy cores) and leaves the answer in the run's shared state, keyed by course.yaml and
    the test files as they are, for the others."""
    if _WHOLE_RUN_MARKS is not None:
        return _WHOLE_RUN_MARKS
    import fcntl
    import hashlib

    from tests.collect_marks import gpu_marks as collect

    files = [ROOT / "course.yaml",  # the GPU tests' parameters come from it and from tests/
             *sorted(p for p in (ROOT / "tests").rglob("*") if p.suffix in (".py", ".yaml") and p.is_file())]
    key = hashlib.sha256("".join(f"{p}:{p.stat().st_mtime_ns}:{p.stat().st_size};" for p in files).encode())
    SHARED_STATE.mkdir(parents=True, exist_ok=True)
    saved = SHARED_STATE / f"gpu-marks-{key.hexdigest()[:16]}.json"
    with open(SHARED_STATE / "gpu-marks.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other workers wait for the one collection instead of making their own
        if saved.exists():
            return json.loads(saved.read_text())
        marks = collect(ROOT)
        saved.write_text(json.dumps(marks))
        return marks


def load_script(path: Path):
    """A script of scripts/ as a module (they are files, not a package), imported once per process under its file
    name: a test reaches its functions without running its command line."""
    import importlib.util

    path = Path(path)
    if path.stem in sys.modules and getattr(sys.modules[path.stem], "__file__", None) == str(path):
        return sys.modules[path.stem]
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod
    spec.loader.exec_module(mod)
    return mod


def socket_dir(tmp_path):
    """A short private folder for the sockets (a Unix socket's path holds at most 107 bytes; pytest's tmp_path under
    xdist comes near that), linked from tmp_path so that the test finds its workers by it."""
    run = Path(tempfile.mkdtemp(prefix="gr-", dir="/tmp"))
    os.chmod(run, 0o700)
    (tmp_path / "run").symlink_to(run)
    return run


def run_grader(*args, cwd=ROOT, timeout=900, state: Path | None = None, env: dict | None = None):
    """The grader as a user runs it: a separate process, output captured. state: its $GRADER_STATE, where not
    this worker's own (SHARED_STATE); env: variables set on top of this process's."""
    env = None if state is None and not env else {**os.environ, **(env or {}),
                                                  **({"GRADER_STATE": str(state)} if state else {})}
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


def needs_modules(*names: str):
    """Skip unless these test extras (pip install -e ".[test]"; the device image lacks them) are installed. Found,
    not imported: nbgrader's import is 2-3 s of CPU and jsonschema's 1.3 s (its format grammars), which every xdist
    worker's collection would pay for a test that only asks whether they are there. The test imports them itself."""
    missing = [n for n in names if importlib.util.find_spec(n) is None]
    return pytest.mark.skipif(bool(missing), reason=f"{', '.join(missing)}: a test extra, pip install -e '.[test]'")


needs_nbgrader = needs_modules("nbgrader")


def nvcc_mark(missing: bool, in_ci: bool):
    """Without nvcc the compile tests skip on a developer's machine; under CI=true they fail instead, so that CI
    cannot stay green while every compile check quietly vanished (a runner that lost its toolkit)."""
    return (pytest.mark.usefixtures("_nvcc_required_in_ci") if missing and in_ci
            else pytest.mark.skipif(missing, reason="nvcc not installed"))


def fail_without_nvcc():
    pytest.fail("nvcc not found (neither on PATH nor /usr/local/cuda/bin/nvcc), and CI=true: the compile tests must "
                "run in CI. Install the CUDA toolkit on the runner, or put its bin/ on PATH.", pytrace=False)


@pytest.fixture
def _nvcc_required_in_ci():
    fail_without_nvcc()


needs_nvcc = nvcc_mark(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
                       os.environ.get("CI") == "true")


@pytest.fixture(scope="session")
def planned_course(tmp_path_factory) -> Path:
    """The course with one extra day that is planned, not ready (every real day is ready): for the messages a
    planned day gets. Written beside a link to the repository's folders, so paths resolve as in the checkout."""
    root = tmp_path_factory.mktemp("planned-course")
    for name in ("days", "solutions", "tasks", "common"):
        (root / name).symlink_to(ROOT / name)
    text = (ROOT / "course.yaml").read_text()
    (root / "course.yaml").write_text(text.rstrip("\n") + "\n  - id: day21\n    title: A planned day\n"
                                      "    track: attention\n    status: planned\n")
    return root / "course.yaml"


@pytest.fixture(autouse=True)
def _one_day(monkeypatch):
    """Every test sees one date for the whole run, the one tests/release_course.py built its course around: a run
    that crosses midnight would otherwise compare a day's dates with tomorrow while expecting today."""
    from grader import clock
    from tests import release_course

    monkeypatch.setattr(clock, "today", lambda: release_course.TODAY)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """One single-node Slurm for every Slurm test of the session (tests/slurm_cluster.py): its slurm.conf's path.
    Started by the first test that asks for it, stopped by PID at the session's end."""
    from tests.slurm_cluster import single_node_slurm

    yield from single_node_slurm(tmp_path_factory.mktemp("slurm"))
