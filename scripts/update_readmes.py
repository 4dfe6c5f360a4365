"""Regenerates the "Measured" table of every ready day's README from a device run's results.json (written by
scripts/device_run.sh), and keeps a trimmed copy of those results under measured/. Tables are never typed.

    python3 scripts/update_readmes.py /work/.device/N/results.json
"""
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- measured:begin -->", "<!-- measured:end -->"
KEEP = ("index", "kind", "dtype", "label", "ok", "category", "rel_l2", "max_abs", "time", "baseline_time",
        "library_time", "speedup", "vs_library", "gbps", "pct_of_copy", "tflops")


def table(day: str, data: dict, gpu: str, when: str) -> str:
    lines = []
    for ex in data["exercises"]:
        base = ex["baseline_name"]
        lines.append(f"Measured on an {gpu}, {when}, by `grader check {day} --solution` "
                     f"(median of CUDA-event timings, L2 flushed before each call; baseline: {base}).")
        lines.append("")
        lib_col = base != "torch.softmax"  # a separate column only when the baseline is not the library itself
        lines.append(f"| shape | dtype | correct | time (µs) | GB/s | % of copy | speedup vs {base} |"
                     + (" vs torch.softmax |" if lib_col else ""))
        lines.append("|---|---|---|---:|---:|---:|---:|" + ("---:|" if lib_col else ""))
        corr = {}
        for c in ex["cases"]:
            if c["kind"] == "correctness":
                ok = corr.setdefault(c["dtype"], [0, 0])
                ok[0] += bool(c["ok"])
                ok[1] += 1
        for c in ex["cases"]:
            if c["kind"] != "benchmark" or "time" not in c:
                continue
            ok = corr[c["dtype"]]
            lines.append(f"| {c['label']} | {c['dtype']} | {ok[0]}/{ok[1]} | {c['time']['median_ms'] * 1e3:,.1f} | "
                         f"{c['gbps']:,.0f} | {c['pct_of_copy']:.0%} | {c['speedup']:.2f}x |"
                         + (f" {c['vs_library']:.2f}x |" if lib_col else ""))
        lines.append("")
        lines.append(f"Geometric-mean speedup over the baseline: **{ex['speedup']:.2f}x**; the threshold is "
                     f"**{ex['threshold']:g}x** (verdict: {ex['status']}).")
    return "\n".join(lines)


def main():
    src = Path(sys.argv[1])
    bundle = json.loads(src.read_text())
    from grader.course import load_course

    course = load_course(ROOT / "course.yaml")
    trimmed = {}
    for day, data in bundle.items():
        ex0 = data["exercises"][0]
        gpu = ex0["info"].get("gpu", "unknown GPU")
        when = data.get("date") or "unknown date"
        spec = course.day(day)
        for ex, e in zip(data["exercises"], spec.exercises):
            ex["baseline_name"] = f"{e.baseline.solution} solution" if e.baseline.solution else "torch.softmax"
            ex["cases"] = [{k: v for k, v in c.items() if k in KEEP} for c in ex["cases"]]
            ex.pop("compile", None)
        trimmed[day] = data
        readme = ROOT / "days" / day / "README.md"
        text = readme.read_text()
        if BEGIN not in text or END not in text:
            print(f"{readme}: no measured markers, skipped")
            continue
        new = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END),
                     lambda m: f"{BEGIN}\n{table(day, data, gpu, when)}\n{END}", text, flags=re.S)
        readme.write_text(new)
        print(f"updated {readme.relative_to(ROOT)}")
    out = ROOT / "measured" / f"softmax-{gpu.split()[-1].lower()}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(trimmed, indent=1) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
