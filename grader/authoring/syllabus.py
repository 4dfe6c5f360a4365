"""syllabus.md, rendered from course.yaml (never edited by hand; CI checks it is current).

Each ready day shows its release and due dates, and the hours its mandatory path asks (course.yaml's `hours:`). For
a student repository (render's manifest: its .release.json) a day the release does not hold yet says "not released
yet (on DATE)" and links no lesson, which is not there yet. The file does not depend on today's date, so that it
stays current between releases."""
from __future__ import annotations

from grader import gpu_support
from grader.authoring import semester
from grader.course import Course

HEADER = """# Syllabus

<!-- Generated from course.yaml by `grader syllabus`: edit course.yaml, not this file. -->

{pitch}
"""

HOURS = ("Hours: what the day's mandatory path (its lesson, and every graded step that is not optional) asks of a "
         "strong student, estimated from the lesson and the stubs; a day's work is about 8.")


def render(course: Course, manifest: dict | None = None) -> str:
    """The syllabus of the course repository, or (manifest) of the student repository that release made."""
    out = [HEADER.format(pitch=course.pitch.replace("{title}", course.title)).rstrip(), ""]
    out.append("| day | title | track | status | release | due | hours | after | topics |")
    out.append("|---|---|---|---|---|---|---:|---|---|")
    for d in course.days:
        title = f"**{d.title}** (mandatory)" if d.mandatory else d.title
        st = semester.state(d, None, manifest)
        status = st.label if st.status in (semester.PLANNED, semester.NOT_RELEASED) else d.status
        link = f"[{d.id}](days/{d.id}/README.md)" if d.status == "ready" and status == d.status else d.id
        release, due = (x.isoformat() if x and d.status == "ready" else "-" for x in (d.release, d.due))
        hours = f"{d.hours:g}" if d.hours else "-"
        out.append(f"| {link} | {title} | {d.track} | {status} | {release} | {due} | {hours} | "
                   f"{', '.join(d.prerequisites) or '-'} | {'; '.join(d.topics)} |")
    out += ["", HOURS, "", "## Graded exercises", "",
            "The exercise column is the name `grader check dayNN --exercise NAME` takes; the signature is the op's.", ""]
    out.append("| day | exercise | signature | dtypes | baseline | needed speedup | points |")
    out.append("|---|---|---|---|---|---:|---:|")
    for d in course.days:
        for e in d.exercises:
            base = e.baseline.describe() if e.baseline else "not timed"
            need = f"{e.threshold:g}x" if e.threshold else "-"
            out.append(f"| {d.id} | {e.name} | `{e.signature.split('#')[0].strip()}` | {', '.join(e.dtypes)} | "
                       f"{base} | {need} | {e.points}{_optional(e)} |")
    return "\n".join(out) + "\n"


def _optional(e) -> str:
    """How the points column marks a step outside the day's mandatory path: optional, and on which GPUs it is
    graded when it needs one generation (day 11's wgmma steps: the Hopper track)."""
    if not e.optional:
        return ""
    if e.capability:
        return f" (optional; graded on {gpu_support.archs(e)} only)"
    return " (optional)"
