"""Does the grader's timer agree with triton.testing.do_bench (median, its own L2 flush)? Same kernels, same
inputs, one process. Target (issue 2): within 5%."""
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.check.build import build_exercise  # noqa: E402
from grader.course import load_course  # noqa: E402
from grader.check.worker import make_timer  # noqa: E402

CASES = [("day02", "fp32", (4096, 4096)), ("day03", "fp16", (4096, 4096)), ("day04", "bf16", (1024, 32768)),
         ("day05", "fp32", (4096, 4096)), ("day05", "bf16", (8192, 8192)), ("day05", "fp16", (64, 262144)),
         ("day05", "fp32", (16384, 1024))]
DT = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def main():
    try:
        import triton.testing
    except ImportError:
        sys.exit("error: this comparison needs Triton (triton.testing.do_bench): run it on a GPU machine that has it")
    course = load_course(ROOT / "course.yaml")
    timer = make_timer(torch, course)
    cap = torch.cuda.get_device_capability()
    mods = {}
    print(f"{'kernel':8} {'dtype':5} {'shape':>12} {'grader us':>10} {'do_bench us':>12} {'ratio':>6}")
    worst = 0.0
    for day, dt, shape in CASES + [("torch", "fp32", (4096, 4096))]:
        x = torch.randn(shape, device="cuda", dtype=DT[dt])
        out = torch.empty_like(x)
        if day == "torch":
            fn = lambda: torch.softmax(x, -1, out=out)  # noqa: E731
        else:
            if day not in mods:
                ex = course.day(day).exercises[0]
                mods[day] = build_exercise(ex, src_dir=ROOT / "solutions" / day, root=ROOT, day_id=day,
                                           capability=cap)[0]
            f = mods[day].softmax
            fn = lambda: f(x, out)  # noqa: E731
        ours = timer.time(fn).median_ms
        theirs = triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")
        ratio = ours / theirs
        worst = max(worst, abs(ratio - 1))
        print(f"{day:8} {dt:5} {'x'.join(map(str, shape)):>12} {ours * 1e3:10.1f} {theirs * 1e3:12.1f} {ratio:6.3f}")
    print(f"largest disagreement: {worst:.1%} ({'within' if worst <= 0.05 else 'OUTSIDE'} 5%)")


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description=__doc__.split("\n")[0]).parse_args()
    main()
