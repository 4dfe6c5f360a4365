"""What the lesson-table scripts share: a solution built as `grader check` builds it, a median CUDA-event time, and
their command line (measure on a GPU into
OUT_DIR/NAME.json and NAME.md, or write a saved NAME.json's table into the lesson's marked block)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from collections.abc import Callable

ROOT = Path(__file__).resolve().parents[2]


def solution_with_defines(day: str, macros: list[str]) -> Path:
    """The day's solution folder, or (macros: ["NAME=V", "NAME", ...]) a fresh copy of it whose .cu files start with
    `#define NAME V` (V 1 where not given): a solution built with its knobs (device_run.sh VARIANTS, edge_bench.py
    --define)."""
    import shutil
    import tempfile

    if not macros:
        return ROOT / "solutions" / day
    dest = Path(tempfile.mkdtemp(prefix=f"{day}-defines-")) / day
    shutil.copytree(ROOT / "solutions" / day, dest)
    head = "".join(f"#define {name} {value or 1}\n" for name, _, value in (m.partition("=") for m in macros))
    for f in dest.glob("*.cu"):
        f.write_text(head + f.read_text())
    return dest


def build_module(torch, day: str, exercise: str, src_dir: Path | None = None):
    """The built module of one exercise of course.yaml (src_dir: the day's folder, default solutions/DAY), as
    `grader check` builds it for this GPU."""
    from grader.check.build import build_exercise
    from grader.course import load_course

    ex = next(e for e in load_course(ROOT / "course.yaml").day(day).exercises if e.name == exercise)
    module, _, _ = build_exercise(ex, src_dir=src_dir or ROOT / "solutions" / day, root=ROOT, day_id=day,
                                  capability=tuple(torch.cuda.get_device_capability(0)))
    return module


def median_event_ms(torch, fn, reps: int = 20) -> float:
    """Median of `reps` calls, each timed alone by CUDA events after one warm-up call."""
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def main(*, name: str, lesson: str, block: str, measure: Callable[[argparse.Namespace], dict],
         table: Callable[[dict], str], add_arguments: Callable[[argparse.ArgumentParser], None] | None = None) -> int:
    """`SCRIPT OUT_DIR` measures; `SCRIPT --insert NAME.json` writes its table between the `<!-- BLOCK:begin -->`
    and `<!-- BLOCK:end -->` markers of days/LESSON/README.md."""
    p = argparse.ArgumentParser()
    p.add_argument("out", nargs="?", type=Path)
    p.add_argument("--insert", type=Path, help=f"a saved {name}.json: write its table into days/{lesson}/README.md")
    if add_arguments:
        add_arguments(p)
    a = p.parse_args()
    if a.insert:
        sys.path.insert(0, str(ROOT / "scripts"))
        from update_readmes import replace_block

        return 0 if replace_block(ROOT / "days" / lesson / "README.md", block,
                                  table(json.loads(a.insert.read_text()))) else 1
    if a.out is None:
        p.error(f"give an output folder (or --insert a saved {name}.json)")
    data = measure(a)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / f"{name}.json").write_text(json.dumps(data, indent=1))
    (a.out / f"{name}.md").write_text(table(data) + "\n")
    print(table(data))
    return 0


if __name__ == "__main__":  # `lesson_table.py DAY NAME=V[,NAME=V]`: the folder solution_with_defines makes (device_run.sh)
    print(solution_with_defines(sys.argv[1], sys.argv[2].split(",") if len(sys.argv) > 2 else []))
