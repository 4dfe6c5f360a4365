"""nbgrader, imported the one way the grader does (releasing the notebooks, writing the gradebook).

nbgrader imports nbformat, which imports jsonschema. Where rfc3987-syntax is installed (jupyter-events pulls it in
with jsonschema's format-nongpl extra), jsonschema's import builds that package's 38 IRI grammars for its "iri"
format checker: a second of CPU in every process, about a third of a `grader release` here. Notebook validation
never checks formats (jsonschema asserts them only when given a FormatChecker, and nbformat's schema names no
IRI), so that import is made to fail, which jsonschema takes as the checker being unavailable."""
from __future__ import annotations

import sys


def nbgrader_ready() -> None:
    """Call before the first import of nbgrader, nbformat or jsonschema in this process."""
    sys.modules.setdefault("rfc3987_syntax", None)
