"""The grader's modules import each other in one direction: no two modules of grader/check import each other (at
the top or inside a function), so each can be read, and tested, below the ones that use it. And a student's command
loads only what it needs: no instructor module, and no torch in the grader's own process."""
import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, has_gpu, needs_nvcc


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("grader"):
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("grader")}
    return out


def test_no_module_of_grader_check_imports_one_that_imports_it():
    pkg = ROOT / "grader" / "check"
    graph = {f"grader.check.{p.stem}": _imports(p) for p in pkg.glob("*.py") if p.stem != "__init__"}
    circles = sorted((a, b) for a, deps in graph.items() for b in deps if b in graph and a in graph[b] and a < b)
    assert not circles, circles


# What a student's loop never needs: the instructors' side (grading a class, releases, hidden cases, the site) and
# the other commands' heavy modules. The schema (pydantic) comes with the course, once a command reads it.
INSTRUCTORS = ("grader.classroom", "grader.authoring", "grader.commands.teaching", "grader.site", "grader.profile")


def _modules_after(code: str, cwd: Path = ROOT) -> list[str]:
    """The modules loaded by a fresh Python that runs code (its stdout goes to stderr: the list is the last line)."""
    script = f"import contextlib, json, sys\nwith contextlib.redirect_stdout(sys.stderr):\n    {code}\n" \
             "print(json.dumps(sorted(sys.modules)))"
    r = subprocess.run([sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def _offending(modules: list[str], extra: tuple[str, ...] = ()) -> list[str]:
    return [m for m in modules if any(m == p or m.startswith(p + ".") for p in (*INSTRUCTORS, *extra))]


def test_the_command_line_alone_loads_no_instructor_module_nor_the_schema():
    """`import grader.cli` is what every command pays before it starts: a command's module is loaded when it runs."""
    assert _offending(_modules_after("import grader.cli"), ("pydantic", "torch", "grader.commands.checking")) == []


def test_the_compile_cache_key_does_not_import_torch():
    """A compile-only check looks up every report by a key that names torch's headers: found without importing
    torch (a second of the check's own process), and the same folders torch's cpp_extension gives."""
    src, inc = ROOT / "solutions" / "day01" / "bindings.cpp", ROOT / "common"
    code = (f"from pathlib import Path; from grader.check.compile_check import cache_key; "
            f"cache_key(Path({str(src)!r}), [Path({str(inc)!r})], [], Path({str(ROOT)!r}))")
    assert _offending(_modules_after(code), ("torch",)) == []
    from grader.check import compile_check

    cpp_extension = pytest.importorskip("torch.utils.cpp_extension")
    assert compile_check._torch_include_paths() == cpp_extension.include_paths()


@needs_nvcc
@pytest.mark.skipif(has_gpu(), reason="the compile-only check: on a GPU the worker runs the day")
def test_a_students_check_loads_no_instructor_module_and_leaves_torch_to_its_worker():
    modules = _modules_after("from grader import cli; cli.main(['check', 'day01', '--solution'])")
    assert "grader.check.day_check" in modules  # the check ran
    assert _offending(modules, ("torch",)) == []
