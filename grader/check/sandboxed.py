"""The sandbox of one submission's check (grader/sandbox.py makes it): where the submission's code runs, in its
build (ninja and the compilers, or nvcc alone without a GPU) and in its worker (the import of the built module and
every call of the op).

Read-only inside: the submission's sources (its day's folder, and the earlier days' folders its exercise `uses`),
the course code the worker runs (grader/, the task's package, the include folders such as common/), the
baseline's solution where the check times against one, and the jobs the grader writes for this submission.
Writable: a state folder of its own, `<state>/sandbox/<variant>/state`, where its builds and caches go (builds are
kept between checks of the same submission, and are never shared with another: a submission that could write
where others' modules are built could plant code in them). Nothing else of the course (solutions/, course.yaml
with its planted-bug fixes, the hidden cases), of the grader's state (other submissions' builds, logs and
results), of the ranked secret or of the instructor's home is there."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import grader
from grader import sandbox
from grader.paths import Paths


class CheckSandbox:
    def __init__(self, root: Path, variant: str, tmp_bytes: int | None = None, worker: str = "grader.check.worker"):
        self.root = Path(root)
        self.worker_module = worker  # the module each worker runs (the CPU tests substitute a scripted one)
        self.home = Paths(self.root).state / "sandbox" / variant
        self.state = self.home / "state"  # $GRADER_STATE inside: the builds and caches of this submission
        self.jobs = self.home / "jobs"  # written by the grader, read-only inside
        self.reports = self.home / "reports"  # compute-sanitizer's reports: written inside, read by the grader
        self.tmp_bytes = tmp_bytes or sandbox.tmp_bytes()
        for d in (self.state, self.jobs, self.reports):
            d.mkdir(parents=True, exist_ok=True)

    def builds(self) -> Path:
        """The builds folder as the worker inside sees it (where a tool's paths into a build point)."""
        return Paths(self.root, state_base=self.state).builds()

    def _hidden(self) -> list[Path]:
        """What must stay out of sight even where a folder bound for reading holds it: the course, the repository
        the grader is run from (a course too, where it is not an installed package), the grader's state, the
        secret's and the hidden cases' files."""
        out = [self.root, Paths(self.root).state]
        repo = Path(grader.__file__).resolve().parents[1]
        if (repo / "course.yaml").exists() or (repo / ".git").exists():
            out.append(repo)
        out += [Path(os.environ[k]).expanduser() for k in ("GRADER_RANKED_SEED_FILE", "GRADER_HIDDEN")
                if os.environ.get(k)]
        return out

    def _course_code(self, ex) -> list[Path]:
        top = ex.task.split(".")[0]
        task = self.root / top if (self.root / top).is_dir() else self.root / f"{top}.py"
        return [Path(grader.__file__).resolve().parent, task, *(self.root / i for i in ex.include_dirs),
                *self._worker_package()]

    def _worker_package(self) -> list[Path]:
        """The package of the worker module, where it is not the grader's own."""
        import importlib.util

        top = self.worker_module.split(".")[0]
        if top == "grader":
            return []
        spec = importlib.util.find_spec(top)
        origin = Path(spec.origin) if spec is not None and spec.origin else None
        return [] if origin is None else [origin.parent if origin.name == "__init__.py" else origin]

    def worker(self, ex, src_dir: Path, baseline=None) -> list[str]:
        """The prefix of a worker that builds and runs ex from src_dir; baseline: (exercise, folder) of the
        solution it is timed against, when it is."""
        from grader.check.build import used_folders

        read = [*self._course_code(ex), Path(src_dir), *used_folders(ex, Path(src_dir)).values(), self.jobs]
        if baseline is not None:
            bex, bdir = baseline
            read += [*self._course_code(bex), Path(bdir), *used_folders(bex, Path(bdir)).values()]
        policy = sandbox.Policy(read=tuple(read), write=(self.state, self.reports), hide=tuple(self._hidden()),
                                devices=sandbox.gpu_devices(), tmp_bytes=self.tmp_bytes,
                                env=(("GRADER_STATE", str(self.state)),), chdir=self.root)
        return sandbox.argv(policy)

    def for_job(self, job, timed: bool) -> list[str]:
        """The prefix of a worker for this job; the baseline is inside only when the run is timed."""
        b = job.baseline_target if timed and job.baseline == "solution" else None
        return self.worker(job.exercise, Path(job.target.src_dir), (b.exercise, b.src_dir) if b else None)

    def compiler(self, read: list[Path], scratch: Path) -> list[str]:
        """The prefix of a compiler run (compile-only, without a GPU) over read, writing only into scratch."""
        policy = sandbox.Policy(read=tuple(read), write=(Path(scratch),), hide=tuple(self._hidden()),
                                tmp_bytes=self.tmp_bytes, chdir=Path(scratch))
        return sandbox.argv(policy)

    def job_path(self, name: str) -> Path:
        return self.jobs / name

    def read_report(self, path: Path) -> str:
        """A file the sandbox wrote, read without following a link it may have put there instead."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return ""
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):  # a fifo would block, a device never end
                return ""
            return f.read(8 << 20).decode("utf-8", errors="replace")
