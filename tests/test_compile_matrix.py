"""Every kernel of every solution and stub on every GPU a class has, without those GPUs: ptxas's report for the image
each GPU of grader/gpu_support.py's SMEM_OPTIN_KIB runs (tests/compile_records.py `image`: the exercise's own
`-gencode` list, or the GPU's native build), read from tests/data/compile-records.json where recorded. A kernel
fails when it spills on any of them, or when its static shared memory passes that GPU's opt-in limit.

The GPUs are those the course grades on: course.yaml's min_capability (8.0) and newer, so sm_80, sm_86, sm_89,
sm_90 (sm_90a where the exercise lists it), sm_100 and sm_120. nvcc 13.0 still compiles sm_75 (`nvcc
--list-gpu-arch`), but the course refuses a T4 at `grader doctor` and `grader check` (gpu_support
below_course_minimum), and its kernels use cp.async and bf16 mma.sync, which sm_75 lacks: sm_75 joins the matrix
when min_capability does.

Shared memory here is ptxas's static amount only. The dynamic shared memory a launcher requests (its
cudaFuncSetAttribute and the third `<<<>>>` argument, often chosen at run time from the device's own limits) is
not in any compile report; a static amount is at most 48 KiB, under every opt-in limit, so this half of the check
catches a limit table or a kernel that changed, and the launchers' requests are checked on a GPU."""
import pytest

from tests import compile_records
from tests.conftest import ROOT, needs_nvcc


def _archs() -> list[str]:
    from grader.course import load_course
    from grader.gpu_support import SMEM_OPTIN_KIB

    need = tuple(int(x) for x in load_course(ROOT / "course.yaml").min_capability.split("."))
    return [a for a in SMEM_OPTIN_KIB if tuple(int(x) for x in a.split(".")) >= need]


def _sources():
    """(day, file, include dirs, extra flags) of every .cu file of a solution or stub, once per build."""
    from grader.course import load_course

    seen = set()
    for day in load_course(ROOT / "course.yaml").days:
        for ex in day.exercises:
            for where in ("solutions", "days"):
                for s in ex.sources:
                    key = (where, day.id, s, tuple(ex.extra_cuda_cflags), tuple(ex.include_dirs))
                    if s.endswith(".cu") and key not in seen:
                        seen.add(key)
                        listed = "-listed" if any(f.startswith("-gencode") for f in ex.extra_cuda_cflags) else ""
                        yield pytest.param(ROOT / where / day.id / s, [ROOT / i for i in ex.include_dirs],
                                           list(ex.extra_cuda_cflags), id=f"{where}-{day.id}-{s}{listed}")


@needs_nvcc
@pytest.mark.parametrize("source, include_dirs, flags", list(_sources()))
def test_no_kernel_spills_or_passes_the_shared_memory_opt_in_on_a_class_gpu(source, include_dirs, flags, request):
    from grader.gpu_support import SMEM_OPTIN_KIB

    if not source.is_file():
        pytest.skip(f"{source.relative_to(ROOT)} is not in the tree")  # tests/test_compile.py says so
    hows = []
    rows = compile_records.class_matrix(source, include_dirs, flags, _archs(), hows)
    request.node.user_properties.append(("compile_records", " ".join(f"{f}:{how}" for f, how in hows)))
    rel = source.relative_to(ROOT)
    failed = [f"sm_{r['arch'].replace('.', '')}: {r['note']}" for r in rows if not r["ok"]]
    assert not failed, f"{rel} does not compile for every class GPU:\n" + "\n".join(failed)
    spills, over = [], []
    for r in rows:
        limit = SMEM_OPTIN_KIB[r["arch"]] * 1024
        for k in r["kernels"]:
            where = f"{rel} on sm_{r['arch'].replace('.', '')} ({k['arch']} image): {k['function']}"
            if k["spill_stores"] or k["spill_loads"]:
                spills.append(f"{where}: {k['spill_stores']} B spill stores, {k['spill_loads']} B spill loads, "
                              f"{k['registers']} registers")
            if k["smem_bytes"] > limit:
                over.append(f"{where}: {k['smem_bytes']} B static shared memory, over the {limit} B opt-in limit")
    assert not spills, "kernels that spill (a launch bound chosen per __CUDA_ARCH__ avoids it, as day 10's " \
                       "kMinBlocks does):\n" + "\n".join(spills)
    assert not over, "\n".join(over)


def test_each_class_gpu_runs_the_image_the_driver_would_choose():
    listed = ["-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_80,code=compute_80",
              "-gencode=arch=compute_90a,code=sm_90a"]
    got = {a: compile_records.image(listed, a) for a in ("7.5", "8.0", "8.6", "8.9", "9.0", "10.0", "12.0")}
    assert got == {"7.5": None, "8.0": listed[0], "8.6": listed[0], "8.9": listed[0], "9.0": listed[2],
                   "10.0": "-gencode=arch=compute_80,code=sm_100", "12.0": "-gencode=arch=compute_80,code=sm_120"}
    assert compile_records.image([], "8.6") == "-gencode=arch=compute_86,code=sm_86"
    assert compile_records.image_arch(listed[2]) == "sm_90a"


def test_the_matrix_covers_every_class_gpu_the_course_grades_on():
    assert _archs() == ["8.0", "8.6", "8.9", "9.0", "10.0", "12.0"]
