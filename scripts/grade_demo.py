"""A small class for `grader grade` on a GPU machine: three submissions of the given days, laid out as copies of
days/ (SUBMISSIONS/<name>/<day>/): `solution` (solutions/), `stub` (the released stubs) and `known_wrong` (the
solution with each day's first wrong-values known-wrong edit from tests/known_wrong.yaml applied).

    python3 scripts/grade_demo.py SUBMISSIONS_DIR day01 day03
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def main(out: Path, days: list[str], stubs: Path = ROOT / "days") -> int:
    """stubs: the folder of released days the `stub` submission copies (a student repository's days/)."""
    bugs = yaml.safe_load((ROOT / "tests" / "known_wrong.yaml").read_text())
    for day in days:
        shutil.copytree(ROOT / "solutions" / day, out / "solution" / day)
        shutil.copytree(stubs / day, out / "stub" / day)
        dst = out / "known_wrong" / day
        shutil.copytree(ROOT / "solutions" / day, dst)
        # a wrong answer, not a hang or a sanitizer finding: quick to grade, and what a class mostly hands in
        bug = next((b for b in bugs if b["day"] == day and b["category"] in ("mismatch", "nonfinite", "unwritten")), None)
        if bug is None:
            print(f"{day}: no known-wrong kernel, `known_wrong` gets the solution")
            continue
        for edit in bug.get("edits") or [bug]:
            f = dst / edit["file"]
            f.write_text(f.read_text().replace(edit["find"], edit["replace"]))
        print(f"{day}: known_wrong is {bug['name']} ({bug['category']})")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1]), sys.argv[2:]))
