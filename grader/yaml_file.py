"""The grader's YAML inputs (course.yaml, hidden.yaml, the Slurm settings, the site's glossary), read one way: a file
that is missing, a folder, unreadable, not UTF-8, not YAML, or that repeats a key in one mapping gets a message that
names the file and what to do, never a traceback. A repeated key is an error because YAML keeps the last one
silently: a course.yaml with two `threshold:` lines under one exercise would grade against whichever came last."""
from __future__ import annotations

import io
import os
from collections.abc import Hashable
from pathlib import Path

import yaml

from grader.errors import GraderError


class _UniqueKeys:
    """safe_load's construction, except that a key repeated in one mapping is an error."""

    def construct_mapping(self, node, deep=False):
        # Only the mapping's own keys count: one that overrides a key merged in by `<<: *anchor` (course.yaml's
        # exercises do) is not a repeat.
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, Hashable):  # SafeLoader's own error says so below
                continue
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"{key!r} is defined twice in one mapping (YAML would keep only the last)",
                    key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


# libyaml's parser when PyYAML was built with it (its wheels are): course.yaml parses in a tenth of the pure-Python
# parser's time (0.13 s of every grader command here). Construction, and with it the check above, is the same code.
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_UniqueKeyLoader = type("_UniqueKeyLoader", (_UniqueKeys, _SafeLoader), {})


def safe_load(text: str):
    """yaml.safe_load with libyaml's parser where there is one (the same documents, the same errors' kinds)."""
    return yaml.load(text, Loader=_SafeLoader)


def not_a_file(path: Path) -> str | None:
    """What stands at path, said after its name, when it is there but is no file to read: a folder, a link that
    leads to nothing, a pipe or a device. None for a regular file (or a link to one), and for nothing at all (the
    caller says what is missing where)."""
    p = Path(path)
    if p.is_symlink() and not p.exists():
        return f"is a link to {os.readlink(p)}, and no file is there"
    if p.is_dir():
        return "is a folder, not a YAML file"
    if p.exists() and not p.is_file():
        return "is not a regular file"
    return None


def read_yaml(path: Path, label: str, missing: str = "does not exist"):
    """The document in the YAML file at path (None for an empty one). label names the file in every message (its
    path, or e.g. "--slurm-config: PATH"); missing is what is said of it when nothing is there at all."""
    if why := not_a_file(path):
        raise GraderError(f"{label} {why}")
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise GraderError(f"{label} {missing}") from None
    except OSError as e:
        raise GraderError(f"{label} cannot be read: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise GraderError(f"{label} is not valid UTF-8 (byte 0x{data[e.start]:02x} at line {line}, column {column}): "
                          "save it as UTF-8") from None
    stream = io.StringIO(text)
    stream.name = str(path)  # what YAML's messages call the file
    try:
        return yaml.load(stream, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as e:
        raise GraderError(f"{label} is not valid YAML:\n  {e}") from None
