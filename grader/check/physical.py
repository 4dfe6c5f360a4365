"""What no kernel can beat on this GPU: the arithmetic peak for a dtype (the tensor cores' dense peak, the
fastest path any kernel could take), and, for memory-bound work, a device copy of the same bytes measured in the
same run (grader/check/worker.py). A measured rate above either, by more than the timer's noise, is not a fast
kernel but work the timer did not see."""
from __future__ import annotations

import functools

# Dense tensor-core FLOPs per SM per clock for 16-bit inputs (fp32 accumulation); TF32 is half of it, and fp32
# inputs are bounded by TF32 (a kernel may split fp32 into TF32 parts). From the vendors' peak figures:
# A100 312 TFLOP/s at 108 SMs x 1.41 GHz, H100 SXM 989 at 132 x 1.83, L40S 362 at 142 x 2.52, B200 2250 at
# 148 x 1.97.
TENSOR_FLOP_PER_CLK_SM = {(8, 0): 2048, (8, 6): 1024, (8, 7): 1024, (8, 9): 1024, (9, 0): 4096, (10, 0): 8192,
                          (12, 0): 2048}
UNKNOWN_ARCH = 8192  # the largest above: a bound that is never too tight
FALLBACK_CLOCK_GHZ = 2.5  # above any datacenter GPU's boost clock, when NVML cannot say
MARGIN = 1.10  # the timer's noise and a copy's own variation: above 110% of a limit is impossible, not fast


@functools.cache  # NVML starts and stops for each question: asked once per process (a worker asked per dtype)
def max_sm_clock_ghz(index: int = 0) -> float:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            return pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM) / 1000.0
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no NVML (or a GPU it does not know): a generous clock keeps the bound safe
        return FALLBACK_CLOCK_GHZ


@functools.cache
def driver_version() -> str | None:
    """The NVIDIA driver's version (for results: a leaderboard entry's runs must share it), None if NVML cannot say."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            v = pynvml.nvmlSystemGetDriverVersion()
            return v.decode() if isinstance(v, bytes) else str(v)
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return None


def peak_tflops(capability: tuple[int, int], sms: int, clock_ghz: float, dtype: str) -> float:
    per = TENSOR_FLOP_PER_CLK_SM.get(tuple(capability), UNKNOWN_ARCH)
    if dtype == "fp32":
        per //= 2  # TF32
    return per * sms * clock_ghz / 1000.0


def too_fast(*, pct_of_copy: float | None = None, tflops: float | None = None,
             peak: float | None = None) -> str | None:
    """Why a measured rate is impossible, or None."""
    if pct_of_copy is not None and pct_of_copy > MARGIN:
        return (f"{pct_of_copy:.0%} of a device copy of the same bytes: faster than memory allows (work the timer "
                "did not see: another stream, or nothing done?)")
    if tflops is not None and peak and tflops > peak * MARGIN:
        return (f"{tflops:,.0f} TFLOP/s is above this GPU's peak ({peak:,.0f}): faster than the arithmetic units "
                "allow (work the timer did not see: another stream, or nothing done?)")
    return None
