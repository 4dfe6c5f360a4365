"""A command the tests start and interrupt (tests/test_watch.py, tests/test_check_on_slurm.py): how a shell starts it
(which SIGINT it inherits), its output lines as they come, and a wait on one of them that ends at the line, at the
command's exit, or at a bound."""
import signal
import subprocess
import threading
import time

# How a shell starts a command, as the SIGINT it gets: a terminal's shell leaves it at its default; a shell without
# job control (a script, a CI step) starts `cmd &` with SIGINT ignored, and an ignored signal stays ignored through
# exec, so the command must take it back itself.
STARTED = {"from a terminal": signal.SIG_DFL, "in the background of a script": signal.SIG_IGN}


def started(how: str):
    """A preexec_fn that starts the command as STARTED[how] says."""
    disposition = STARTED[how]
    return lambda: signal.signal(signal.SIGINT, disposition)


class Lines(list):
    """A process's output lines so far (stdout, text mode), a thread appending each as it comes until the output
    ends (reader)."""

    def __init__(self, proc: subprocess.Popen):
        super().__init__()
        self.reader = threading.Thread(target=lambda: self.extend(iter(proc.stdout.readline, "")), daemon=True)
        self.reader.start()


def lines_of(proc: subprocess.Popen) -> Lines:
    return Lines(proc)


def wait_for(lines: Lines, text: str, seconds: float, proc: subprocess.Popen | None = None) -> str:
    """The first line containing text, once it has come. Fails once proc has ended and its output with it without
    such a line, else after seconds."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        found = next((ln for ln in lines if text in ln), None)
        if found is not None:
            return found
        if proc is not None and proc.poll() is not None:
            lines.reader.join(max(0.0, end - time.monotonic()))  # its last lines
            found = next((ln for ln in lines if text in ln), None)
            if found is not None:
                return found
            raise AssertionError(f"exited ({proc.returncode}) with no line with {text!r}: {''.join(lines)}")
        time.sleep(0.1)
    raise AssertionError(f"no line with {text!r} within {seconds} s: {''.join(lines)}")


def time_limit(seconds: int):
    """A fixture's body (`yield from time_limit(S)`): the test fails with TimeoutError past S seconds instead of
    stalling the suite (a hung compiler or job)."""
    def expire(*_):
        raise TimeoutError(f"the test ran past {seconds} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)
