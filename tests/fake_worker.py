"""A stand-in for grader.check.worker that follows a script instead of touching a GPU, so the runner's handling of
crashes, hangs and restarts is tested on any machine. The script is the exercise's case list: for case i it does
BEHAVIOUR[i % len(BEHAVIOUR)] where the behaviour string comes from the environment (FAKE_WORKER), or from the
file FAKE_WORKER_FILE names, read again for each job (so that one long-lived worker can be given a new script).
Like the real worker it takes --start N (from case N on) and --only N (case N alone, as a rerun under
compute-sanitizer does), and --serve (one process, one job per JSON line on stdin, each closed by an "end" event).
Its info event carries its pid, so a test can tell whether two jobs ran in one process."""
import json
import os
import sys
import time


def behaviour() -> list[str]:
    if os.environ.get("FAKE_WORKER_FILE"):
        with open(os.environ["FAKE_WORKER_FILE"]) as f:
            return f.read().strip().split(",")
    return os.environ["FAKE_WORKER"].split(",")


def run_one(job_path, emit, start=0, only=None) -> int:
    job = json.loads(open(job_path).read())
    plan = behaviour()
    emit("info", gpu="Fake GPU", capability="9.0", seed=job["seed"], pid=os.getpid())
    emit("phase", name="build", target="exercise")
    emit("build", target="exercise", ok=True, seconds=0.1)
    from grader.check.plan import PlannedCase

    for c in map(PlannedCase.model_validate, job["cases"]):  # the runner's plan, as the real worker gets it
        if c.index < start or (only is not None and c.index not in only):
            continue
        emit("case_start", index=c.index, kind=c.kind, dtype=c.dtype, label=c.label)
        what = plan[c.index % len(plan)]
        if what == "crash":  # what the real worker does after an illegal memory access
            emit("case", index=c.index, kind=c.kind, dtype=c.dtype, label=c.label, ok=False, category="crash",
                 message="an illegal memory access was encountered")
            return 3
        if what == "die":  # the process vanishes without a word (a segfault in the driver, say)
            os._exit(139)
        if what == "hang":
            time.sleep(3600)
        if what == "blank":  # the output was left as poisoned: nothing written
            emit("case", index=c.index, kind=c.kind, dtype=c.dtype, label=c.label, ok=False,
                 category="not_implemented", message="output never written: not implemented yet?", numel=64)
            continue
        if what == "nan":  # NaN where the reference has none (what a read past the end often gives)
            emit("case", index=c.index, kind=c.kind, dtype=c.dtype, label=c.label, ok=False, category="nonfinite",
                 message="NaN/inf where the reference is finite: 3 of 64")
            continue
        emit("case", index=c.index, kind=c.kind, dtype=c.dtype, label=c.label, ok=True, category="pass",
             message="ok", deterministic=True)
    emit("done")
    return 0


def main():
    out = os.fdopen(int(sys.argv[sys.argv.index("--fd") + 1]), "w", buffering=1)

    def emit(ev, **kw):
        out.write(json.dumps({"ev": ev, **kw}) + "\n")
        out.flush()

    if os.environ.get("FAKE_WORKER_STARTS"):  # one line per process: its pid and how it was started
        with open(os.environ["FAKE_WORKER_STARTS"], "a") as f:
            f.write(f"{os.getpid()} {'serve' if '--serve' in sys.argv else 'job'}\n")
    if os.environ.get("FAKE_WORKER_PIDFILE"):
        with open(os.environ["FAKE_WORKER_PIDFILE"], "w") as f:
            f.write(str(os.getpid()))
    if "--serve" in sys.argv:
        for line in sys.stdin:
            req = json.loads(line)
            code = run_one(req["job"], emit, start=req.get("start", 0))
            emit("end", code=code)
            if code == 3:  # the CUDA context is lost: the real worker exits too
                os._exit(3)
        return
    start = int(sys.argv[sys.argv.index("--start") + 1]) if "--start" in sys.argv else 0
    only = ({int(i) for i in sys.argv[sys.argv.index("--only") + 1].split(",")} if "--only" in sys.argv
            else None)
    code = run_one(sys.argv[1], emit, start=start, only=only)
    if code:
        os._exit(code)


if __name__ == "__main__":
    main()
