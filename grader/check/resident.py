"""A warm worker that outlives a check: the next `grader check` of the same course, in the same Python and
environment, runs in it instead of starting a process that imports torch again (seconds on a GPU machine).

The worker (`python -m grader.check.worker --serve --listen PATH --idle S`) listens on a Unix socket in a folder
only its user may enter. Each connection is one request, the same JSON line `--serve` reads on stdin plus the log
its output goes to for that request; the events come back on the connection, after one `hello` event that names the
worker's process. It exits by itself after S seconds without a request (GRADER_RESIDENT_IDLE_S, default
IDLE_S), after a request that needs a new process (a library of torch ops is loaded once per process, a process
group is joined once), and after a kernel lost its CUDA context. The client kills it as it kills any worker: a case
that hangs, or the check interrupted (Ctrl-C).

What keys a worker (the socket's name): the course root, the Python, torch's install, the grader's and the tasks'
Python files (their sizes and times), and the environment the worker would get. Anything else changed means another worker.

One check at a time uses a worker: the client holds an exclusive lock for the whole check; a second check running
meanwhile (another terminal) gets a worker of its own for that check, as before. The baseline's and library's times
are measured in each check (they are not kept between requests), so a verdict compares times of the same run.

Off where it would share a process with what must not: a sandboxed check (`grade`, `--ranked`, `--sandbox`), a test
suite's scripted worker; and with GRADER_RESIDENT=0."""
from __future__ import annotations

import errno
import fcntl
import hashlib
import importlib.util
import json
import os
import queue
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from grader import timings
from grader.check.worker_process import CONTEXT_LOST, STARTUP_S, WorkerEnd, _kill, _pump, _worker_env

SOCKET_PATH_MAX = 107  # sun_path's 108 bytes, less the final NUL
IDLE_S = 600.0  # a student edits for minutes between checks; a worker idle longer gives its GPU memory back
ENV_OFF = "GRADER_RESIDENT"
ENV_IDLE = "GRADER_RESIDENT_IDLE_S"
# The environment a worker sees that decides what it does; the rest (a terminal's size, a shell's history) does not.
_ENV_KEYS = ("PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "HOME", "TMPDIR")
_ENV_PREFIXES = ("GRADER_", "CUDA", "TORCH", "PYTORCH", "NVIDIA", "NCCL", "CUBLAS", "CUDNN", "TRITON")


def enabled(worker: str, sandbox) -> bool:
    from grader.check.day_check import WORKER

    return worker == WORKER and sandbox is None and os.environ.get(ENV_OFF, "1") != "0" and idle_s() > 0


def idle_s() -> float:
    try:
        return float(os.environ.get(ENV_IDLE, IDLE_S))
    except ValueError:
        return IDLE_S


def _runtime_dir() -> Path:
    """A folder of this user's alone (a socket there cannot be reached by another user of a shared machine)."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    d = Path(base) / "grader" if base and Path(base).is_dir() else Path("/tmp") / f"grader-{os.getuid()}"
    d.mkdir(mode=0o700, exist_ok=True)
    st = d.stat()
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise OSError(errno.EPERM, f"{d} is not a private folder of this user")
    return d


def key(root: Path) -> str:
    h = hashlib.sha256()
    h.update(f"{Path(root).resolve()}\0{sys.executable}\0".encode())
    here = Path(__file__).resolve().parents[1]
    try:  # torch upgraded or reinstalled: another worker (found without importing torch, which takes seconds)
        spec = importlib.util.find_spec("torch")
        version = Path(spec.origin).with_name("version.py") if spec and spec.origin else None
        if version is not None and version.is_file():
            st = version.stat()
            h.update(f"{version}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    except (ImportError, ValueError, OSError):
        pass
    for folder in (here, Path(root) / "tasks"):
        for p in sorted(folder.rglob("*.py")) if folder.is_dir() else []:
            st = p.stat()
            h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    env = _worker_env(None)
    for k in sorted(env):
        if k in _ENV_KEYS or k.startswith(_ENV_PREFIXES):
            h.update(f"{k}={env[k]}\0".encode())
    return h.hexdigest()[:20]


class _Process:
    """What _pump and _kill need of a worker that may not be this process's child (an earlier check started it)."""

    def __init__(self, pid: int, child: subprocess.Popen | None):
        self.pid, self.child, self.returncode = pid, child, None

    def poll(self):
        if self.child is not None and self.child.pid == self.pid:
            self.returncode = self.child.poll()
            return self.returncode
        try:
            os.kill(self.pid, 0)
            return None
        except ProcessLookupError:
            self.returncode = self.returncode if self.returncode is not None else -9
            return self.returncode

    def wait(self, timeout=None):
        if self.child is not None and self.child.pid == self.pid:
            self.returncode = self.child.wait(timeout)
            return self.returncode
        return self.poll()  # not ours to reap: its parent (or init) does; it is gone once killed


def _read_events(sock: socket.socket, q: queue.Queue) -> None:
    try:
        with sock.makefile("r", encoding="utf-8") as f:
            for line in f:
                try:
                    q.put(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    q.put(None)


class ResidentSession:
    """The client: run_job's session (the same run() as WorkerSession), for one check."""

    per_job_log = True  # each request writes to its exercise's own log, not to one log of the session

    def __init__(self, root: Path, log_path: Path):
        self.root, self.log_path = Path(root), Path(log_path)
        folder = _runtime_dir()
        k = key(root)
        self.sock_path, self.lock_path = folder / f"{k}.sock", folder / f"{k}.lock"
        if len(os.fsencode(self.sock_path)) > SOCKET_PATH_MAX:  # bind() would refuse it: a worker per check then
            raise OSError(errno.ENAMETOOLONG, f"{self.sock_path} is longer than a Unix socket's path may be")
        self.daemon_log = log_path.parent / "resident-worker.log"
        self._lock = None
        self._child: subprocess.Popen | None = None
        self._ready: int | None = None  # read end of the pipe a worker we started says it listens on
        self.worker = "grader.check.worker"

    def start(self) -> ResidentSession | None:
        """Takes the worker for this check (starting one if there is none); None if another check has it now."""
        self._lock = open(self.lock_path, "a")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock.close()
            self._lock = None
            return None
        if not self._listening():
            self._spawn()
            # It says `listening` as soon as it is bound (its torch import comes after, overlapping the planning);
            # one that cannot listen (no socket here) leaves this check to a worker of its own, as before.
            if not self._wait_ready():
                self.close()
                timings.mark("no warm worker (it could not listen)")
                return None
        else:
            timings.mark("warm worker found")
        return self

    def _listening(self) -> bool:
        if not self.sock_path.exists():
            return False
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(str(self.sock_path))  # accepted (and closed at once) by the worker: an empty request
            return True
        except OSError:
            self.sock_path.unlink(missing_ok=True)  # left by a worker that died
            return False

    def _spawn(self) -> None:
        r, w = os.pipe()
        self.daemon_log.parent.mkdir(parents=True, exist_ok=True)
        try:
            with open(self.daemon_log, "a") as log:
                self._child = subprocess.Popen(
                    [sys.executable, "-m", self.worker, "--serve", "--listen", str(self.sock_path),
                     "--idle", f"{idle_s():g}", "--ready-fd", str(w)], pass_fds=[w], stdout=log, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL, start_new_session=True, cwd=self.root, env=_worker_env(None))
        finally:
            os.close(w)
        self._ready = r
        timings.mark("warm worker started")

    def _wait_ready(self) -> bool:
        """Waits for a worker this check started to listen (its first line on the pipe), or to die."""
        if self._ready is None:
            return True
        import select

        fd, self._ready = self._ready, None
        try:
            readable, _, _ = select.select([fd], [], [], STARTUP_S)
            return bool(readable) and os.read(fd, 64).startswith(b"listening")
        finally:
            os.close(fd)

    def _connect(self) -> socket.socket | None:
        if not self._wait_ready():
            return None
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(str(self.sock_path))
            return s
        except OSError:
            s.close()
            return None

    def _request(self, req: dict, first_wait: float) -> tuple[socket.socket, queue.Queue, dict] | None:
        """Sends the request; (connection, its events, the worker's hello), or None where no worker answered."""
        sock = self._connect()
        if sock is None:
            return None
        q: queue.Queue = queue.Queue()
        threading.Thread(target=_read_events, args=(sock, q), daemon=True).start()
        try:
            sock.sendall((json.dumps(req) + "\n").encode())
            hello = q.get(timeout=first_wait)
        except (OSError, queue.Empty):
            hello = None
        if not hello or hello.get("ev") != "hello":
            sock.close()
            return None
        return sock, q, hello

    def run(self, job_path: Path, *, start: int, had_failure: bool, on_event: Callable[[dict], float],
            first_wait: float) -> WorkerEnd:
        log = Path(str(job_path).removesuffix(".job.json") + ".log")
        req = {"job": str(job_path), "start": start, "had_failure": had_failure, "log": str(log),
               "keep_times": False}
        got = self._request(req, first_wait)
        if got is None:  # it ended between checks (idle, or past a request that ends it): a new one, once
            self.sock_path.unlink(missing_ok=True)
            self._spawn()
            got = self._request(req, first_wait)
            if got is None:
                return WorkerEnd(self._child.poll() if self._child else None, False)
        sock, q, hello = got
        proc = _Process(int(hello["pid"]), self._child)
        try:
            how, ev = _pump(proc, q, on_event, first_wait, None, 0.0, until=lambda e: e.get("ev") == "end")
        finally:
            sock.close()
        if how == "stalled":
            return WorkerEnd(proc.returncode, True)
        if how == "until" and ev.get("code", 0) != CONTEXT_LOST:
            return WorkerEnd(ev.get("code", 0), False)
        _kill(proc)  # its CUDA context is lost (it exits by itself), or it died
        return WorkerEnd(CONTEXT_LOST if how == "until" else proc.returncode, False)

    def close(self) -> None:
        if self._ready is not None:
            os.close(self._ready)
            self._ready = None
        if self._lock is not None:
            self._lock.close()  # the lock goes with it
            self._lock = None


# -- the worker's side -------------------------------------------------------------------------------------------
def serve(path: str, idle: float, ready_fd: int | None, handle: Callable[[dict, Callable], tuple[int, bool]],
          emitter: Callable) -> int:
    """Serves requests on the socket at path until idle seconds pass without one, or a request ends the process
    (handle returns (code, fresh): CONTEXT_LOST or fresh). emitter(file) makes the event writer of a connection."""
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        srv.bind(path)
    except OSError as e:
        if e.errno != errno.EADDRINUSE:
            print(f"the warm worker cannot listen on {path}: {e}", file=sys.stderr)
        return 0  # another worker got there first (the client finds that one), or none can listen here
    ino = os.stat(path).st_ino
    srv.listen(4)
    srv.settimeout(idle)
    if ready_fd is not None:
        os.write(ready_fd, b"listening\n")
        os.close(ready_fd)
    try:
        import torch  # noqa: F401  (what this process is kept warm for)
    except Exception:
        pass
    out, err = os.dup(1), os.dup(2)
    code = 0
    try:
        while True:
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                break
            try:
                code, fresh = _one(conn, handle, emitter, out, err)
            except OSError:  # the client went away (interrupted): it kills this process too, or will not ask again
                break
            if code == CONTEXT_LOST or fresh:
                break
    finally:
        try:
            if os.stat(path).st_ino == ino:
                os.unlink(path)
        except OSError:
            pass
        srv.close()
    return code


def _one(conn: socket.socket, handle, emitter, out: int, err: int) -> tuple[int, bool]:
    """One connection's request, its output into the request's log; (0, False) for a probe (an empty line)."""
    with conn:
        conn.settimeout(None)
        line = conn.makefile("r", encoding="utf-8").readline()
        if not line.strip():
            return 0, False  # a probe of whether this worker listens
        with conn.makefile("w", encoding="utf-8", buffering=1) as f:
            emit = emitter(f)
            try:
                req = json.loads(line)
                log = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            except (ValueError, KeyError, TypeError, OSError) as e:
                emit("internal_error", message=f"a bad request to the warm worker: {e}")
                emit("end", code=2, fresh=False)
                return 2, False
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(log, 1)
            os.dup2(log, 2)
            os.close(log)
            try:
                emit("hello", pid=os.getpid())
                return handle(req, emit)
            finally:
                _give_back_memory()
                sys.stdout.flush()
                sys.stderr.flush()
                os.dup2(out, 1)
                os.dup2(err, 2)


def _give_back_memory() -> None:
    """The memory torch's allocator keeps cached after a check goes back to the GPU: an idle worker holds its CUDA
    context (a few hundred MB), not the last check's tensors."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            torch.cuda.empty_cache()
    except Exception:
        pass
