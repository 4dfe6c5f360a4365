"""The roofline: what a kernel's counters say about it against the ceilings measured on this GPU, and the plot.

Pure functions of numbers (no GPU, no ncu), so they are tested on the CPU with fixture data.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

from grader.errors import GraderError
from grader.profile.ncu import FLOP_WEIGHTS

# Kernel markers: none of the roofs' colours.
KERNEL_COLORS = ("tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan", "tab:gray")
FAR_BELOW = 0.4  # under this fraction of the roof above it, neither bandwidth nor FP32 throughput is the limit


@dataclass(frozen=True)
class Ceilings:
    gpu: str
    memory_Bps: float  # device-to-device copy of a large buffer, bytes read + written per second
    ffma_flops: float  # FP32 FFMA microbenchmark
    cublas_flops: float | None = None  # cuBLAS fp32 GEMM, 8192^3, TF32 off: a practical compute line

    @property
    def ridge(self) -> float:
        """The arithmetic intensity (FLOP/byte) where the memory roof meets the FFMA roof."""
        return self.ffma_flops / self.memory_Bps

    def roof(self, ai: float) -> float:
        return min(self.ffma_flops, ai * self.memory_Bps)

    @classmethod
    def from_dict(cls, d: dict) -> Ceilings:
        return cls(d["gpu"], float(d["memory_Bps"]), float(d["ffma_flops"]), d.get("cublas_flops"))


@dataclass
class Summary:
    duration_s: float | None
    flops: float | None
    dram_bytes: float | None
    flop_per_s: float | None
    dram_Bps: float | None
    ai: float | None  # FLOP per DRAM byte; inf when the kernel touched no DRAM
    bound: str  # memory | compute | unknown: the side of the ridge the kernel is on
    pct_of_roof: float | None  # achieved FLOP/s over the roof at its intensity
    pct_of_memory: float | None  # DRAM bandwidth over the measured copy bandwidth
    pct_of_ffma: float | None
    pct_of_cublas: float | None

    def as_dict(self):
        d = asdict(self)
        if d["ai"] is not None and math.isinf(d["ai"]):
            d["ai"] = None  # JSON has no infinity; bound says "compute"
        return d


def _get(metrics: dict, name: str) -> float | None:
    v = metrics.get(name)
    return None if v is None else float(v)


def flops_of(metrics: dict) -> float | None:
    """FP32 and FP16 FLOPs from the SASS instruction counters (None when ncu reported none of them)."""
    parts = [(w, _get(metrics, m)) for m, w in FLOP_WEIGHTS.items()]
    if all(v is None for _, v in parts):
        return None
    return float(sum(w * v for w, v in parts if v is not None))


def dram_bytes_of(metrics: dict) -> float | None:
    total = _get(metrics, "dram__bytes.sum")
    if total is not None:
        return total
    rd, wr = _get(metrics, "dram__bytes_read.sum"), _get(metrics, "dram__bytes_write.sum")
    return None if rd is None and wr is None else (rd or 0.0) + (wr or 0.0)


def summarize(metrics: dict, ceilings: Ceilings) -> Summary:
    """metrics: one kernel's counters in base units (seconds, bytes), as ncu.parse_raw_csv returns them."""
    t = _get(metrics, "gpu__time_duration.sum")
    fl, nb = flops_of(metrics), dram_bytes_of(metrics)
    fps = fl / t if fl is not None and t else None
    bps = nb / t if nb is not None and t else None
    if fl is None or nb is None:
        ai = None
    elif nb > 0:
        ai = fl / nb
    else:
        ai = math.inf if fl > 0 else None
    if ai is None:
        bound, pct_roof = "unknown", None
    else:
        bound = "memory" if ai < ceilings.ridge else "compute"
        roof = ceilings.roof(ai) if math.isfinite(ai) else ceilings.ffma_flops
        pct_roof = fps / roof if fps is not None and roof > 0 else None
    return Summary(t, fl, nb, fps, bps, ai, bound, pct_roof,
                   bps / ceilings.memory_Bps if bps is not None else None,
                   fps / ceilings.ffma_flops if fps is not None else None,
                   fps / ceilings.cublas_flops if fps is not None and ceilings.cublas_flops else None)


def verdict(s: Summary, c: Ceilings) -> str:
    """One line: which roof the kernel sits under, and how close to it it is."""
    if s.bound == "unknown":
        return "no FLOP or DRAM counts for this kernel: the roofline cannot place it"
    ridge = f"the ridge ({c.ridge:.1f} FLOP/B)"
    if s.bound == "memory":
        line = (f"memory-bound side: {s.ai:.2f} FLOP/B is below {ridge}; it moves {_gbps(s.dram_Bps)} = "
                f"{_pct(s.pct_of_memory)} of the measured copy bandwidth ({_gbps(c.memory_Bps)})")
    else:
        ai = "no DRAM traffic" if s.ai is None or math.isinf(s.ai) else f"{s.ai:.1f} FLOP/B is above {ridge}"
        cub = f", {_pct(s.pct_of_cublas)} of cuBLAS fp32" if s.pct_of_cublas is not None else ""
        line = (f"compute-bound side: {ai}; {_tflops(s.flop_per_s)} = {_pct(s.pct_of_ffma)} of the FFMA peak "
                f"({_tflops(c.ffma_flops)}){cub}")
    if s.pct_of_roof is not None and s.pct_of_roof < FAR_BELOW:
        line += (f". At {_pct(s.pct_of_roof)} of the roof above it, neither roof is the limit yet: look at occupancy, "
                 "memory access patterns and stalls in the report")
    return line


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


def _gbps(x: float | None) -> str:
    return "-" if x is None else f"{x / 1e9:,.0f} GB/s"


def _tflops(x: float | None) -> str:
    return "-" if x is None else f"{x / 1e12:.2f} TFLOP/s"


# -- the plot -----------------------------------------------------------------------------------------------
def plot(path: Path, ceilings: Ceilings, points: list[tuple[str, float, float]], title: str) -> Path:
    """Log-log roofline: memory roof, FFMA roof, the cuBLAS line, the ridge, and each (label, AI, FLOP/s)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import EngFormatter, FuncFormatter
    except ImportError:
        raise GraderError("matplotlib is not installed, so the roofline plot was not drawn: `pip install matplotlib` "
                          "(or reinstall the course with `pip install -e .`)") from None

    c = ceilings
    finite = [(lab, ai, y) for lab, ai, y in points if ai and y and math.isfinite(ai) and ai > 0 and y > 0]
    xs = [ai for _, ai, _ in finite] + [c.ridge]
    lo, hi = 10 ** math.floor(math.log10(min(xs) / 4)), 10 ** math.ceil(math.log10(max(xs) * 4))
    fig = Figure(figsize=(8, 5.5))
    FigureCanvasAgg(fig)  # the Agg canvas: no display, no pyplot state
    ax = fig.add_subplot()
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.plot([lo, c.ridge], [lo * c.memory_Bps, c.ffma_flops], color="tab:blue", lw=2,
            label=f"memory: device copy, {c.memory_Bps / 1e9:,.0f} GB/s")
    ax.plot([c.ridge, hi], [c.ffma_flops, c.ffma_flops], color="tab:red", lw=2,
            label=f"FP32 FFMA peak, {c.ffma_flops / 1e12:.1f} TFLOP/s")
    if c.cublas_flops:
        ax.plot([c.cublas_flops / c.memory_Bps, hi], [c.cublas_flops] * 2, color="tab:orange", lw=1.5, ls="--",
                label=f"cuBLAS fp32 GEMM (8192³), {c.cublas_flops / 1e12:.1f} TFLOP/s")
    ax.plot([c.ridge], [c.ffma_flops], "o", color="black", ms=5)
    ax.annotate(f"ridge {c.ridge:.1f} FLOP/B", (c.ridge, c.ffma_flops), textcoords="offset points",
                xytext=(-10, 8), ha="right", fontsize=8)
    for i, (lab, ai, y) in enumerate(finite):
        ax.plot([ai], [y], "D", ms=7, color=KERNEL_COLORS[i % len(KERNEL_COLORS)],
                label=lab if len(lab) <= 48 else lab[:47] + "…")
        # Stacked one below the other: kernels of one launch (a GEMM and its stream-K tail) often sit on one spot.
        ax.annotate(f"{y / c.roof(ai):.0%} of roof", (ai, y), textcoords="offset points", xytext=(8, -12 - 11 * i),
                    fontsize=8, color=KERNEL_COLORS[i % len(KERNEL_COLORS)])
    ys = [y for _, _, y in finite] + [lo * c.memory_Bps]
    ax.set_xlim(lo, hi)
    ax.set_ylim(min(ys) / 3, max(c.ffma_flops, c.cublas_flops or 0) * 2.5)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_major_formatter(EngFormatter(unit="FLOP/s"))
    ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte)")
    ax.set_ylabel("performance")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8, loc="lower right")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return path
