"""A check's results in the formats the tools instructors use read: Gradescope's autograder results.json, JUnit XML
(CI systems, GitHub's test reporters) and GitHub Classroom's autograding result.

One test per exercise × dtype, worth the exercise's points (course.yaml) split evenly over its dtypes. A dtype's test
passes when every case of that dtype passed and nothing failed the exercise as a whole (a build error, a speedup
under the threshold, a required tool's report): the course's verdict is per exercise, these formats only split it
so that a student sees which dtype lost points.

An optional exercise (`optional`: the names; day 11's Hopper track) is extra credit: its tests have a maximum of 0
and score their points when passed; left as released, or skipped on a GPU that does not grade it, they count as
neither passed nor failed (`skipped`).
"""
from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree as ET

from grader.check import error_map
from grader.paths import write_text_atomic
from grader.verdicts import Status

FORMATS = ("gradescope", "junit", "classroom")
FILES = {"gradescope": "results.json", "junit": "junit.xml", "classroom": "classroom.json"}


UNATTEMPTED = (Status.NOT_IMPLEMENTED, Status.SKIPPED)


def _tests(doc: dict, points: dict[str, int], optional=frozenset()) -> list[dict]:
    """[{name, dtype, exercise, passed, skipped, score, max_score, output}] for every exercise × dtype of the check."""
    out = []
    for ex in doc["exercises"]:
        extra = ex["exercise"] in optional
        cases = ex.get("cases") or []
        dtypes = list(dict.fromkeys(c["dtype"] for c in cases if c.get("dtype"))) or list(ex.get("dtypes") or [])
        dtypes = dtypes or ["all"]
        failing = [c for c in cases if not c.get("ok")]
        # A failure that belongs to no case: nothing ran (a build error, no GPU), or the speedup missed the threshold.
        whole = ex["status"] != Status.PASS and not failing
        worth = points.get(ex["exercise"], 0) / len(dtypes)
        max_each = 0.0 if extra else worth
        skipped = extra and ex["status"] in UNATTEMPTED
        for dt in dtypes:
            mine = [c for c in cases if c.get("dtype") == dt]
            bad = [c for c in mine if not c.get("ok")]
            passed = bool(mine) and not bad and not whole
            if skipped:
                note = "optional: " + (ex.get("message") or ex["status"])
            elif passed:
                note = f"all {len(mine)} {dt} case(s) passed"
            elif bad:
                note = f"{len(bad)} of {len(mine)} {dt} case(s) failed; first: {bad[0].get('label', '?')}: " \
                       f"{bad[0].get('message', '')}"
            else:
                note = ex.get("message", ex["status"])
            mapped = error_map.choose(bad)
            # where the case whose map says the most is wrong, as the terminal draws it (plain text: each state a
            # character)
            drawn = ([f"{mapped.get('label', '?')}:", *error_map.text(mapped["error_map"])] if mapped else [])
            out.append({"name": f"{doc['day']}.{ex['exercise']} [{dt}]", "exercise": ex["exercise"], "dtype": dt,
                        "passed": passed, "skipped": skipped, "score": round(worth if passed else 0.0, 4),
                        "max_score": round(max_each, 4),
                        "output": f"{ex['status']}: {ex.get('message', '')}\n\n{note}", "map": drawn})
    return out


def exercise_scores(doc: dict, points: dict[str, int], optional=frozenset()) -> dict[str, tuple[float, float]]:
    """exercise -> (score, max score), by the same per-dtype rule as the formats above (for a gradebook)."""
    out: dict[str, tuple[float, float]] = {}
    for t in _tests(doc, points, optional):
        score, top = out.get(t["exercise"], (0.0, 0.0))
        out[t["exercise"]] = (round(score + t["score"], 4), round(top + t["max_score"], 4))
    return out


def gradescope(doc: dict, points: dict[str, int], visibility: str = "visible", optional=frozenset()) -> dict:
    tests = _tests(doc, points, optional)
    board = [{"name": f"{doc['day']}.{ex['exercise']} speedup", "value": round(ex["speedup"], 4), "order": "desc"}
             for ex in doc["exercises"] if ex.get("speedup") is not None]
    info = next((ex.get("info") for ex in doc["exercises"] if ex.get("info")), {}) or {}
    lines = [f"**{doc['day']}**: " + ", ".join(f"{ex['exercise']} {ex['status']}" for ex in doc["exercises"])]
    if info.get("gpu"):
        lines.append(f"GPU: {info['gpu']}, torch {info.get('torch', '?')}")
    result = {"score": round(sum(t["score"] for t in tests), 4), "output": "\n\n".join(lines),
              "output_format": "md", "visibility": visibility,
              "tests": [{"name": t["name"], "score": t["score"], "max_score": t["max_score"],
                         "status": "passed" if t["passed"] or t["skipped"] else "failed",
                         "output": t["output"] + ("\n\n```\n" + "\n".join(t["map"]) + "\n```" if t["map"] else ""),
                         "output_format": "md", "visibility": visibility} for t in tests],
              "extra_data": {"day": doc["day"], "ranked": bool(doc.get("ranked")),
                             **({"seed_sha256": doc["seed_sha256"]} if doc.get("seed_sha256") else {})}}
    if board:
        result["leaderboard"] = board
    return result


def _failed(t: dict) -> bool:
    return not t["passed"] and not t["skipped"]


def junit(doc: dict, points: dict[str, int], optional=frozenset()) -> str:
    tests = _tests(doc, points, optional)
    suites = ET.Element("testsuites", name=f"grader check {doc['day']}", tests=str(len(tests)),
                        failures=str(sum(_failed(t) for t in tests)), errors="0")
    for ex in doc["exercises"]:
        mine = [t for t in tests if t["exercise"] == ex["exercise"]]
        suite = ET.SubElement(suites, "testsuite", name=f"{doc['day']}.{ex['exercise']}", tests=str(len(mine)),
                              failures=str(sum(_failed(t) for t in mine)), errors="0",
                              skipped=str(sum(t["skipped"] for t in mine)))
        for t in mine:
            case = ET.SubElement(suite, "testcase", name=t["name"], classname=f"{doc['day']}.{ex['exercise']}")
            if t["skipped"]:
                ET.SubElement(case, "skipped", message=t["output"].splitlines()[-1][:500])
            elif not t["passed"]:
                ET.SubElement(case, "failure", message=t["output"].splitlines()[0][:500],
                              type=ex["status"]).text = "\n\n".join([t["output"], *(["\n".join(t["map"])] if t["map"] else [])])
            ET.SubElement(case, "system-out").text = f"score {t['score']} of {t['max_score']}"
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def classroom(doc: dict, points: dict[str, int], optional=frozenset()) -> dict:
    tests = _tests(doc, points, optional)
    return {"version": 1, "status": "fail" if any(_failed(t) for t in tests) else "pass",
            "max_score": round(sum(t["max_score"] for t in tests), 4),
            "tests": [{"name": t["name"], "status": "fail" if _failed(t) else "pass", "score": t["score"],
                       "message": t["output"].splitlines()[0][:500], "line_no": 0, "execution_time": "0s",
                       **({"output": "\n".join([t["output"], "", *t["map"]])} if t["map"] else {})}
                      for t in tests]}


def write(doc: dict, points: dict[str, int], out_dir: Path, formats=FORMATS, optional=frozenset()) -> list[Path]:
    """The check's results in each format, into out_dir (results.json, junit.xml, classroom.json)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in formats:
        path = out_dir / FILES[fmt]
        if fmt == "junit":
            text = junit(doc, points, optional)
        elif fmt == "gradescope":
            text = json.dumps(gradescope(doc, points, optional=optional), indent=1)
        else:
            text = json.dumps(classroom(doc, points, optional), indent=1)
        write_text_atomic(path, text)
        written.append(path)
    return written
