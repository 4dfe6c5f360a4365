"""syllabus.md, rendered from course.yaml (never edited by hand; CI checks it is current)."""
from __future__ import annotations

from grader.course import Course

HEADER = """# Syllabus

<!-- Generated from course.yaml by `grader syllabus`: edit course.yaml, not this file. -->

{pitch}
"""


def render(course: Course) -> str:
    out = [HEADER.format(pitch=course.pitch.replace("{title}", course.title)).rstrip(), ""]
    out.append("| day | title | track | status | after | topics |")
    out.append("|---|---|---|---|---|---|")
    for d in course.days:
        title = f"**{d.title}** (mandatory)" if d.mandatory else d.title
        link = f"[{d.id}](days/{d.id}/README.md)" if d.status == "ready" else d.id
        out.append(f"| {link} | {title} | {d.track} | {d.status} | {', '.join(d.prerequisites) or '-'} | "
                   f"{'; '.join(d.topics)} |")
    out += ["", "## Graded exercises", "",
            "The exercise column is the name `grader check dayNN --exercise NAME` takes; the signature is the op's.", ""]
    out.append("| day | exercise | signature | dtypes | baseline | needed speedup | points |")
    out.append("|---|---|---|---|---|---:|---:|")
    for d in course.days:
        for e in d.exercises:
            base = e.baseline.describe() if e.baseline else "not timed"
            need = f"{e.threshold:g}x" if e.threshold else "-"
            out.append(f"| {d.id} | {e.name} | `{e.signature.split('#')[0].strip()}` | {', '.join(e.dtypes)} | "
                       f"{base} | {need} | {e.points}{' (optional)' if e.optional else ''} |")
    return "\n".join(out) + "\n"
