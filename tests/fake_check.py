"""A stand-in for `python -m grader` under `grader grade` (its `--course C check DAY --dir SRC --json PATH`), so that
grading a class is tested without compilers. What it does depends on the files in the submission's folder:
CRASH (killed by SIGSEGV, every time), HANG (sleeps past any time limit), FLAKY (crashes on its first call only);
otherwise it writes a compile-only result like the real check's. $FAKE_CHECK names one of those too (a check on
Slurm sends only the sources, not the marker). Every call is a line of SRC/calls (its PID and Slurm job)."""
import json
import os
import signal
import sys
import time
from pathlib import Path


def main():
    argv = sys.argv[1:]
    day = argv[argv.index("check") + 1]
    src = Path(argv[argv.index("--dir") + 1])
    out = Path(argv[argv.index("--json") + 1])
    array = [os.environ.get(k) for k in ("SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID")]
    job = "_".join(array) if all(array) else os.environ.get("SLURM_JOB_ID", "-")  # as scancel takes it
    with open(src / "calls", "a") as f:  # one line per call: its PID, and its Slurm job when it runs in one
        f.write(f"{os.getpid()} {job}\n")
    calls = len((src / "calls").read_text().splitlines())
    print(f"fake check of {src} ({day}), call {calls}", flush=True)
    def marked(name):
        return (src / name).exists() or os.environ.get("FAKE_CHECK") == name

    if marked("CRASH") or (marked("FLAKY") and calls == 1):
        print("about to crash", flush=True)
        os.kill(os.getpid(), signal.SIGSEGV)
    if marked("HANG"):
        time.sleep(600)
    exercise = {"day": day, "exercise": "softmax", "variant": "dirdeadbeef", "source": str(src), "seed": 1,
                "status": "no_gpu", "message": "compiled only", "threshold": None, "speedup": None, "points": 0,
                "info": {}, "builds": [], "cases": [], "log": "", "compile": [], "ranked": False}
    out.write_text(json.dumps({"day": day, "variant": "dirdeadbeef", "ranked": False, "seed": 1,
                               "exercises": [exercise]}))
    return 2  # like the real check without a GPU


if __name__ == "__main__":
    sys.exit(main())
