"""`grader release --to DIR`: the student repository, written from the instructor's.

It holds the course's files (grader/authoring/course_files.py says which) with the released days' stubs
generated from solutions/ (grader/authoring/release.py), course.yaml without planted-bug edits (course_text.py)
and a README for students (student_readme.py) in place of the instructor's. No answer to a day that is not
published goes out, wherever it stands (`held_back`, measured by copies.py over normalised code): a day whose
given code (stubs, lesson) answers a hole of an earlier day waits until that day is published, and a shared file
that answers any day's hole (or that course.yaml's `answers:` declares) stays out, holding back every day whose
code includes it, directly or through other shared files; `Tree.held` says which and why. Before anything is
written the whole tree is scanned (leaks.py): a marker line, a solution line that the instructor's public files
do not already show, or the hidden cases stop the release with the file and line. The same inputs give the same bytes (no dates
or times are written), so a release can be rebuilt and diffed.

DIR gets a manifest, `.release.json`: the released days, the sha256 of every file the release wrote and of every
solution `grader publish` added. It is what makes DIR recognisable as a previous release: a later release
rewrites the files of the earlier one (removing those no longer released) and keeps the published solutions;
any other non-empty folder is refused, and so is one that holds the hidden cases or a solutions/ folder that was
not published.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import posixpath
from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache
from pathlib import Path

from grader.authoring import copies, course_files, later_days, leaks, release, student_readme, syllabus
from grader.authoring.course_text import student_course_yaml
from grader.check.build import QUOTED_INCLUDE
from grader.course import Course
from grader.errors import GraderError

MANIFEST = ".release.json"
FORMAT = 1
KEEP = {".git"}  # what an empty student repository may already hold (`git init`)
MAX_SHOWN = 10


@dataclass(frozen=True)
class Entry:
    data: bytes
    executable: bool = False

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


@dataclass
class Tree:
    """The student repository, in memory, and what the release should say about it."""
    files: dict[str, Entry]
    days: list[str]
    left_out: Counter = field(default_factory=Counter)  # why -> how many tracked files
    uncommitted: list[str] = field(default_factory=list)  # released (or made into stubs) from the working tree
    baselines: list[tuple[str, str]] = field(default_factory=list)  # (day.exercise, the day of its baseline)
    held: list[Hold] = field(default_factory=list)  # the days held back, each file that holds one and what for


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None


def hidden_paths(root: Path, course_file: Path, overlay: Path | None) -> set[str]:
    """Where hidden cases are or would be inside the course (relative paths): the default hidden.yaml beside
    course.yaml, and the overlay in use if it lies inside the course."""
    from grader.classroom.hidden import FILE_NAME

    out = set()
    for p in (Path(course_file).resolve().parent / FILE_NAME, overlay):
        if p is None:
            continue
        try:
            out.add(Path(p).resolve().relative_to(root.resolve()).as_posix())
        except ValueError:
            pass
    return out


def _includes(root: Path, course_dir: str, course: Course, day_id: str) -> set[str]:
    """The names a day's solution files `#include "..."` (its own files, and the earlier days' files it uses) as
    students ever see them: without the instructor-only lines, which neither the stubs nor `grader publish` hand
    out, so an include there (an instructors' kernel built on a later day's header) holds nothing back."""
    base = root / course_dir / course_files.SOLUTIONS
    files = [p for p in (base / day_id).glob("*") if p.is_file()]
    files += [base / u for ex in course.day(day_id).exercises for u in ex.uses]
    texts = [(f, t) for f in files if (t := _text(f)) is not None]
    return {m for f, t in texts
            for m in QUOTED_INCLUDE.findall(release.strip_instructor_only(t, f) if release.has_markers_syntax(f) else t)}


@dataclass(frozen=True)
class Hold:
    """A day held back, and why: a released file (the day's own, or a shared file its code includes through
    `via`) that answers a hole of `waits_for`, a day whose solution is not published yet. hole, covered and total
    say how much (grader/authoring/copies.py); no hole: course.yaml's `answers:` declares the file."""
    day: str
    waits_for: str
    file: str  # relative to the course
    hole: str = ""
    covered: int = 0
    total: int = 0
    via: tuple[str, ...] = ()  # the includes from the day's code to file (file last); empty: the day's own file

    @property
    def what(self) -> str:
        if not self.hole:
            return f"holds {self.waits_for}'s answers (course.yaml's `answers:`)"
        return f"gives {self.waits_for}'s hole {self.hole} ({self.covered} of {self.total} code lines)"

    def __str__(self) -> str:
        where = f"it includes {' → '.join(self.via)}, which" if self.via else self.file
        return f"{self.day} held back: {where} {self.what}; it goes out once {self.waits_for} is published"


@dataclass(frozen=True)
class _Answer:
    waits_for: str
    hole: str = ""
    covered: int = 0
    total: int = 0


def _label(hole: copies.Hole) -> str:
    name = hole.name
    return name if len(name) <= 80 else name[:77].rstrip() + "…'"


def _owner(rel: str) -> str | None:
    """The day a file of the course belongs to (days/dayNN/...), None for a shared file."""
    parts = rel.split("/")
    return parts[1] if parts[0] == "days" and len(parts) > 2 else None


def holes_of(solution_files: dict[str, str], course_dir: str, published: set[str],
             allowed: list[str] = ()) -> list[copies.Hole]:
    """The holes of every solution file (root-relative paths; course_dir: the course's folder in them) of a day not
    published, less the lines course.yaml's `allow_leak:` lets any file show (as allowed)."""
    public = {ln.tokens for a in allowed for lang in ("x.cu", "x.py") for ln in copies.code_lines(lang, a)}
    out = []
    for path, text in sorted(solution_files.items()):
        rel = path[len(course_dir):]
        day = rel.split("/")[1] if rel.count("/") >= 2 else None
        if day and day not in published and (release.has_markers_syntax(Path(rel)) or rel.endswith(".ipynb")):
            out += [dataclasses.replace(h, lines=tuple(ln for ln in h.lines if ln.tokens not in public))
                    for h in copies.holes_of(rel, text, day)]
    return out


# The grader itself: every release needs all of it, and its code is the tool's, not a course answer. The copy rule
# does not measure it (a two-line hole such as day 19's `o.copy_(acc)` / `lse.copy_(lse_run)` has its shape in any
# module that copies two tensors, and holding grader/check/error_map.py out broke every student's `grader check`);
# the exact-line scan still reads it.
TOOL = "grader/"


@lru_cache(maxsize=4)
def _index(holes: tuple[copies.Hole, ...]) -> copies.Index:
    """One index of these holes for the process: a release builds the repository as of today and as of its last
    date (the forecast), with the same days published, so the same holes."""
    return copies.Index(list(holes))


def answers_in(files: dict[str, str], holes: list[copies.Hole], course: Course) -> tuple[dict, dict, list]:
    """What released files (course-relative path -> text) answer, by the rule of the release:
    ({day: {file: {earlier day: its best match}}} for each day's own files, {shared file: {day: best match}},
    [each match of a day's file with the day's own hole]). A day's file that answers a later day's hole holds
    nothing back: that day is released after it, and its hole restates what the students already have (day 10
    asks for days 03 and 04's merges again). A day's file that answers the day's own hole is a leak no release
    can wait out."""
    order = {d.id: i for i, d in enumerate(course.days)}
    index = _index(tuple(holes))
    by_day: dict = {}
    shared: dict = {}
    own: list[copies.Match] = []
    for rel, text in sorted(files.items()):
        if rel.startswith(TOOL):
            continue
        owner = _owner(rel)
        for m in index.answered(rel, text):
            hd = m.hole.day
            if owner is None:
                best = shared.setdefault(rel, {})
            elif hd == owner:
                own.append(m)
                continue
            elif order.get(hd, -1) > order.get(owner, -1):
                continue
            else:
                best = by_day.setdefault(owner, {}).setdefault(rel, {})
            if hd not in best or m.covered > best[hd].covered:
                best[hd] = m
    return by_day, shared, own


def _resolve(name: str, including: str, shared: dict[str, str]) -> list[str]:
    """The shared files an `#include "name"` may name: the path beside the including file, else every shared file
    of that name (the course's builds put common/ on the include path; where two could be meant, both count)."""
    beside = posixpath.normpath(posixpath.join(posixpath.dirname(including), name))
    if beside in shared:
        return [beside]
    return sorted(p for p in shared if posixpath.basename(p) == posixpath.basename(name))


def held_back(root: Path, course_dir: str, course: Course, days: list[str], published: set[str],
              files: dict[str, str] | None = None, solution_files: dict[str, str] | None = None):
    """What a release of these days must hold back: (the shared files kept out, path -> [_Answer]; [Hold], in
    course order; [copies.Match of a day's file with its own hole: a leak no release can wait out]).
    files: course-relative path -> text of the tree about to be released; solution_files: root-relative path ->
    text, whose holes of days not published are measured (copies.py) against each file. A day's own file that
    answers an earlier day's hole holds the day back; a shared file that answers any day's hole (or that
    course.yaml's `answers:` declares) stays out, and so does every day whose code includes it, directly or
    through other shared files."""
    files = files or {}
    holes = holes_of(solution_files or {}, course_dir, published, [a.text for a in course.allow_leak])
    found_by_day, found_shared, own = answers_in(files, holes, course)
    kept_out: dict[str, list[_Answer]] = {}
    for path, best in found_shared.items():
        kept_out[path] = [_Answer(d, _label(m.hole), m.covered, m.total) for d, m in sorted(best.items())]
    for path, day in course.answers.items():
        if day not in published and all(a.waits_for != day for a in kept_out.get(path, [])):
            kept_out.setdefault(path, []).append(_Answer(day))
    held = [Hold(d, hd, rel, _label(m.hole), m.covered, m.total)
            for d in days for rel, best in sorted(found_by_day.get(d, {}).items()) for hd, m in sorted(best.items())]
    shared = {p: t for p, t in files.items() if _owner(p) is None}
    shared.update({p: "" for p in kept_out if p not in shared})
    graph = {p: [r for n in QUOTED_INCLUDE.findall(t) for r in _resolve(n, p, shared) if r != p]
             for p, t in shared.items() if copies.language(p) == "c"}
    for d in days:
        start = [r for n in sorted(_includes(root, course_dir, course, d)) for r in _resolve(n, f"days/{d}/x", shared)]
        chain = {r: (r,) for r in start}  # each shared file the day's code reaches, by the includes that reach it
        todo = list(start)
        while todo:
            p = todo.pop(0)
            for r in graph.get(p, []):
                if r not in chain:
                    chain[r] = chain[p] + (r,)
                    todo.append(r)
        for path in sorted(chain, key=lambda p: (len(chain[p]), p)):
            for a in kept_out.get(path, []):
                if a.waits_for == d:
                    what = (f"gives {d}'s own hole {a.hole}" if a.hole else
                            f"course.yaml's `answers:` says holds {d}'s own answers")
                    raise GraderError(f"{d}'s code includes {' → '.join(chain[path])}, which {what}: it could never be "
                                      f"released before it is published. Move those answers out of what {d} includes")
                held.append(Hold(d, a.waits_for, path, a.hole, a.covered, a.total, chain[path]))
    order = {day.id: i for i, day in enumerate(course.days)}
    held.sort(key=lambda h: (order.get(h.day, -1), bool(h.via), len(h.via), h.file, order.get(h.waits_for, -1)))
    return kept_out, held, own


def build(root: Path, course_file: Path, course: Course, today: date, overlay: Path | None = None,
          published: set[str] = frozenset()) -> Tree:
    """The student repository of the course at root, as of today, without writing anything. published: the days
    whose solutions the target already holds (`grader publish`): their holes are no secret any more, so the files
    that answer them may go out. Tree.held says which days are held back and why."""
    root = Path(root).resolve()
    published = set(published)
    tracked = course_files.tracked_files(root)
    candidates = course_files.released_days(course, today)
    hidden = hidden_paths(root, course_file, overlay)
    course_dir = Path(course_file).resolve().parent.relative_to(root).as_posix()
    course_dir = "" if course_dir == "." else course_dir + "/"
    tree = Tree({}, candidates)
    solution_files: dict[str, str] = {}
    for t in tracked:
        why = course_files.why_left_out(t.path, course, candidates, hidden)
        if t.path.startswith(course_dir + course_files.SOLUTIONS) and (text := _text(root / t.path)) is not None:
            solution_files[t.path] = text
        if why:
            tree.left_out[why.split(" (")[0]] += 1
            continue
        tree.files[t.path] = Entry((root / t.path).read_bytes(), t.executable)
    known = {t.path for t in tracked}
    for p in release.release_plan(course, root, candidates) if candidates else []:
        src = p.source.relative_to(root).as_posix()
        if src not in known:
            raise GraderError(f"{src} is not tracked by git, and the release is made of what git tracks: commit it "
                              f"(or leave {src.split('/')[1]} out until it is ready: `status: planned`, or a later "
                              "`release:` date)")
        rel = p.target.relative_to(root).as_posix()
        was = tree.files.get(rel)
        tree.files[rel] = Entry(p.text.encode("utf-8"), was.executable if was else False)
        if p.source.is_file() and (text := _text(p.source)) is not None:
            solution_files.setdefault(p.source.relative_to(root).as_posix(), text)
    # What the candidate days' given code answers: days held back, shared files kept out (grader/authoring/copies.py)
    given = {}
    for path, e in tree.files.items():
        if path.startswith(course_dir):
            try:
                given[path[len(course_dir):]] = e.data.decode("utf-8")
            except UnicodeDecodeError:
                pass
    kept_out, tree.held, own = held_back(root, course_dir, course, candidates, published, given, solution_files)
    held_days = {h.day for h in tree.held}
    tree.days = [d for d in candidates if d not in held_days]
    for path in list(tree.files):
        rel = path[len(course_dir):] if path.startswith(course_dir) else path
        why = ("answers of days not published yet" if rel in kept_out else
               "days held back" if _owner(rel) in held_days else None)
        if why:
            del tree.files[path]
            if path in known:
                tree.left_out[why] += 1
    course_rel = Path(course_file).resolve().relative_to(root).as_posix()
    tree.files[course_rel] = Entry(student_course_yaml(Path(course_file).read_text(encoding="utf-8"), course_rel)
                                   .encode("utf-8"))
    # The student's README, not the instructor's (which describes tests, scripts and grading a class).
    readme = (Path(course_rel).parent / "README.md").as_posix()
    slurm = (Path(course_rel).parent / "slurm.yaml").as_posix() in tree.files  # `check --on slurm` set up
    tree.files[readme] = Entry(student_readme.render(course, tree.days, slurm).encode("utf-8"))
    # Pages that name a day not out yet say when it comes, instead of linking what is not there (later_days.py).
    later = {d.id: (d.release if d.release and d.release > today else None) for d in course.days
             if d.status == "ready" and d.id not in tree.days}
    for path, e in list(tree.files.items()):
        if path.endswith(".md") and not path.startswith(course_dir + course_files.SOLUTIONS):
            rel = path[len(course_dir):] if path.startswith(course_dir) else path
            text = e.data.decode("utf-8", "replace")
            new = later_days.rewrite(rel, text, later)
            if new != text:
                tree.files[path] = Entry(new.encode("utf-8"), e.executable)
    # The syllabus as of this release: a day not out yet says when it comes, with no link to a lesson not there.
    syllabus_md = (Path(course_rel).parent / "syllabus.md").as_posix()
    if syllabus_md in tree.files:
        tree.files[syllabus_md] = Entry(syllabus.render(course, {"days": tree.days}).encode("utf-8"))
    tree.files = dict(sorted(tree.files.items()))
    stubbed = tuple(f"{course_dir}{course_files.SOLUTIONS}{d}/" for d in tree.days)
    tree.uncommitted = [u for u in course_files.uncommitted(root) if u in tree.files or u.startswith(stubbed)]
    _check(tree, solution_files, overlay, course, {p for p in solution_files
                                                    if p[len(course_dir):].split("/")[1] in published},
           [leaks.Finding(course_dir + m.path, m.at, f"gives {m.hole.day}'s own hole {_label(m.hole)} ({m.covered} of "
                                                     f"{m.total} code lines): no release can wait until it is published")
            for m in own])
    for d in (course.day(i) for i in tree.days):
        for ex in d.exercises:
            b = ex.baseline.solution if ex.baseline else None
            if b:
                tree.baselines.append((f"{d.id}.{ex.name}", b))
    return tree


def forecast(root: Path, course_file: Path, course: Course, today: date, overlay: Path | None = None,
             published: set[str] = frozenset()) -> tuple[dict[str, list[str]], str]:
    """{day not released yet: the days whose publication it waits for}, by the release's own rule applied to every
    ready day at once (what the release of the last date would hold, were nothing more published): the first
    release already says which later days wait on which, and the calendar shows whether each waited-for day is
    due in time. With it, why it could not be worked out ("" where it could): a course that cannot be built that far
    (the release of that date will say so too)."""
    last = max([d.release for d in course.days if d.status == "ready" and d.release] or [today])
    if last <= today:
        return {}, ""
    try:
        tree = build(root, course_file, course, last, overlay, published)
    except GraderError as e:
        return {}, str(e).splitlines()[0]
    later = {d.id for d in course.days if d.status == "ready" and d.release and d.release > today}
    order = {d.id: i for i, d in enumerate(course.days)}
    out: dict[str, set[str]] = {}
    for h in tree.held:
        if h.day in later:
            out.setdefault(h.day, set()).add(h.waits_for)
    return {d: sorted(w, key=order.get) for d, w in out.items()}, ""


def late_waits(course: Course, waits: dict[str, list[str]]) -> list[str]:
    """The waits the calendar cannot meet: a day released before the day it waits for can be published (the day
    after that day's due date, `grader publish`), or a day waiting for one with no due date."""
    out = []
    for day, waited in waits.items():
        d = course.day(day)
        for w in waited:
            due = course.day(w).due
            if due is None or d.release is None or due >= d.release:
                when = f"is due on {due.isoformat()}" if due else "has no due date"
                out.append(f"{day} is released on {d.release.isoformat() if d.release else '(no date)'} but waits "
                           f"for {w}'s solution, and {w} {when}: its release will hold it back until {w} is "
                           f"published. Give {w} a due date before {day}'s release (course.yaml)")
    return out


def unpublished_answers(dest: Path, course_file: Path, course: Course) -> list[str]:
    """What the student repository at dest gives of a day it has not published (its manifest says which are), by
    the release's own rule (copies.py): a day's file that answers a hole of an earlier day, any other file that
    answers a hole, a day's file that answers its own hole, and a file course.yaml's `answers:` declares. Empty
    for a sound release. The holes are those of the course at course_file (the instructor's solutions/)."""
    dest = Path(dest).resolve()
    doc = read_manifest(dest) or {"files": {}, "published": {}}
    published = set(doc.get("published", {}))
    files = {}
    for rel in doc["files"]:
        if (text := _text(dest / rel)) is not None:
            files[rel] = text
    base = Path(course_file).resolve().parent
    solutions = {p.relative_to(base).as_posix(): t for p in sorted((base / course_files.SOLUTIONS).rglob("*"))
                 if p.is_file() and (t := _text(p)) is not None}
    holes = holes_of(solutions, "", published, [a.text for a in course.allow_leak])
    by_day, shared, own = answers_in(files, holes, course)
    found = [str(m) for best in by_day.values() for matches in best.values() for m in matches.values()]
    found += [str(m) for best in shared.values() for m in best.values()]
    found += [f"{m} (its own day's hole)" for m in own]
    found += [f"{path} holds {day}'s answers (course.yaml's `answers:`)" for path, day in course.answers.items()
              if path in files and day not in published]
    return sorted(found)


def _check(tree: Tree, solution_files: dict[str, str], overlay: Path | None, course: Course,
           published: set[str] = frozenset(), copied: list[leaks.Finding] = ()) -> None:
    """Refuses a tree that holds any line of a solution region (less the lines any stub hands out, the regions of
    solutions already published there, and course.yaml's `allow_leak:`), a marker line, or the hidden cases: a
    lesson or a shared header that quotes a hole's answer is a leak like any other."""
    allowed = {leaks.code_of(a.text, prefix) for a in course.allow_leak for prefix in ("//", "#")}
    every = leaks.solution_lines(solution_files)  # what no stub gives away, from every solution file
    unpublished = leaks.solution_lines({p: s for p, s in solution_files.items() if p not in published}, allowed)
    secrets = {c: p for c, p in unpublished.items() if c in every}
    hidden = (overlay.name, overlay.read_bytes()) if overlay is not None and overlay.is_file() else None
    found = sorted(leaks.scan({p: e.data for p, e in tree.files.items()}, secrets, hidden) + list(copied),
                   key=lambda f: (f.path, f.line))
    if found:
        shown = "\n  ".join(map(str, found[:MAX_SHOWN]))
        more = f"\n  … and {len(found) - MAX_SHOWN} more" if len(found) > MAX_SHOWN else ""
        raise GraderError(f"the student repository would hold instructor-only text, so nothing was written:\n  "
                          f"{shown}{more}\nFix the markers in solutions/, rewrite the lesson or header that quotes a "
                          "hole's answer (or name a shared file that holds a day's answers under course.yaml's "
                          "`answers:`), or, for a line so common it gives nothing away, add it to `allow_leak:` with "
                          "its reason; then release again")


# -- the folder ------------------------------------------------------------------------------------------------
def read_manifest(dest: Path) -> dict | None:
    """DIR's manifest, None if it has none; a GraderError if it is not one."""
    p = Path(dest) / MANIFEST
    if not p.is_file():
        return None
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (ValueError, OSError) as e:
        raise GraderError(f"{p} is not a release manifest ({e}): restore it from the repository's history, or "
                          "release into a new folder") from None
    if not (isinstance(doc, dict) and doc.get("format") == FORMAT and isinstance(doc.get("files"), dict)
            and isinstance(doc.get("published", {}), dict)):
        raise GraderError(f"{p} is not a release manifest of format {FORMAT}: restore it, or release into a new "
                          "folder")
    doc.setdefault("published", {})
    return doc


def manifest_text(doc: dict) -> bytes:
    return (json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def published_paths(doc: dict) -> set[str]:
    return {p for files in doc.get("published", {}).values() for p in files}


def _walk(dest: Path):
    """Files under dest, relative, outside .git."""
    for dirpath, dirnames, filenames in os.walk(dest):
        dirnames[:] = sorted(d for d in dirnames if not (Path(dirpath) == dest and d in KEEP))
        for f in sorted(filenames):
            yield (Path(dirpath) / f).relative_to(dest).as_posix()


def check_target(dest: Path, root: Path, doc: dict | None, hidden_names: set[str]) -> None:
    """Refuses a folder the release must not write into, saying why."""
    dest, root = Path(dest).resolve(), Path(root).resolve()
    if dest == root or dest in root.parents:
        raise GraderError(f"{dest} holds the course itself: release into a folder outside it, e.g. "
                          f"{root.parent / (root.name + '-student')}")
    if dest.exists() and not dest.is_dir():
        raise GraderError(f"{dest} exists and is not a folder")
    if root in dest.parents:
        inside = dest.relative_to(root).as_posix() + "/"
        if any(t.path.startswith(inside) for t in course_files.tracked_files(root)):
            raise GraderError(f"{dest} holds files of the course (tracked by git): release into a folder outside it")
    if not dest.is_dir():
        return
    present = list(_walk(dest))
    hidden = [p for p in present if Path(p).name in hidden_names]
    if hidden:
        raise GraderError(f"{dest / hidden[0]} is a file of hidden cases, and a student repository must not hold "
                          "one: delete it (and from the repository's history if it was committed), then release")
    if doc is None:
        if present:
            raise GraderError(f"{dest} is not empty ({len(present)} file(s), e.g. {present[0]}) and is not a previous "
                              f"release (it has no {MANIFEST}): release into a new or empty folder (a fresh "
                              "`git init` is fine)")
        return
    ours = set(doc["files"]) | published_paths(doc) | {MANIFEST}
    strays = [p for p in present if p.startswith(course_files.SOLUTIONS) and p not in ours]
    if strays:
        raise GraderError(f"{dest / strays[0]} is a solution that `grader publish` did not put there: a student "
                          "repository holds a day's solution only once it is published; remove it, then release")


@dataclass
class Written:
    written: list[str]
    removed: list[str]
    unchanged: int
    changed_by_hand: list[str]


def put_file(path: Path, entry: Entry) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.release-tmp")
    tmp.write_bytes(entry.data)
    os.chmod(tmp, 0o755 if entry.executable else 0o644)
    os.replace(tmp, path)


def same_file(path: Path, entry: Entry) -> bool:
    try:
        return path.read_bytes() == entry.data and bool(path.stat().st_mode & 0o100) == entry.executable
    except OSError:
        return False


def _prune(dest: Path, rel: str) -> None:
    d = (dest / rel).parent
    while d != dest and d.is_dir() and not any(d.iterdir()):
        d.rmdir()
        d = d.parent


def write(tree: Tree, dest: Path, root: Path, course: Course, hidden_names: set[str]) -> Written:
    """Writes the tree into dest (new, empty, or a previous release), then its manifest."""
    dest = Path(dest).resolve()
    doc = read_manifest(dest) if dest.is_dir() else None
    check_target(dest, root, doc, hidden_names)
    old = doc["files"] if doc else {}
    published = doc["published"] if doc else {}
    clashes = [p for p in tree.files if p not in old and p not in published_paths(doc or {}) and (dest / p).exists()]
    if clashes:
        raise GraderError(f"{dest / clashes[0]} is not from the previous release and would be overwritten: move "
                          f"it away, or list it in course.yaml's instructor_only if it is yours")
    by_hand = sorted(p for p, sha in old.items() if (dest / p).is_file()
                     and hashlib.sha256((dest / p).read_bytes()).hexdigest() != sha)
    out = Written([], [], 0, by_hand)
    dest.mkdir(parents=True, exist_ok=True)
    for rel in sorted(set(old) - set(tree.files)):
        if (dest / rel).is_file():
            (dest / rel).unlink()
            out.removed.append(rel)
            _prune(dest, rel)
    for rel, entry in tree.files.items():
        if same_file(dest / rel, entry):
            out.unchanged += 1
        else:
            put_file(dest / rel, entry)
            out.written.append(rel)
    doc = {"format": FORMAT, "course": course.title, "days": tree.days,
           "files": {p: e.sha256 for p, e in tree.files.items()}, "published": published}
    put_file(dest / MANIFEST, Entry(manifest_text(doc)))
    return out
