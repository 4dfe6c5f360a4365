"""The README's claims that tests can hold it to: its times come from scripts/readme_figures.py, and its first
commands are the ones the CPU path of the grader answers."""
import importlib.util
import json
import re

from tests.conftest import ROOT


def _figures():
    spec = importlib.util.spec_from_file_location("readme_figures", ROOT / "scripts" / "readme_figures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_time_in_the_readme_is_measured_and_names_its_machine():
    fig = _figures()
    text = (ROOT / "README.md").read_text()
    start, end = text.index(fig.BEGIN), text.index(fig.END) + len(fig.END)
    rows = json.loads(fig.DATA.read_text())
    assert rows and text[start:end] == fig.block(rows)  # the block is exactly what the script writes
    assert all(r["machine"] and r["date"] for r in rows.values())
    rest = text[:start] + text[end:]
    found = re.findall(r"\b\d+(?:\.\d+)?\s?(?:s|ms|min|minutes|seconds|MB|MiB|GB|GiB)\b", rest)
    assert found == [], f"times or sizes outside the measured block: {found}"


def test_the_first_commands_have_a_cpu_path():
    text = (ROOT / "README.md").read_text()
    assert "https://download.pytorch.org/whl/cpu" in text and "https://download.pytorch.org/whl/cu130" in text
    assert text.count("pip install -e . && grader doctor && grader check day01") == 2
    assert "compile-only mode" in text and "ptxas" in text


def test_the_watch_figures_are_the_medians_of_watch_bench():
    fig = _figures()
    doc = {"steps": [{"name": "unchanged grader check", "seconds": [4.4, 4.1, 4.2]},
                     {"name": "watch: edit -> verdict line", "seconds": [1.9, 1.6, 1.7, 2.5, 1.8]},
                     {"name": "watch: edit -> speed line", "seconds": [9.0]},
                     {"name": "cold grader check (empty build cache)", "seconds": []}]}
    assert fig.watch_figures(doc) == {"watch_recheck_s": 4.2, "watch_edit_s": 1.8}


def test_the_tests_section_installs_what_the_tests_need_before_running_them():
    """Followed as written, the Tests section runs: pytest (and xdist's -n) come with the `test` extra."""
    import tomllib

    text = (ROOT / "README.md").read_text()
    section = text[text.index("\n## Tests\n"):]
    start = section.index("```bash\n") + len("```bash\n")
    block = section[start:section.index("```", start)]
    test_extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    assert any(d.startswith("pytest-xdist") for d in test_extra) and any(d.startswith("pytest>") for d in test_extra)
    install = block.find('pip install -e ".[test]"')
    assert 0 <= install < block.index("python3 -m pytest"), block
