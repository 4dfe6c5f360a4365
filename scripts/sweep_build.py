"""What the configuration sweeps (sgemm_sweep.py, tc_sweep.py, attention_sweep.py) share: building one variant of
a solution, with -D overrides, as its own extension, and building many variants in parallel processes before
anything is timed."""
import hashlib
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build_variant(prefix: str, sources: list[Path], flags: list[str]):
    """The extension built from `sources` with `flags`; the name and build folder follow both, so variants never
    share a build (or a loaded module)."""
    import torch

    from grader.check.build import build_extension

    tag = hashlib.sha1(" ".join(map(str, [*sources, *flags])).encode()).hexdigest()[:8]
    mod, _, _ = build_extension(name=f"{prefix}_{tag}", sources=sources, include_dirs=[ROOT / "common"],
                                build_dir=ROOT / ".grader" / "build" / f"{prefix}-{tag}", extra_cuda_cflags=flags,
                                capability=torch.cuda.get_device_capability(0), root=ROOT)
    return mod


def _try(build, tail: int, cfg: str) -> str:
    try:
        build(cfg)
        return ""
    except Exception as e:  # report and carry on with the others
        return f"{cfg!r}: {str(e)[-tail:]}"


def prebuild(build, configs: list[str], workers: int, tail: int = 1500) -> None:
    """build(cfg) for every config in `workers` processes (nvcc is the slow part); failures are printed, and the
    timing loop, which builds again (a cache hit), skips those configs."""
    with ProcessPoolExecutor(max_workers=max(1, min(workers, len(configs)))) as pool:
        for err in pool.map(partial(_try, build, tail), configs):
            if err:
                print("build failed:", err)
