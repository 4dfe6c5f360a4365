"""Hostile submissions, as data: each attack is one thing a submission's code can do on the machine that grades it,
written twice: as Python that runs when the grader imports the op's file (any Python exercise's top level), and
as a C function that a built extension runs when it is imported (a Python C extension's init on the CPU, the
PYBIND11_MODULE body of day 1's bindings on the GPU). Both are host code: they run on a machine without a GPU
too. The targets (paths, a port, a process name) are filled in by the test.

An attack does its harm if it can, then lets the import go on; one that is refused raises at the import with what
was refused and why, so that the grader's verdict (a build error at the submission's file) names it."""
from pathlib import Path

OP_PY = '''

def scale(x, out):
    out.copy_(x * 2)
'''

ATTACKS = ("prints_solution", "writes_other_result", "opens_socket", "forks_daemon", "fills_tmp", "reads_seed")

PYTHON = {
    # prints a solution file of the instructor's: the submission's log and result would then carry it
    "prints_solution": "print(open({solution!r}).read())",
    # overwrites another student's result with one of its own making
    "writes_other_result": "open({other_result!r}, 'w').write('{{\"day\": \"day01\", \"exercises\": []}}')",
    # connects to a server on the grading machine's loopback and sends it a message
    "opens_socket": ("import socket\n"
                     "socket.create_connection(('127.0.0.1', {port}), timeout=5).sendall(b'sent from a submission')"),
    # leaves a process behind: its own session (out of the grading's process group), every descriptor closed; it
    # sleeps long enough to outlive a grading of the six on a loaded machine (the tests kill it when done)
    "forks_daemon": ("import os\n"
                     "if os.fork() == 0:\n"
                     "    os.setsid()\n"
                     "    if os.fork() == 0:\n"
                     "        os.closerange(0, 1024)\n"
                     "        os.execv('/bin/sleep', [{marker!r}, '1800'])\n"
                     "    os._exit(0)\n"
                     "os.wait()"),
    # fills /tmp (the host's, without a sandbox) with `mib` MiB in 1 MiB writes
    "fills_tmp": ("with open({tmp_file!r}, 'wb') as f:\n"
                  "    for _ in range({mib}):\n"
                  "        f.write(bytes(1 << 20))\n"
                  "        f.flush()"),
    # reads the ranked secret: from the environment the grader runs in, else from where it is kept
    "reads_seed": ("import os\n"
                   "print('SEED', os.environ.get('GRADER_RANKED_SEED'), "
                   "open(os.environ.get('GRADER_RANKED_SEED_FILE') or {seed_file!r}).read())"),
}

# Each defines `static int hostile_attack(char* why, size_t n)`: 0 when it did what it set out to, else -1 with
# what was refused in why.
C_INCLUDES = r'''
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
'''

_REFUSED = 'snprintf(why, n, "%s %s: %s", what, target, strerror(errno));'

C = {
    "prints_solution": r'''
static int hostile_attack(char* why, size_t n) {
  const char *what = "open", *target = "{solution}";
  FILE* f = fopen(target, "r");
  if (!f) { REFUSED return -1; }
  char buf[4096];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, got, stdout);
  fflush(stdout);
  fclose(f);
  return 0;
}
''',
    "writes_other_result": r'''
static int hostile_attack(char* why, size_t n) {
  const char *what = "open for writing", *target = "{other_result}";
  FILE* f = fopen(target, "w");
  if (!f) { REFUSED return -1; }
  fputs("{\"day\": \"day01\", \"exercises\": []}", f);
  fclose(f);
  return 0;
}
''',
    "opens_socket": r'''
static int hostile_attack(char* why, size_t n) {
  const char *what = "socket to", *target = "127.0.0.1:{port}";
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons({port});
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (s < 0 || connect(s, (struct sockaddr*)&a, sizeof a) != 0) {
    REFUSED
    if (s >= 0) close(s);
    return -1;
  }
  send(s, "sent from a submission", 22, 0);
  close(s);
  return 0;
}
''',
    "forks_daemon": r'''
static int hostile_attack(char* why, size_t n) {
  (void)why; (void)n;
  pid_t child = fork();
  if (child == 0) {
    setsid();
    if (fork() == 0) {
      for (int fd = 0; fd < 1024; fd++) close(fd);
      char* argv[] = {(char*)"{marker}", (char*)"1800", NULL};
      execv("/bin/sleep", argv);
    }
    _exit(0);
  }
  waitpid(child, NULL, 0);
  return 0;
}
''',
    "fills_tmp": r'''
static int hostile_attack(char* why, size_t n) {
  const char *what = "write", *target = "{tmp_file}";
  int fd = open(target, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) { REFUSED return -1; }
  static char block[1 << 20];
  for (int k = 0; k < {mib}; k++) {  // a short write (the disk filled mid-block) is retried: the next says ENOSPC
    for (size_t off = 0; off < sizeof block;) {
      ssize_t w = write(fd, block + off, sizeof block - off);
      if (w < 0) { REFUSED close(fd); return -1; }
      off += (size_t)w;
    }
  }
  close(fd);
  return 0;
}
''',
    "reads_seed": r'''
static int hostile_attack(char* why, size_t n) {
  const char* what = "open";
  const char* target = getenv("GRADER_RANKED_SEED_FILE") ? getenv("GRADER_RANKED_SEED_FILE") : "{seed_file}";
  FILE* f = fopen(target, "r");
  if (!f) { REFUSED return -1; }
  char buf[256] = {0};
  size_t got = fread(buf, 1, sizeof buf - 1, f);
  buf[got] = 0;
  printf("SEED %s %s\n", getenv("GRADER_RANKED_SEED") ? getenv("GRADER_RANKED_SEED") : "None", buf);
  fflush(stdout);
  fclose(f);
  return 0;
}
''',
}

# The CPU's extension: a Python C module whose init runs the attack, then defines scale(x, out) (out = 2 x).
C_MODULE = r'''
#include <Python.h>
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)

static PyObject* scale(PyObject*, PyObject* args) {
  PyObject *x, *out;
  if (!PyArg_ParseTuple(args, "OO", &x, &out)) return NULL;
  PyObject* two = PyLong_FromLong(2);
  PyObject* y = PyNumber_Multiply(x, two);
  Py_DECREF(two);
  if (!y) return NULL;
  PyObject* r = PyObject_CallMethod(out, "copy_", "O", y);
  Py_DECREF(y);
  if (!r) return NULL;
  Py_DECREF(r);
  Py_RETURN_NONE;
}
static PyMethodDef methods[] = {{"scale", scale, METH_VARARGS, "out = 2 x"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "hostile", NULL, -1, methods};

PyMODINIT_FUNC CAT(PyInit_, TORCH_EXTENSION_NAME)(void) {
  char why[512];
  if (hostile_attack(why, sizeof why) != 0) {
    PyErr_SetString(PyExc_OSError, why);
    return NULL;
  }
  return PyModule_Create(&module);
}
'''


def _fill(text: str, targets: dict) -> str:
    for k, v in targets.items():
        text = text.replace("{" + k + "}", str(v))
    return text


def python_source(name: str, **targets) -> str:
    """A Python op module that runs the attack at its import."""
    return "import torch  # noqa: F401\n" + PYTHON[name].format(**targets) + "\n" + OP_PY


def c_attack(name: str, **targets) -> str:
    """The attack as C: the includes and hostile_attack()."""
    return C_INCLUDES + _fill(C[name].replace("REFUSED", _REFUSED), targets)


def c_module(name: str, **targets) -> str:
    """A Python C extension (the CPU's) whose init runs the attack."""
    return c_attack(name, **targets) + C_MODULE


def day01_bindings(bindings: str, name: str, **targets) -> str:
    """Day 1's bindings.cpp with the attack run first thing in its PYBIND11_MODULE body: a refusal is the
    import's error (pybind11 turns the exception into an ImportError that names it)."""
    head = "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {"
    assert head in bindings, "day 1's bindings define their module with PYBIND11_MODULE"
    call = head + "\n  { char why[512]; if (hostile_attack(why, sizeof why) != 0) throw std::runtime_error(why); }"
    return c_attack(name, **targets) + "#include <stdexcept>\n" + bindings.replace(head, call)


def processes_named(marker: str) -> list[int]:
    """The pids of the processes whose program name (argv[0]) is marker: what a forked daemon left running."""
    found = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if (p / "cmdline").read_bytes().split(b"\0")[0] == marker.encode():
                    found.append(int(p.name))
            except OSError:
                pass
    return found
