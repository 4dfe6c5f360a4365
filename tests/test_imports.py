"""The grader's modules import each other in one direction: no two modules of grader/check import each other (at
the top or inside a function), so each can be read, and tested, below the ones that use it."""
import ast
from pathlib import Path

from tests.conftest import ROOT


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
