"""README.md of the student repository, written by `grader release --to` (the instructor's README, with its tests,
scripts and grading set-up, is not what a student needs and names files a student repository does not have).

Rendered from course.yaml and the released days only; the same inputs give the same bytes. tests/ checks that
every path and `grader` command it names exists in the release."""
from __future__ import annotations

import re
import textwrap

from grader import gpu_support
from grader.course import Course

PLACEHOLDER = "YOUR CODE HERE"


def _days_table(course: Course, released: list[str]) -> list[str]:
    rows = ["| day | lesson | exercises (`--exercise`) | due |", "|---|---|---|---|"]
    for d in (course.day(i) for i in released):
        title = f"**{d.title}** (mandatory)" if d.mandatory else d.title
        names = ", ".join(e.name + _optional(e) for e in d.exercises) or "-"
        rows.append(f"| {d.id} | [{title}](days/{d.id}/README.md) | {names} | "
                    f"{d.due.isoformat() if d.due else '-'} |")
    return rows


def _optional(e) -> str:
    """How the table marks an optional exercise, and the GPUs that grade it where only some do."""
    if not e.optional:
        return ""
    return f" (optional, {gpu_support.archs(e)} only)" if e.capability else " (optional)"


def _on_slurm(first: str) -> list[str]:
    """How to get a GPU's verdict from the class's cluster: only where the course ships its Slurm settings."""
    return ["## No GPU here? Check on your cluster's GPUs", "",
            "If your machine has no GPU (its check compiles only) and your class's GPUs are behind Slurm, run the "
            "check as a Slurm job, from a login node of the cluster, with the same options as a local check:", "",
            "```bash",
            "pip install -e \".[slurm]\"",
            f"grader check {first} --on slurm",
            "```", "",
            "Only the day's sources go to the job (regular files; a symbolic link is refused); the grader, the "
            "course file and the thresholds are the course's, as installed on the cluster. You see the job queued, "
            "then the node and GPU it runs on, then the check's own lines. The verdict, `--json` and the exit code "
            "are those of the check on that node. Ctrl-C cancels the job. A job that cannot start, is cancelled or "
            "preempted, or runs past its time gets an ENVIRONMENT ERROR verdict that says which (exit code 2). What "
            "a job asks for (partition, GPUs, time, `module load` lines) is in `slurm.yaml`, from your instructor; "
            "put your own settings (an account, another partition) in `~/.config/grader/slurm.yaml`, or pass "
            "`--slurm-config FILE`: a key there replaces the course's. `grader doctor` shows whether Slurm answers "
            "and what a job would ask for. On a GPU machine of your own a local check is quicker: there is no "
            "queue.", ""]


def _process_groups(course: Course, released: list[str]) -> list[str]:
    """How to check an exercise of several processes with fewer GPUs: only where a released day has one."""
    group = [(d.id, e) for d in (course.day(i) for i in released) for e in d.exercises if e.processes > 1]
    if not group:
        return []
    day, ex = group[0]
    return [f"An exercise that runs in several processes, one per GPU ({', '.join(f'{d}.{e.name}' for d, e in group)}"
            f"), is skipped on a machine with fewer GPUs (exit code 2). `grader check {day} --on cpu` runs it "
            f"in {ex.processes} CPU processes instead, on the same cases, for correctness only: a check of your "
            "protocol and your math, not kept as the day's result.", ""]


def render(course: Course, released: list[str], slurm: bool = False) -> str:
    """slurm: the course ships Slurm settings (slurm.yaml), so `grader check --on slurm` is explained."""
    first = released[0] if released else "day01"
    later = [d.id for d in course.days if d.id not in released and d.status == "ready"]
    lines = [f"# {course.title}", "", course.pitch.replace("{title}", course.title).strip(), "",
             "This repository is your copy of the course: each day's lesson and the code you complete live in "
             "`days/dayNN/`, and `grader` checks it. [syllabus.md](syllabus.md) lists every day and every graded "
             "exercise with its points and the speedup it needs.", "",
             "## Days released so far", ""]
    lines += _days_table(course, released)
    if later:
        lines += ["", f"{len(later)} more day(s) come later: your instructor releases them into this repository "
                      "(pull to get them)."]
    lines += ["", "## Set up", "",
              "Work in a virtual environment of Python 3.10 or newer, made once in this folder, so that the course's "
              "packages stay out of your system's Python:", "",
              "```bash",
              "python3 -m venv .venv",
              "source .venv/bin/activate      # again in every new shell",
              "```", "",
              "Then, on a machine with an NVIDIA GPU (a CUDA build of PyTorch and the CUDA toolkit's `nvcc`):", "",
              "```bash",
              "pip install torch --index-url https://download.pytorch.org/whl/cu130   # or the index of your CUDA",
              f"pip install -e . && grader doctor && grader check {first}",
              "```", "",
              "On a machine without a GPU, install the CPU build of PyTorch; you still need `nvcc` (the CUDA toolkit, "
              "no driver):", "",
              "```bash",
              "pip install torch --index-url https://download.pytorch.org/whl/cpu",
              f"pip install -e . && grader doctor && grader check {first}",
              "```", "",
              "`grader doctor` says what is missing and exits 0 when the machine can be used. Without a GPU the "
              "grader works in compile-only mode: your kernels are compiled and ptxas's report (registers, shared "
              "memory, spills) and any compiler error at its file:line are shown, but nothing runs, so correctness "
              "and speed are checked only on a GPU. That verdict is COMPILED ONLY (exit code 2).", "",
              "## Each day", "",
              "`grader calendar` shows when each day comes out and is due, and which are out (`git pull` brings "
              "each new release and each published solution); `grader list` shows your last results.", "",
              "1. Read the lesson, `days/dayNN/README.md`.",
              f"2. Fill in the places marked `{PLACEHOLDER}` in the day's files under `days/dayNN/`, replacing each "
              "marker line with your code (the check reads a marker left in place as a part not written yet). "
              "Shared helpers are in `common/`.",
              "3. Check it:", "",
              "```bash",
              f"grader check {first}                 # every exercise of the day: correctness, then speed",
              f"grader check {first} --exercise NAME # one exercise (the names are in the table above)",
              f"grader watch {first}                 # checks again on every save",
              f"grader check {first} --seed 7 --case \"fp32 37x1\"   # only the case that failed, same inputs",
              "```", "",
              "   The verdict is PASS, FAIL (the first failing case, what was wrong and a hint), NOT IMPLEMENTED, "
              "BUILD ERROR (at your file:line) or COMPILED ONLY. Correct means correct in every dtype and shape the "
              "exercise lists, against an fp64 reference; fast enough means the geometric-mean speedup over the "
              "exercise's baseline, timed in the same run, reaches its threshold. Exit codes: 0 pass, 1 fail, 2 a "
              "usage or machine problem.",
              "4. When it fails: `grader sanitize dayNN` runs the cases under compute-sanitizer and names the line; "
              "`grader profile dayNN` shows where the time goes (Nsight Compute).", "",
              "Some exercises are timed against an earlier day's solution, which arrives in this repository when "
              "your instructor publishes it, after that day is due. Until then `grader check` checks their "
              "correctness only and says so.", "",
              *_process_groups(course, released),
              *(_on_slurm(first) if slurm else []),
              "## Handing in, and how it is graded", "",
              "Commit and push your work in `days/`. Your instructor grades each day with the same grader: only "
              "the sources of `days/dayNN/` are taken from your repository, while the course file, the problems "
              "(`tasks/`) and the thresholds are the instructor's. A day folder that is missing is graded as not "
              "implemented. An exercise's points are split over its dtypes; a dtype earns its share when all its "
              "cases pass and the exercise's speedup clears its threshold. An optional exercise's points are extra "
              "credit: left as released it costs nothing, and one graded on some GPUs only (day 11's Hopper track, "
              "sm_90) is skipped elsewhere, saying so.", "",
              *([f"Your GPU: compute capability {course.min_capability} or newer (an A100, an L4, an RTX 30xx or "
                 "newer); an older one grades nothing. `grader doctor` on the GPU machine says which steps it "
                 "grades.", ""] if course.min_capability != "0.0" else []),
              "## The leaderboard", "",
              "```bash",
              f"grader check {first} --ranked --json results.json",
              "```", "",
              "A ranked run checks the day twice, on inputs from a secret seed (`$GRADER_RANKED_SEED`, or a file "
              "named by `$GRADER_RANKED_SEED_FILE`); both runs must pass and the lower speedup counts. Your "
              "instructor may add hidden shapes to ranked runs. The leaderboard ranks ranked results, one board per "
              "day and GPU model, by the geometric mean of the exercises' speedups.", "",
              "## What is allowed", "",
              "The grader checks these, and a result that breaks one fails or is rejected:", "",
              "- Your kernels do the work. A library kernel (cuBLAS, cuDNN, ATen, CUTLASS, flash-attention), or a "
              "copy from or to the host that the exercise does not allow, fails with its name. A memset or a "
              "device-to-device copy is your op's own work.",
              "- Launch on the caller's current stream (`at::cuda::getCurrentCUDAStream()`); work on another stream "
              "fails.",
              "- Compute every result from the inputs of that call: every timed call gets new inputs and its output "
              "is checked, so a cached or replayed result fails.",
              "- Leave the inputs unchanged, and write every element of every output.",
              "- Write code for the problem, not for the tested shapes or seeds: ranked runs use a secret seed and "
              "may add hidden shapes.",
              "- Leave the timing alone: a speed above what the GPU can do (faster than a copy of the same bytes, "
              "above the tensor cores' peak) is rejected.", "",
              "## What is here", "",
              "- `days/`: a folder per released day, with its lesson and your code.",
              "- `common/`: headers the days share.",
              "- `tasks/`: each problem's inputs and fp64 reference, as the grader uses them.",
              "- `grader/`: the grader itself.",
              "- `course.yaml`: the course as data (shapes, tolerances, baselines, thresholds); "
              "[syllabus.md](syllabus.md) is rendered from it.", ""]
    return "\n".join(_wrapped(lines)) + "\n"


def _wrapped(lines: list[str], width: int = 110) -> list[str]:
    """Prose lines wrapped for a terminal (list items keep their indent); tables, headings and code as they are."""
    out, code = [], False
    for line in "\n".join(lines).split("\n"):
        if line.startswith("```"):
            code = not code
        if code or line.startswith(("```", "|", "#")) or len(line) <= width:
            out.append(line)
            continue
        m = re.match(r"(\s*(?:- |\d+\. )?\s*)", line)
        indent = " " * len(m.group(1))
        # a code span is never split: its spaces are held as NUL while the line is wrapped
        held = re.sub(r"`[^`]*`", lambda s: s.group(0).replace(" ", "\0"), line)
        out.extend(w.replace("\0", " ") for w in textwrap.wrap(held, width, subsequent_indent=indent,
                                                                break_on_hyphens=False, break_long_words=False))
    return out
