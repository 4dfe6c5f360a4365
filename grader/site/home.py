"""The site's home page, for students, made from course.yaml: what the course is, how to start on a GPU machine
or on one without a GPU, the days as a graph, and where the leaderboard is (or will be). The repository's
README, written for whoever maintains the course, is a page of its own."""
from __future__ import annotations

from collections.abc import Callable

from grader.course import Course
from grader.site import graph

CUDA_TORCH = "pip install torch --index-url https://download.pytorch.org/whl/cu130"
CPU_TORCH = "pip install torch --index-url https://download.pytorch.org/whl/cpu"


def home_page(course: Course, day_link: Callable[[str], str], svg_href: Callable[[str], str],
              repository_page: str | None, leaderboard_page: str | None = None) -> list[str]:
    """The page's markdown lines. day_link: a day's page as a markdown link target; svg_href: as a link in the
    graph's raw HTML (relative to the home page); repository_page: the README's page, if there is one."""
    ready = [d for d in course.days if d.status == "ready"]
    mandatory = [d.id for d in course.days if d.mandatory]
    first = ready[0].id if ready else course.days[0].id
    tracks = list(dict.fromkeys(d.track for d in course.days))
    pitch = course.pitch.replace("{title}", course.title).strip()
    lines = [f"# {course.title}", ""]
    if pitch:
        lines += [pitch, ""]
    lines += [
        f"{len(course.days)} days in {len(tracks)} tracks ({', '.join(tracks)}), {len(ready)} of them ready"
        + (f"; {', '.join(mandatory)} are mandatory." if mandatory else "."), "",
        "## Start", "",
        "Clone the repository, then install PyTorch and the grader. On a machine with an NVIDIA GPU:", "",
        "```bash", CUDA_TORCH + "   # or the cuXYZ index of your CUDA",
        f"pip install -e . && grader doctor && grader check {first}", "```", "",
        "On a machine without a GPU (a laptop, say), install the CPU build instead. You still need `nvcc` (the "
        "CUDA toolkit; no driver):", "",
        "```bash", CPU_TORCH, f"pip install -e . && grader doctor && grader check {first}", "```", "",
        "`grader doctor` then says **compile-only mode**: `grader check` compiles your kernels for sm_80 and sm_90, "
        "shows any compiler error at its file and line and ptxas's report for each kernel (registers, shared "
        "memory, spills), but cannot run them. Correctness and speed are checked on a GPU machine.", "",
        *([f"Which GPUs grade the course: compute capability {course.min_capability} or newer (an older GPU grades "
           "nothing, and `grader doctor` says so); a step that needs one generation, such as day 11's optional "
           "Hopper track, is graded on that GPU only and skipped elsewhere, saying so. `grader doctor` lists what "
           "your GPU grades" + (f", and the [table of GPUs]({repository_page}) sums it up." if repository_page
                                else "."), ""]
          if course.min_capability != "0.0" else []),
        f"Then open [{first}]({day_link(first)})'s lesson, complete the stub in `days/{first}/` and run "
        f"`grader check {first}` again; the graph below shows the order after that.", "",
        "## The days", "",
        "Each day builds on the days it points from. Click a day to open its lesson; dashed days are planned.", "",
        graph.legend_html(course), "",
        f'<div class="dep-graph-wrap">{graph.render_svg(course, svg_href)}</div>', "",
        "## Leaderboard", "",
    ]
    if leaderboard_page:
        lines += [f"The [leaderboard]({leaderboard_page}) ranks ranked runs, `grader check dayNN --ranked`, per day "
                  "and GPU model by the geometric-mean speedup over the baseline timed in the same run.", ""]
    elif course.leaderboard:
        lines += [f"The leaderboard is at <{course.leaderboard}>. An entry is a ranked run, `grader check dayNN "
                  "--ranked`: two runs on inputs from a secret seed, both of which must pass.", ""]
    else:
        lines += ["The leaderboard will be published on this site. An entry will be a ranked run, `grader check "
                  "dayNN --ranked`: two runs on inputs from a secret seed, both of which must pass; until then, "
                  "`grader list` shows your own results.", ""]
    if repository_page:
        lines += ["## More", "",
                  f"[How the grader works]({repository_page}) (what a check does, how it keeps a verdict honest, "
                  "and the course's tooling), the [syllabus](/syllabus.md) and the [glossary](/glossary.md).", ""]
    return lines
