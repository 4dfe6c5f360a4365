"""A student repository names only what a student has: every path, command and image that a released lesson, track
page, syllabus or README names is in the release, and the course website builds from it with --strict.

The release is the course as committed, at the end of its semester (every day out, every solution published), so
that each lesson is checked against the repository a class holds on its last day. One exception, the published
solutions: a lesson may name `solutions/dayNN/...` where the same paragraph (or code-block line) says that it is
published; that file is then checked against the instructor's solutions/, which `grader publish dayNN` copies. A
script named in capitals in a command (`python3 CALL_ONCE.py`) is a placeholder for one the student writes, as `dayNN` is for a
day."""
from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
import sys
from datetime import date
from pathlib import PurePosixPath

import pytest

from grader.authoring import student_repo
from grader.course import load_course
from tests.conftest import ROOT, run_grader

END_OF_SEMESTER = date(2027, 12, 31)  # later than every day's release and due date in course.yaml
TOP = ("days", "common", "tasks", "scripts", "solutions", "measured", "tests", "tracks")
LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
IMG_TAG = re.compile(r"<img\b[^>]*\bsrc=\"([^\"]+)\"")
COMMAND = re.compile(r"\b(?:python3?|bash|sh)\s+((?:\.\./|\./)?[\w./*-]+\.(?:py|sh))\b")
BARE = re.compile(r"(?<![\w./@:-])((?:\.\./)*(?:" + "|".join(TOP) + r")/[\w./*-]*)")
SOLUTION = re.compile(r"^solutions/(day\d\d)(?:/|$)")
LATER_DAY = re.compile(r"^days/(day\d\d)(?:/|$)")
PLACEHOLDER = re.compile(r"[A-Z][A-Z0-9_]*")


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """The course as committed (HEAD), released at the end of its semester; the clone is kept for the solutions."""
    pytest.importorskip("nbgrader")  # day 8's notebook is released by nbgrader
    clone = tmp_path_factory.mktemp("course") / "course"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(clone)], check=True, capture_output=True)
    course = load_course(clone / "course.yaml")
    everything = {d.id for d in course.days if d.status == "ready"}
    tree = student_repo.build(clone, clone / "course.yaml", course, END_OF_SEMESTER, published=everything)
    dest = tmp_path_factory.mktemp("student") / "student"
    student_repo.write(tree, dest, clone, course, {"hidden.yaml"})
    return clone, dest, tree


def paragraphs(text: str):
    """(first line number, text) of each paragraph: prose between blank lines, and each line of a code block on its
    own (a command's comment speaks for its line only)."""
    block, start, fence = [], 0, False
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            if block:
                yield start, "\n".join(block)
            block, fence = [], not fence
            continue
        if fence:
            yield n, line
        elif line.strip():
            if not block:
                start = n
            block.append(line)
        elif block:
            yield start, "\n".join(block)
            block = []
    if block:
        yield start, "\n".join(block)


def named_paths(rel: str, text: str):
    """(line, as written, path relative to the repository) of every path the markdown file rel names."""
    here = PurePosixPath(rel).parent
    for start, para in paragraphs(text):
        for m in LINK.finditer(para):
            target = m.group(1).split("#")[0]
            if target and not re.match(r"^[a-z][a-z0-9+.-]*:", target):  # not a URL
                yield start, para, m.group(1), _normal(here / target)
        for m in IMG_TAG.finditer(para):
            if not re.match(r"^[a-z][a-z0-9+.-]*:", m.group(1)):
                yield start, para, m.group(1), _normal(here / m.group(1))
        rest = LINK.sub("", para)
        for m in COMMAND.finditer(rest):  # commands run from the repository's root
            if PLACEHOLDER.fullmatch(m.group(1).rsplit(".", 1)[0]):
                continue  # a script of the student's own, named in capitals (`python3 CALL_ONCE.py`)
            yield start, para, m.group(0), _normal(PurePosixPath(m.group(1)))
        for m in BARE.finditer(COMMAND.sub("", rest)):
            path = m.group(1).rstrip(".")
            yield start, para, path, _normal((here if path.startswith("..") else PurePosixPath()) / path)


def _normal(p: PurePosixPath) -> str:
    parts: list[str] = []
    for part in p.parts:
        if part == "..":
            if parts:
                parts.pop()
            else:
                parts.append(part)
        elif part != ".":
            parts.append(part)
    return "/".join(parts)


def exists(path: str, files: set[str]) -> bool:
    """A file, or a folder holding one, or a glob matching one."""
    path = path.rstrip("/")
    if any(c in path for c in "*?["):
        return any(fnmatch.fnmatch(f, path) or fnmatch.fnmatch(f, path + "/*") for f in files)
    return path in files or any(f.startswith(path + "/") for f in files)


def broken_references(clone, dest, released_days) -> list[str]:
    files = {p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file() and ".git" not in p.parts}
    solutions = {p.relative_to(clone).as_posix() for p in (clone / "solutions").rglob("*") if p.is_file()}
    pages = sorted(f for f in files if f.endswith(".md"))
    assert {"README.md", "syllabus.md", "tracks/matmul.md"} <= set(pages)
    assert {f"days/{d}/README.md" for d in released_days} <= set(pages)
    bad = []
    for rel in pages:
        text = (dest / rel).read_text(encoding="utf-8")
        for line, para, written, path in named_paths(rel, text):
            shown = [path.replace("dayNN", d) for d in released_days] if "dayNN" in path else [path]
            for p in shown:
                sol = SOLUTION.match(p)
                if sol:
                    # A published solution: the text must say so, and the day must have one to publish.
                    if "published" not in para:
                        bad.append(f"{rel}:{line}: {written!r} is a solution: say it is there once "
                                   f"{sol.group(1)} is published")
                    elif not exists(p, solutions):
                        bad.append(f"{rel}:{line}: {written!r}: no such solution file to publish")
                elif (later := LATER_DAY.match(p)) and later.group(1) not in released_days:
                    # A day not out yet: the release says when it comes (grader/authoring/later_days.py)
                    if f"{later.group(1)} is not released yet" not in para:
                        bad.append(f"{rel}:{line}: {written!r} belongs to {later.group(1)}, not released yet, and "
                                   "the text does not say so")
                elif not exists(p, files):
                    bad.append(f"{rel}:{line}: {written!r} is not in the student repository")
    return bad


def test_every_path_a_released_page_names_is_in_the_release(release):
    clone, dest, tree = release
    assert len(tree.days) == len([d for d in load_course(clone / "course.yaml").days if d.status == "ready"])
    bad = broken_references(clone, dest, tree.days)
    assert bad == [], f"{len(bad)} broken reference(s):\n" + "\n".join(bad)


INSTRUCTOR_ONLY = re.compile(r"(?<![\w./@:-])((?:measured|scripts|tests)/[\w./*-]*\w)")
SOURCES = (".cu", ".cuh", ".h", ".cpp", ".py", ".mojo")


def unmarked_instructor_paths(dest) -> list[str]:
    """Paths to the instructors' measured/, scripts/ or tests/ in the released sources, not marked as theirs: a
    student reading `(measured/NOTES.md)` in a stub looks for a file that is not in the repository."""
    bad = []
    for f in sorted(p for p in dest.rglob("*") if p.suffix in SOURCES and ".git" not in p.parts):
        rel = f.relative_to(dest).as_posix()
        if rel.startswith("grader/"):
            continue  # the grader's own code, not course material
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            for m in INSTRUCTOR_ONLY.finditer(line):
                before = line[:m.start()]
                if not (before.rstrip().endswith("instructors'") or (dest / m.group(1)).exists()):
                    bad.append(f"{rel}:{n}: {m.group(1)}")
    return bad


def test_released_sources_mark_the_instructors_files_as_theirs(release):
    _, dest, _ = release
    bad = unmarked_instructor_paths(dest)
    assert bad == [], "name these as the instructors' (the release has no measured/, scripts/ or tests/):\n" + \
        "\n".join(bad)


def test_the_instructors_path_check_catches_an_unmarked_one(tmp_path):
    (tmp_path / "days" / "day01").mkdir(parents=True)
    (tmp_path / "days" / "day01" / "k.cu").write_text("// as measured (measured/NOTES.md)\n"
                                                      "// see the instructors' scripts/x.py\n")
    assert unmarked_instructor_paths(tmp_path) == ["days/day01/k.cu:1: measured/NOTES.md"]


def test_the_reference_check_catches_what_a_student_lacks(tmp_path):
    """The check itself: each kind of reference to something not in the release is found, and the allowed ones
    pass."""
    dest, clone = tmp_path / "s", tmp_path / "c"
    for root, rel in ((dest, "days/day01/README.md"), (dest, "days/day01/k.cu"), (dest, "tracks/fig.png"),
                      (clone, "solutions/day01/k.cu")):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")
    for rel, up in (("README.md", ""), ("syllabus.md", ""), ("tracks/matmul.md", "../")):
        (dest / rel).write_text(f"[day 1]({up}days/day01/README.md), `days/dayNN/k.cu`\n")
    (dest / "days/day01/README.md").write_text(
        "Good: [here](k.cu), ![fig](../../tracks/fig.png), `days/day01/k.cu`.\n\n"
        "After day01 is published, solutions/day01/k.cu is yours.\n\n"
        "Bad: ![fig](../../measured/fig.png), see measured/NOTES.md.\n\n"
        "```bash\npython3 scripts/sweep.py\nbash scripts/run.sh\ngrader check day01  # solutions/day01/k.cu\n"
        "python3 MY_SCRIPT.py  # yours\n```\n\n"
        "Also solutions/day01/k.cu unannounced.\n\nOnce published: solutions/day01/none.cu.\n")
    bad = broken_references(clone, dest, ["day01"])
    assert [b.split(": ", 1)[1] for b in bad] == [
        "'../../measured/fig.png' is not in the student repository",
        "'measured/NOTES.md' is not in the student repository",
        "'python3 scripts/sweep.py' is not in the student repository",
        "'bash scripts/run.sh' is not in the student repository",
        "'solutions/day01/k.cu' is a solution: say it is there once day01 is published",
        "'solutions/day01/k.cu' is a solution: say it is there once day01 is published",
        "'solutions/day01/none.cu': no such solution file to publish"], bad


def test_the_site_builds_strictly_in_the_student_repository(release, tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    _, dest, _ = release
    r = run_grader("--course", str(dest / "course.yaml"), "site", "build", "--strict", "--out",
                   str(tmp_path / "site"), cwd=dest)
    assert r.returncode == 0, r.stdout + r.stderr


def test_day01s_by_hand_build_runs_as_written(tmp_path):
    """Day 01's step 3, copied from the lesson and run from a repository's root (the day's stub and common/): on a
    GPU it builds and imports the module; without one it must still get past its own set-up (the build folder it
    names), to where the machine stops it (no CUDA runtime to link), not fail on the snippet itself."""
    from tests.conftest import has_gpu

    lesson = (ROOT / "days" / "day01" / "README.md").read_text()
    step = lesson[lesson.index("**Step 3"):]
    snippet = re.search(r"```python\n(.*?)```", step, re.S).group(1)
    for folder in ("days/day01", "common"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    r = subprocess.run([sys.executable, "-c", snippet], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    if has_gpu():
        assert r.returncode == 0, r.stderr[-3000:]
    else:
        last = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
        assert "FileNotFoundError" not in r.stderr and "build/day01" not in last, r.stderr[-3000:]


@pytest.mark.parametrize("page, tensor_cores", [("days/day15/tolerance_model.md", False),
                                                ("days/day20/tolerance_model.md", True)])
def test_a_page_standing_in_for_an_instructors_script_is_what_it_writes(page, tensor_cores):
    """days/day15/tolerance_model.md (and day 20's) show solutions/day15/tolerance_model.py's results to students who
    do not have it yet: each page is exactly what the script's --markdown writes from the numbers it holds."""
    import argparse
    import importlib.util

    spec = importlib.util.spec_from_file_location("day15_tolerance_model", ROOT / "solutions/day15/tolerance_model.py")
    model = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(model)
    text = (ROOT / page).read_text(encoding="utf-8")
    seeds = int(re.search(r"--seeds (\d+)", text).group(1))
    found: dict = {}
    for section in re.split(r"(?m)^## ", text)[1:]:
        worst = found.setdefault(section.split()[0], {})
        for row in re.findall(r"(?m)^\| (d[qkv]) \| (\w+) \| ([\d.e+-]+) \| ([^|]+) \| ([\d.e+-]+) \| ([^|]+) \|$",
                              section):
            worst[(row[0], row[1])] = [float(row[2]), row[3].strip(), float(row[4]), row[5].strip()]
    assert set(found) == set(model.DTYPES) and all(len(w) == 3 * (1 + len(model.task.probes)) for w in found.values())
    args = argparse.Namespace(seeds=seeds, tensor_cores=tensor_cores)
    assert model.markdown(found, args) == text


def test_a_page_released_before_a_day_says_when_it_comes_instead_of_linking_it():
    """A track page links every lesson of its track; released before those days, it names them with their dates
    (grader/authoring/later_days.py), and the reference check then accepts them. Code blocks are left as written."""
    from grader.authoring.later_days import rewrite

    page = ("Start with [day 06](../days/day06/README.md), then `days/day07/matmul.cu` and ../days/day06/x.cu.\n"
            "![roofline](figures/r.png) and [day 01](../days/day01/README.md) are here.\n"
            "```bash\ngrader check day06   # days/day06\n```\n")
    out = rewrite("tracks/matmul.md", page, {"day06": date(2027, 1, 28), "day07": None})
    assert "](../days/day06" not in out and "day 06 (day06 is not released yet: out on 2027-01-28)" in out
    assert "`days/day07/matmul.cu` (day07 is not released yet)" in out
    assert "../days/day06/x.cu (day06 is not released yet: out on 2027-01-28)." in out
    assert "[day 01](../days/day01/README.md)" in out and "![roofline](figures/r.png)" in out
    assert "grader check day06   # days/day06\n" in out  # a code block is the student's to run once the day is out
    for _, para, _, path in named_paths("tracks/matmul.md", out):
        if path.startswith(("days/day06", "days/day07")) and "#" not in para:
            assert "is not released yet" in para, para
