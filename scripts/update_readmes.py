"""Regenerates every measured table from a device run's results.json (written by scripts/device_run.sh): the
"Measured" block of each day's README, and each track's ladder (every step's solution as % of its ceiling, per
dtype and size) in tracks/<track>.md. A trimmed copy of the results is merged into measured/<track>-<gpu>.json,
so a run that covered only some days keeps the others, and a run of some exercises of a day (`grader check
--exercise`) keeps the day's others, each table dated by the run it came from. A ladder stays on the GPU it is on
(--ladder moves it to this run's). Tables are never typed.

    python3 scripts/update_readmes.py /work/.device/N/results.json
    python3 scripts/update_readmes.py RESULTS --only day11.matmul_cute --out measured/routes-h200.json

--block NAME --how TEXT writes another build's tables (device_run.sh VARIANTS) into the README's NAME block, and
its results into measured/<day>/NAME-<gpu>.json, which can be given back as RESULTS to rewrite the block.

--only keeps those exercises' results alone, merged into --out, and touches no README: a run of a few steps on
another GPU than the tables' adds its figures without replacing the tables (the lessons cite them through claims).
"""
import importlib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
KEEP = ("index", "kind", "dtype", "label", "ok", "category", "rel_l2", "max_abs", "time", "baseline_time",
        "library_time", "speedup", "vs_library", "gbps", "pct_of_copy", "tflops", "ceiling", "pct_of_ceiling",
        "ceiling_tflops", "scratch_bytes")


def replace_block(path: Path, name: str, body: str) -> bool:
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    text = path.read_text() if path.exists() else ""
    if begin not in text or end not in text:
        print(f"{path.relative_to(ROOT)}: no {name} markers, skipped")
        return False
    path.write_text(re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda m: f"{begin}\n{body}\n{end}", text,
                           flags=re.S))
    print(f"updated {path.relative_to(ROOT)}")
    return True


def ladder_gpu(readme: Path) -> str | None:
    """The GPU a track's ladder is on now, from its first line ("...; NVIDIA H200, 2026-11-21, from ...")."""
    m = re.search(r"<!-- ladder:begin -->\n.*?; (.+?), \d{4}-\d{2}-\d{2}, from ", readme.read_text())
    return m.group(1) if m else None


def gpu_slug(name: str) -> str:
    """"NVIDIA H100 80GB HBM3" -> "h100", "NVIDIA H200" -> "h200": the model, not the memory."""
    words = [w for w in name.split() if w.upper() not in ("NVIDIA", "TESLA")]
    return (words[0] if words else name).lower()


def correctness_counts(cases):
    corr = {}
    for c in cases:
        if c["kind"] == "correctness":
            ok = corr.setdefault(c["dtype"], [0, 0])
            ok[0] += bool(c["ok"])
            ok[1] += 1
    return corr


def _extra_checks(case: dict) -> dict:
    """A case's passing extra checks (opcheck, training, ...), name and message: what an untimed table reports."""
    kept = [{"name": k["name"], "ok": k["ok"], "message": k["message"]} for k in case.get("checks", [])
            if k["ok"] and "max abs err" not in k["message"] and k["name"] != "determinism"]
    return {"checks": kept} if kept else {}


def untimed_table(data: dict, ex: dict, gpu: str, when: str, several: bool, how: str = "") -> list[str]:
    lines = [f"**{ex['exercise']}**", ""] if several else []
    lines += [f"Measured on an {gpu}, {ex.get('date') or when}, by `grader check {data['day']} --solution`{how} (not timed: correctness "
              "and checks).", "", "| dtype | cases passed | worst rel L2 | worst max abs |", "|---|---|---:|---:|"]
    for dt, (ok, n) in correctness_counts(ex["cases"]).items():
        cases = [c for c in ex["cases"] if c["kind"] == "correctness" and c["dtype"] == dt]
        rel = max((c.get("rel_l2", 0.0) for c in cases), default=0.0)
        mx = max((c.get("max_abs", 0.0) for c in cases), default=0.0)
        lines.append(f"| {dt} | {ok}/{n} | {rel:.1e} | {mx:.1e} |")
    notes = {}
    for c in ex["cases"]:  # the first passing report of each extra check, per dtype
        for k in c.get("checks", []):
            if k["ok"] and "max abs err" not in k["message"] and k["name"] != "determinism":
                notes.setdefault((k["name"], c["dtype"]), k["message"])
    if notes:
        lines += ["", "| check | dtype | report |", "|---|---|---|"]
        lines += [f"| {name} | {dt} | {msg.replace('|', chr(92) + '|')} |" for (name, dt), msg in notes.items()]
    lines += ["", f"Verdict: {ex['status']}.", ""]
    return lines


def drop_unrun(data: dict) -> list[str]:
    """Removes from a day's results the exercises the machine could not run (a package it lacks: env_error) and
    returns their names: they get no table from this run; their figures come from a machine that has the package
    (--only)."""
    skipped = [e["exercise"] for e in data["exercises"] if e.get("status") == "env_error"]
    data["exercises"] = [e for e in data["exercises"] if e.get("status") != "env_error"]
    return skipped


def merge_exercises(stored: dict | None, data: dict, order: list[str]) -> dict:
    """A day's results for its README and measured/: the run's exercises, each stamped with the run's date, over the
    stored ones of the same day and GPU. A run of some exercises (`grader check --exercise`) replaces theirs and
    keeps the others, with the dates they were measured on; exercises course.yaml no longer has are dropped."""
    when = data.get("date")
    for ex in data["exercises"]:
        ex.setdefault("date", when)
    run = {ex["exercise"] for ex in data["exercises"]}
    kept = [{**ex, "date": ex.get("date") or stored.get("date")} for ex in (stored or {}).get("exercises", [])
            if ex["exercise"] not in run and ex["exercise"] in order]
    exercises = sorted(kept + data["exercises"],
                       key=lambda ex: order.index(ex["exercise"]) if ex["exercise"] in order else len(order))
    dates = [ex["date"] for ex in exercises if ex.get("date")]
    return {**data, "exercises": exercises, **({"date": max(dates)} if dates else {})}


def day_table(data: dict, exercises: dict, gpu: str, when: str, how: str = "") -> str:
    lines = []
    # Scratch memory is shown for every exercise of a day where any op allocates some (naive vs flash: 256 vs 0).
    mem_col = any(c.get("scratch_bytes", 0) > 0 for ex in data["exercises"] for c in ex["cases"]
                  if c["kind"] == "benchmark")
    for ex in data["exercises"]:
        spec = exercises[ex["exercise"]]
        if spec.baseline is None:  # untimed: correctness per dtype, and what the extra checks reported
            lines += untimed_table(data, ex, gpu, when, several=len(data["exercises"]) > 1, how=how)
            continue
        lib = getattr(importlib.import_module(spec.task), "LIBRARY", "library")
        base = spec.baseline.describe()
        base = lib if base == "library" else base
        bench = [c for c in ex["cases"] if c["kind"] == "benchmark" and "time" in c]
        compute = any("tflops" in c for c in bench)
        if compute:
            ceiling = next((c["ceiling"] for c in bench if "ceiling" in c), None)
            base = ceiling if base == "ceiling" else base
            rate_cols, peak = "TFLOP/s", f"% of {ceiling}" if ceiling else None
        else:
            rate_cols, peak = "GB/s", "% of copy"
        if len(data["exercises"]) > 1:
            lines += [f"**{ex['exercise']}**", ""]
        lines.append(f"Measured on an {gpu}, {ex.get('date') or when}, by `grader check {data['day']} --solution`{how} (median of "
                     f"CUDA-event timings, L2 flushed before each call; baseline: {base}).")
        lines.append("")
        lib_col = base != lib
        lines.append(f"| shape | dtype | correct | time (µs) | {rate_cols} |" + (f" {peak} |" if peak else "")
                     + f" speedup vs {base} |" + (f" vs {lib} |" if lib_col else "") + (" scratch MiB |" if mem_col else ""))
        lines.append("|---|---|---|---:|---:|" + ("---:|" if peak else "") + "---:|" + ("---:|" if lib_col else "")
                     + ("---:|" if mem_col else ""))
        corr = correctness_counts(ex["cases"])
        for c in bench:
            ok = corr.get(c["dtype"], [0, 0])
            rate = f"{c['tflops']:.1f}" if compute else f"{c['gbps']:,.0f}"
            pct = c.get("pct_of_ceiling", c.get("pct_of_copy"))
            pct = "—" if pct is None else f"{pct:.0%}"
            lines.append(f"| {c['label']} | {c['dtype']} | {ok[0]}/{ok[1]} | {c['time']['median_ms'] * 1e3:,.1f} | "
                         f"{rate} |" + (f" {pct} |" if peak else "") + f" {c['speedup']:.2f}x |"
                         + (f" {c['vs_library']:.2f}x |" if lib_col else "")
                         + (f" {c.get('scratch_bytes', 0) / 2**20:,.0f} |" if mem_col else ""))
        lines.append("")
        bar = f"**{ex['threshold']:g}x** (verdict: {ex['status']})"
        if spec.threshold is not None and spec.threshold != ex["threshold"]:  # course.yaml's bar moved since the run
            # what the run's speedup says against today's bar, beside the verdict it got (correctness is unchanged)
            clears = "clears" if ex["speedup"] >= spec.threshold else "does not clear"
            bar = (f"now **{spec.threshold:g}x** in course.yaml, which this run's {ex['speedup']:.2f}x {clears}; the "
                   f"run was graded against {ex['threshold']:g}x (verdict: {ex['status']})")
        lines.append(f"Geometric-mean speedup over the baseline: **{ex['speedup']:.2f}x**; the threshold is {bar}.")
        lines.append("")
    return "\n".join(lines).rstrip()


def ladder(track_days: dict, course, gpu: str) -> str:
    """One row per (step, dtype); one column per benchmark shape; cell = % of the ceiling and the rate."""
    rows, shapes, when = [], [], set()
    for day_id in sorted(track_days):
        data = track_days[day_id]
        when.add(data.get("date", "?"))
        for ex in data["exercises"]:
            bench = [c for c in ex["cases"] if c["kind"] == "benchmark" and "time" in c]
            for c in bench:
                if c["label"] not in shapes:
                    shapes.append(c["label"])
            for dt in dict.fromkeys(c["dtype"] for c in bench):
                cells = {c["label"]: c for c in bench if c["dtype"] == dt}
                rows.append((f"{day_id} {ex['exercise']}", course.day(day_id).title, dt, cells))
    if not rows:
        return "No measurements yet: the instructors' next run on a GPU writes this table."
    shapes.sort(key=lambda s: [int(x) for x in re.findall(r"\d+", s)])
    compute = any("tflops" in c for _, _, _, cells in rows for c in cells.values())
    ceiling = next((c.get("ceiling") for _, _, _, cells in rows for c in cells.values() if "ceiling" in c), "copy")
    unit = "TFLOP/s" if compute else "GB/s"
    out = [f"Each step's solution as **% of {ceiling}** (timed in the same run) and, after the dot, its {unit}; "
           f"{gpu}, {', '.join(sorted(when))}, from `grader check --solution` on the instructors' GPU machine.", "",
           "| step | | dtype | " + " | ".join(shapes) + " |", "|---|---|---|" + "---:|" * len(shapes)]
    for step, title, dt, cells in rows:
        vals = []
        for s in shapes:
            c = cells.get(s)
            if c is None:
                vals.append("—")
            elif compute:
                vals.append(f"{c['pct_of_ceiling']:.0%} · {c['tflops']:.1f}")
            else:
                vals.append(f"{c['pct_of_copy']:.0%} · {c['gbps']:,.0f}")
        out.append(f"| {step} | {title} | {dt} | " + " | ".join(vals) + " |")
    return "\n".join(out)


def _trim(data: dict) -> None:
    for ex in data["exercises"]:
        ex["cases"] = [{**{k: v for k, v in c.items() if k in KEEP}, **_extra_checks(c)} for c in ex["cases"]]
        for k in ("compile", "builds", "log", "source"):
            ex.pop(k, None)


def only(bundle: dict, names: list[str], out: Path) -> None:
    """The named exercises' trimmed results (dayNN.exercise), merged into `out` by day and exercise."""
    merged = json.loads(out.read_text()) if out.exists() else {}
    for name in names:
        day_id, _, exercise = name.partition(".")
        data = bundle.get(day_id)
        ex = next((e for e in (data or {}).get("exercises", []) if e["exercise"] == exercise), None)
        if ex is None:
            sys.exit(f"{name}: not in the results")
        kept = {**data, "exercises": [ex]}
        _trim(kept)
        others = [e for e in merged.get(day_id, {}).get("exercises", []) if e["exercise"] != exercise]
        merged[day_id] = {**kept, "exercises": others + kept["exercises"]}  # the day's run details: the newest
    out.write_text(json.dumps(dict(sorted(merged.items())), indent=1) + "\n")
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")


def variant_table(day_id: str, data: dict, course) -> str:
    """A variant's table (its data trimmed, with the `how` variant_tables kept in it)."""
    _trim(data)
    how = data.get("how", "")
    return day_table(data, {e.name: e for e in course.day(day_id).exercises}, data["exercises"][0]["info"].get(
        "gpu", "unknown GPU"), data.get("date") or "unknown date", f" {how}" if how else "")


def variant_tables(bundle: dict, block: str, how: str) -> None:
    """Each day's table into its README's `block`, and the trimmed results, with `how`, into
    measured/<day>/<block>-<gpu>.json (given back without --how, the file's own `how` is used)."""
    from grader.course import load_course

    course = load_course(ROOT / "course.yaml")
    for day_id, data in bundle.items():
        gpu = data["exercises"][0]["info"].get("gpu", "unknown GPU")
        if how:
            data["how"] = how
        table = variant_table(day_id, data, course)
        if not replace_block(ROOT / "days" / day_id / "README.md", block, table):
            sys.exit(f"days/{day_id}/README.md has no {block} block: add its markers where the table belongs")
        out = ROOT / "measured" / day_id / f"{block}-{gpu_slug(gpu)}.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps({day_id: data}, indent=1) + "\n")
        print(f"wrote {out.relative_to(ROOT)}")


def main():
    import argparse

    from grader.course import load_course

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("--only", nargs="+", help="these exercises (dayNN.name) alone, into --out; no README changes")
    ap.add_argument("--out", type=Path, help="with --only: the file to merge them into")
    ap.add_argument("--block", help="write each day's table into this README block instead of 'measured' (another "
                                    "build of the solution: a VARIANTS run of device_run.sh), and its results into "
                                    "measured/<day>/<block>-<gpu>.json (which this script also reads back)")
    ap.add_argument("--ladder", action="store_true", help="rewrite the tracks' ladders from this run even where they "
                                                         "are on another GPU (they stay on theirs otherwise)")
    ap.add_argument("--how", default="", help="with --block: how that build differs, for the table's first line "
                                              "(e.g. 'built with -DFA20_HOPPER=0, the mma.sync walk')")
    args = ap.parse_args()
    bundle = json.loads(args.results.read_text())
    if args.block:
        return variant_tables(bundle, args.block, args.how)
    if args.only:
        if not args.out:
            ap.error("--only needs --out")
        return only(bundle, args.only, args.out.resolve())
    course = load_course(ROOT / "course.yaml")
    per_track: dict[tuple[str, str], dict] = {}
    for day_id, data in bundle.items():
        spec = course.day(day_id)
        gpu = data["exercises"][0]["info"].get("gpu", "unknown GPU")
        skipped = drop_unrun(data)
        if skipped:
            print(f"{day_id}: not run on this machine, left out: {', '.join(skipped)}")
        _trim(data)
        stored_file = ROOT / "measured" / f"{spec.track}-{gpu_slug(gpu)}.json"
        stored = json.loads(stored_file.read_text()).get(day_id) if stored_file.exists() else None
        data = merge_exercises(stored, data, [e.name for e in spec.exercises])
        when = data.get("date") or "unknown date"
        replace_block(ROOT / "days" / day_id / "README.md", "measured",
                      day_table(data, {e.name: e for e in spec.exercises}, gpu, when))
        per_track.setdefault((spec.track, gpu), {})[day_id] = data
    for (track, gpu), days in per_track.items():
        out = ROOT / "measured" / f"{track}-{gpu_slug(gpu)}.json"
        merged = json.loads(out.read_text()) if out.exists() else {}
        merged.update(days)
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps(dict(sorted(merged.items())), indent=1) + "\n")
        print(f"wrote {out.relative_to(ROOT)}")
        readme = ROOT / "tracks" / f"{track}.md"
        if readme.exists():
            shown = ladder_gpu(readme)
            if shown and shown != gpu and not args.ladder:  # a run on another GPU keeps the ladder on its own
                print(f"tracks/{track}.md: the ladder stays on the {shown} (this run: {gpu}; --ladder moves it)")
            else:
                replace_block(readme, "ladder", ladder(merged, course, gpu))


if __name__ == "__main__":
    main()
