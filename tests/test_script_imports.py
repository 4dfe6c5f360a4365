"""The instructors' scripts import only names that exist. Most of them run on a GPU machine alone, so nothing else
runs them on the CPU: scripts/attention_host_calls.py imported a helper of scripts/lessons/day20_measure.py that a
refactor had renamed, and failed at its first line on the device. Read from the source (no script is run or
imported): every `from M import a, b`, at any depth, where M is one of the scripts' own modules (scripts/,
scripts/lessons/, found on the path the scripts put first) or the project's (grader, tasks, tests)."""
import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = [ROOT / "scripts", ROOT / "scripts" / "lessons"]
PACKAGES = ("grader", "tasks", "tests")


def _scripts() -> list[Path]:
    return sorted(p for d in FOLDERS for p in d.glob("*.py"))


def _defined(path: Path) -> set[str]:
    """The names a module file binds at its top level (functions, classes, assignments, imports)."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def _missing(path: Path, folders: list[Path] = FOLDERS) -> list[str]:
    local = {p.stem: p for d in folders for p in d.glob("*.py")}
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
            continue
        wanted = [a.name for a in node.names if a.name != "*"]
        if node.module in local:
            have = _defined(local[node.module])
        elif node.module.split(".")[0] in PACKAGES:
            try:
                module = importlib.import_module(node.module)
            except ImportError as e:  # a module of ours that cannot be imported on the CPU at all
                out.append(f"line {node.lineno}: {node.module}: {e}")
                continue
            have = {n for n in wanted if hasattr(module, n)}
            for n in wanted:  # `from grader.check import build`: a submodule
                if n not in have and importlib.util.find_spec(f"{node.module}.{n}") is not None:
                    have.add(n)
        else:
            continue
        out += [f"line {node.lineno}: {n} is not in {node.module}" for n in wanted if n not in have]
    return out


@pytest.mark.parametrize("path", _scripts(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_name_a_script_imports_from_the_course_exists(path):
    assert _missing(path) == []


def test_a_renamed_helper_is_found(tmp_path):
    """The check itself, on the bug it was written for: an import of a name the module no longer defines."""
    lessons = tmp_path / "lessons"
    lessons.mkdir()
    (lessons / "measure.py").write_text("def build_module():\n    pass\nFLAGS = ['-O3']\n")
    user = lessons / "host_calls.py"
    user.write_text("def main():\n    from measure import _build, FLAGS\n    from grader.course import load_course\n")
    assert _missing(user, [lessons]) == ["line 2: _build is not in measure"]
