"""Bubblewrap (`bwrap`) sandboxes for code the grader does not trust: a Policy (what may be read, what may be
written, which device nodes, how large a private /tmp) made into the argv prefix that runs a command inside one,
and whether bwrap works on this machine at all.

Inside, the command sees a root of its own: the system's programs and libraries (/usr, /etc, ...), this Python and
the CUDA toolkit, read-only; the policy's paths, each at its own path; a fresh /proc that shows only the sandbox's
own processes; a minimal /dev plus the GPU's device nodes; and a private /tmp and /dev/shm of bounded size. It has
no network (a loopback of its own), every capability dropped, and nothing of the instructor's home or course that
the policy does not name. When its first process ends, or bwrap is killed, every process in it ends too: it is
the init of its own pid namespace, and --die-with-parent ties it to bwrap."""
from __future__ import annotations

import dataclasses
import functools
import os
import re
import shutil
import site
import subprocess
import sys
from pathlib import Path

# Each of the private /tmp and /dev/shm holds at most this much (memory, not disk): nvcc's temporary files for the
# largest kernel of the course are a few tens of MB; a submission that writes more gets "No space left on device".
TMP_BYTES = 1 << 30
TMP_ENV = "GRADER_SANDBOX_TMP_MB"  # another size, in MiB (a course whose builds need more)
HOME = "/tmp/home"  # $HOME inside: caches (Triton's, CuPy's) land in the private /tmp, and nothing of the real one

# Mounted read-only when they exist: the system's programs, libraries and configuration. A symbolic link (/bin on
# a merged-/usr system) is made again inside as the same link.
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys")

# Never passed into a sandbox: the ranked secret (its value or the file that holds it), the hidden cases' file,
# and whatever the environment names like a credential (CI runners hold tokens there).
SECRET_ENV = ("GRADER_RANKED_SEED", "GRADER_RANKED_SEED_FILE", "GRADER_HIDDEN", "SSH_AUTH_SOCK")
CREDENTIAL = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|API_?KEY|ACCESS_KEY|PRIVATE_KEY|AUTH", re.I)

INSTALL = ("install bubblewrap: `apt-get install bubblewrap` (Debian, Ubuntu), `dnf install bubblewrap` (Fedora, "
           "RHEL), or your distribution's package of that name")
NAMESPACES = ("this kernel (or the container this runs in) does not let an unprivileged user create namespaces: "
              "enable them (`sysctl kernel.unprivileged_userns_clone=1` on Debian, `user.max_user_namespaces` above "
              "0; on Ubuntu 23.10+ `sysctl kernel.apparmor_restrict_unprivileged_userns=0` or an AppArmor profile "
              "for bwrap), or run the grading in a container that allows unshare")


@dataclasses.dataclass(frozen=True)
class Policy:
    """What a sandboxed command may touch. Paths are bound at their own path inside; read and write may name
    folders or files. hide: paths that must stay invisible even where a read path holds them (the course's
    folder under a system one, say): each is covered by an empty folder (or file) before anything inside it is
    bound. env: variables set inside (after the secrets are removed)."""
    read: tuple[Path, ...] = ()
    write: tuple[Path, ...] = ()
    hide: tuple[Path, ...] = ()
    devices: tuple[Path, ...] = ()
    tmp_bytes: int = TMP_BYTES
    env: tuple[tuple[str, str], ...] = ()
    chdir: Path | None = None


def tmp_bytes() -> int:
    """The size of the private /tmp (and /dev/shm): $GRADER_SANDBOX_TMP_MB, else TMP_BYTES."""
    from grader.errors import GraderError

    raw = os.environ.get(TMP_ENV, "").strip()
    if not raw:
        return TMP_BYTES
    if not raw.isdigit() or int(raw) == 0:
        raise GraderError(f"${TMP_ENV} is the size of a sandbox's /tmp in MiB, a whole number such as 1024, not "
                          f"{raw!r}")
    return int(raw) << 20


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def gpu_devices() -> tuple[Path, ...]:
    """The NVIDIA device nodes (/dev/nvidia0, nvidiactl, nvidia-uvm, nvidia-caps/, ...): a CUDA process opens
    them. Slurm's device cgroup, where there is one, still limits a job to the GPUs it was given."""
    return tuple(sorted(Path("/dev").glob("nvidia*")))


def interpreter_paths() -> list[Path]:
    """This Python's installation (a venv's and the one it was made from) and its site-packages folders."""
    paths = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix), Path(sys.executable).parent]
    paths += [Path(p) for p in site.getsitepackages()]
    if site.ENABLE_USER_SITE and site.USER_SITE and Path(site.USER_SITE).is_dir():
        paths.append(Path(site.USER_SITE))
    return paths


def pythonpath_paths() -> list[Path]:
    """$PYTHONPATH's folders: the worker inherits it and imports from them (packages installed with --target, say
    under /tmp, which would otherwise be hidden by the private /tmp)."""
    return [Path(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
            if p and Path(p).is_absolute() and Path(p) != Path("/")]


def cuda_paths() -> list[Path]:
    """The CUDA toolkit, wherever nvcc and $CUDA_HOME say it is (nvcc may be a wrapper script elsewhere), and the
    folders of $LD_LIBRARY_PATH (a cluster's CUDA module puts its libraries there)."""
    out = [Path(p) for p in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda") if p]
    nvcc = shutil.which("nvcc")
    if nvcc:
        out += [Path(nvcc).parent, Path(nvcc).resolve().parent.parent]
    out += [Path(p) for p in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p]
    return out


def toolchain_paths() -> list[Path]:
    """The install prefix of the host compiler where it is not the system's (a cluster's module, a conda
    environment: <prefix>/bin/g++ needs its prefix's libexec and headers), never / nor the home itself."""
    out = []
    for name in dict.fromkeys([os.environ.get("CXX") or "c++", "g++"]):
        exe = shutil.which(name)
        if exe:
            prefix = Path(exe).resolve().parent.parent
            if prefix not in (Path("/"), Path.home(), Path.home().parent):
                out.append(prefix)
    return out


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _spellings(p: Path) -> list[Path]:
    """A path as given (absolute) and as it resolves: code inside may use either spelling."""
    a = Path(os.path.abspath(p))
    r = Path(os.path.realpath(p))
    return [a] if a == r else [a, r]


def environment(base: dict[str, str], policy: Policy) -> tuple[list[str], dict[str, str]]:
    """What changes in the environment inside: the names to remove (the secrets, and whatever base names like a
    credential) and the variables to set: PATH led by this Python's folder (a tool installed beside it, such as
    ninja; a shim elsewhere is not inside), $HOME and $TMPDIR in the private /tmp, then the policy's."""
    unset = sorted({*SECRET_ENV, *(k for k in base if CREDENTIAL.search(k))})
    path = [str(Path(sys.executable).parent), *filter(None, base.get("PATH", "").split(os.pathsep))]
    env = {"PATH": os.pathsep.join(dict.fromkeys(path)), "HOME": HOME, "TMPDIR": "/tmp",
           "XDG_CACHE_HOME": f"{HOME}/.cache", **dict(policy.env)}
    return unset, env


def argv(policy: Policy, base_env: dict[str, str] | None = None) -> list[str]:
    """The bwrap command line, up to and including `--`, that runs a command under the policy. The command gets
    the environment bwrap is started with (base_env: what that will be, default this process's), changed as
    environment() says."""
    exe = bwrap_path() or "bwrap"
    head = [exe, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--hostname", "sandbox"]
    mounts: list[tuple[Path, int, list[str]]] = []  # (where, order among mounts at one path, arguments)

    def add(where: Path, order: int, *args: str) -> None:
        mounts.append((where, order, list(args)))

    for s in SYSTEM:
        p = Path(s)
        if p.is_symlink():
            add(p, 0, "--symlink", os.readlink(p), s)
        elif p.is_dir():
            add(p, 0, "--ro-bind", s, s)
    hidden = [s for h in policy.hide for s in _spellings(h)]

    def under_hidden(p: Path) -> bool:
        return any(_inside(s, h) for s in _spellings(p) for h in hidden)

    # What the environment names ($PYTHONPATH, $LD_LIBRARY_PATH, $CUDA_HOME, a toolchain) is read only outside the
    # hidden folders: `PYTHONPATH=.` in the course, or a folder of it, would otherwise show solutions/ and the
    # hidden cases. The policy's own paths name the pieces of the course a check needs; the interpreter's
    # installation stays where it is (a venv inside the course holds nothing hidden).
    named = [p for p in [*pythonpath_paths(), *cuda_paths(), *toolchain_paths()] if not under_hidden(p)]
    read = [*interpreter_paths(), *named, *policy.read]
    bound: dict[Path, str] = {}
    for p in read:
        # A hidden folder itself is never bound whole (one inside a bound folder is covered below).
        if p.exists() and not any(s in hidden for s in _spellings(p)):
            for s in _spellings(p):
                bound.setdefault(s, "--ro-bind")
    for p in policy.write:
        for s in _spellings(p):
            bound[s] = "--bind"
    # A folder read inside one already read (site-packages inside the Python's prefix, CUDA inside /usr) is there
    # with it; a writable one is bound on its own.
    system = [Path(s) for s in SYSTEM if Path(s).is_dir() and not Path(s).is_symlink()]
    held = system + [p for p, how in bound.items() if how == "--ro-bind"]

    def redundant(p: Path) -> bool:  # read with a folder above it, unless a hidden folder between covers it
        return any(_inside(p, q) and p != q and not any(_inside(p, h) and _inside(h, q) and h != q for h in hidden)
                   for q in held)

    bound = {p: how for p, how in bound.items() if how == "--bind" or not (p in system or redundant(p))}
    for p, how in bound.items():
        add(p, 0, how, str(Path(os.path.realpath(p))), str(p))
    add(Path("/proc"), 0, "--proc", "/proc")
    add(Path("/dev"), 0, "--dev", "/dev")
    add(Path("/dev/shm"), 0, "--size", str(policy.tmp_bytes), "--tmpfs", "/dev/shm")
    add(Path("/tmp"), 0, "--size", str(policy.tmp_bytes), "--tmpfs", "/tmp")
    add(Path(HOME), 1, "--dir", HOME)
    user_site = site.USER_SITE if site.ENABLE_USER_SITE and site.USER_SITE and Path(site.USER_SITE).is_dir() else None
    if user_site:  # with $HOME moved, Python looks for the user's packages under the new one
        rel = Path(user_site).relative_to(Path.home()) if _inside(Path(user_site), Path.home()) else None
        if rel is not None:
            add(Path(HOME) / rel, 0, "--ro-bind", user_site, str(Path(HOME) / rel))
    # Mounts of bwrap's own making that would stay writable, and unbounded: made read-only once everything is
    # mounted inside them (the private /tmp and /dev/shm are the only places to write, with the policy's).
    read_only = ["/dev"]
    for h in policy.hide:
        for s in _spellings(h):
            holder = any(_inside(s, p) and s != p for p in [*bound, *(Path(x) for x in SYSTEM)])
            if holder and s.exists():  # visible through a folder bound above it: covered before its own binds
                add(s, 1, *(("--tmpfs", str(s)) if s.is_dir() else ("--ro-bind", "/dev/null", str(s))))
                read_only += [str(s)] if s.is_dir() else []
    for d in policy.devices:
        add(d, 2, "--dev-bind", str(d), str(d))
    # A folder before anything inside it (a later mount over a folder would hide what was bound inside).
    mounts.sort(key=lambda m: (m[0].parts, m[1]))
    out = head + [a for _, _, args in mounts for a in args]
    for r in [*read_only, "/"]:
        out += ["--remount-ro", r]
    if policy.chdir is not None:
        out += ["--chdir", str(policy.chdir)]
    unset, env = environment(os.environ if base_env is None else base_env, policy)
    for k in unset:
        out += ["--unsetenv", k]
    for k, v in env.items():
        out += ["--setenv", k, v]
    return out + ["--"]


@dataclasses.dataclass(frozen=True)
class Probe:
    ok: bool
    detail: str  # what works (version, what the sandbox gets), or why it does not and what to do


def _explain(stderr: str) -> str:
    text = " ".join(stderr.split())[-400:]
    if re.search(r"namespace|uid map|Operation not permitted|Permission denied", stderr, re.I):
        return f"{NAMESPACES} (bwrap said: {text})"
    return f"bwrap could not start a sandbox here: {text or 'no message'}"


@functools.cache
def probe() -> Probe:
    """Whether a sandbox as the grader makes it runs this Python here: bwrap installed, namespaces allowed, the
    system's folders, this Python and a private /tmp in place, and no network."""
    exe = bwrap_path()
    if exe is None:
        return Probe(False, f"bubblewrap (bwrap) is not installed: {INSTALL}")
    code = ("import socket, os; os.listdir('/tmp');\n"
            "try:\n socket.create_connection(('192.0.2.1', 9), timeout=1); print('network')\n"
            "except OSError:\n print('isolated')")
    cmd = argv(Policy(devices=gpu_devices())) + [sys.executable, "-c", code]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return Probe(False, f"bwrap could not be run: {e}")
    if p.returncode != 0:
        return Probe(False, _explain(p.stderr))
    if p.stdout.strip() != "isolated":
        return Probe(False, f"a sandboxed process still reached the network ({p.stdout.strip()!r})")
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip() or "bwrap"
    gpus = len(gpu_devices())
    return Probe(True, f"{version}: no network, private /tmp, {gpus} GPU device node(s) bound")


def cuda_inside() -> str | None:
    """None where torch finds the GPU inside a sandbox, else what went wrong (`grader doctor` asks, on a GPU
    machine: a device node or a library the sandbox lacks shows here, not in the first grading)."""
    code = "import torch; torch.ones(1, device='cuda').add_(1); print('cuda ok')"
    try:
        p = subprocess.run(argv(Policy(devices=gpu_devices())) + [sys.executable, "-c", code], capture_output=True,
                           text=True, timeout=300, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return str(e)
    if p.stdout.strip() == "cuda ok":
        return None
    lines = [ln for ln in (p.stderr or p.stdout).splitlines() if ln.strip()]
    return lines[-1][-400:] if lines else f"exit code {p.returncode}"


def require() -> None:
    """Raises GraderError (exit 2) saying why, and what to install or enable, where the sandbox does not work."""
    from grader.errors import GraderError

    p = probe()
    if not p.ok:
        raise GraderError(f"the sandbox for submissions' code does not work here: {p.detail}. Or, knowing what it "
                          f"gives up, pass --no-sandbox ({GIVES_UP})")


GIVES_UP = ("the submission's code then runs as you: it can read solutions/, the hidden cases, the ranked secret and "
            "your home, write into other submissions' results and builds, open network connections, and leave "
            "processes running after its grading")
