"""The cases one check runs, in order: correctness (every dtype × shape, then the stability probes), then
timing (every dtype × benchmark shape). Planned once, by the runner; the worker receives the list in its job."""
from __future__ import annotations

import hashlib
from typing import Literal

from pydantic import BaseModel, ConfigDict

from grader.course import Case, Exercise


class PlannedCase(BaseModel):
    model_config = ConfigDict(frozen=True)

    index: int
    kind: Literal["correctness", "benchmark"]
    dtype: str
    case: Case
    probe: str | None = None

    @property
    def label(self) -> str:
        return self.case.label() + (f" [{self.probe}]" if self.probe else "")

    @property
    def named(self) -> str:
        """The case as the verdict names it, dtype first ("fp16 1x2x37x64 causal"): what --case matches."""
        return f"{self.dtype} {self.label}"

    def seed(self, base_seed: int) -> int:
        """Each case gets its own seed derived from the run's seed, so a failure reproduces with --seed."""
        h = hashlib.sha256(f"{base_seed}|{self.kind}|{self.dtype}|{self.label}".encode()).digest()
        return int.from_bytes(h[:6], "little")


def plan(ex: Exercise, dtypes: list[str] | None = None, benchmark: bool = True,
         cases: list[str] | None = None) -> list[PlannedCase]:
    """cases: only those whose name (PlannedCase.named) contains one of these texts (`grader check --case`). A case
    keeps its seed whatever else is chosen: the seed comes from its name, not its place in the list."""
    chosen = [d for d in ex.dtypes if dtypes is None or d in dtypes]

    def expand(cases):  # each case once per variant (an exercise without variants has one, empty)
        return [c.with_params(v) for c in cases for v in (ex.variants or [{}])]

    items = [("correctness", d, c, None) for d in chosen for c in expand(ex.correctness)]
    items += [("correctness", d, c, p) for d in chosen for p in ex.probes for c in expand(ex.probe_shapes)]
    if benchmark:
        items += [("benchmark", d, c, None) for d in chosen for c in expand(ex.benchmark)]
    planned = [PlannedCase(index=i, kind=k, dtype=d, case=c, probe=p) for i, (k, d, c, p) in enumerate(items)]
    if cases:
        chosen = [pc for pc in planned if any(text in pc.named for text in cases)]
        planned = [pc.model_copy(update={"index": i}) for i, pc in enumerate(chosen)]
    return planned
