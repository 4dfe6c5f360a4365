"""What `grader check --on slurm` sends to its job: the files a build of each checked exercise reads from the
student's folders (build.files_read: its sources, the headers beside them, the files of earlier days it `uses` and
the headers beside those), copied into JOB/days/<day>/ so that the job reads them as a local check would. Nothing
else of the student's goes: the course, its tasks and thresholds are the cluster's install.

The rules are `grader grade`'s: regular files only (a symbolic link, to a file or to a folder, or a special file is
refused by name), each no larger than a source may be (compile_check.MAX_SOURCE_BYTES). Each file is opened once
without following a link, and the bytes read are the bytes sent."""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from grader.check.build import files_read
from grader.check.compile_check import MAX_SOURCE_BYTES
from grader.errors import GraderError
from grader.paths import relative_path

FIX = "replace it with the file itself"


def _named(path: Path, root: Path) -> str:
    """path as messages name it, its last part as it is (relative_path resolves links, and a link is the subject)."""
    return os.path.join(relative_path(path.parent, root), path.name)


def _refuse(path: Path, root: Path, why: str, fix: str = FIX) -> GraderError:
    return GraderError(f"{_named(path, root)} {why}: `--on slurm` sends your sources as regular files only "
                       f"(as `grader grade` reads them), so nothing was sent; {fix}")


def _read(path: Path, root: Path) -> bytes | None:
    """The file's bytes (None if it does not exist), refusing a link, a special file or one over the size limit."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # NONBLOCK: a fifo must not hang the open
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise _refuse(path, root, "is a symbolic link") from None
        raise GraderError(f"{_named(path, root)} cannot be read: {e.strerror or e}") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _refuse(path, root, "is not a regular file", "remove it")
        data = f.read(MAX_SOURCE_BYTES + 1)  # never more: the file may grow while it is read
    if len(data) > MAX_SOURCE_BYTES:
        raise GraderError(f"{_named(path, root)} is over {MAX_SOURCE_BYTES // 2**20} MiB: sources that large "
                          "are refused (a local check refuses it too), so nothing was sent; is it a generated or "
                          "binary file?")
    return data


def send(day_id: str, exercises: list, src_dir: Path, job_days: Path, root: Path) -> dict[Path, Path]:
    """Copy what the exercises' builds read from src_dir (and the folders beside it that they use) into
    job_days/<day>/ (and job_days/<used day>/). Returns {folder in the job: the student's folder it copies}."""
    src_dir = Path(src_dir)
    folders = {job_days / day_id: src_dir}
    files: dict[Path, bytes] = {}
    for ex in exercises:
        for _name, path, _required in files_read(ex, src_dir):
            home = src_dir if src_dir in path.parents else path.parent
            dest_folder = job_days / (day_id if home == src_dir else home.name)
            folders[dest_folder] = home
            dest = dest_folder / path.relative_to(home)
            if dest in files:
                continue
            if home.is_symlink():
                raise _refuse(home, root, "is a symbolic link")
            for part in path.relative_to(home).parents[:-1]:  # a folder between the day's and the file
                if (home / part).is_symlink():
                    raise _refuse(home / part, root, "is a symbolic link")
            data = _read(path, root)
            if data is not None:  # a missing required file is the check's to report, as a local check does
                files[dest] = data
    for dest, data in files.items():
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
    return folders
