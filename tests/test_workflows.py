"""The GitHub Actions workflows: valid against SchemaStore's workflow schema (as the check-jsonschema package ships it),
and doing what the course needs: ranked runs on a self-hosted GPU runner whose labels are configurable, the secret
seed from the repository's secrets, results kept as artifacts, the leaderboard published with the site."""
import importlib.resources
import json
import os
import subprocess
from functools import cache
from pathlib import Path

import pytest
import yaml

from grader import cli
from tests.conftest import ROOT, needs_modules

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.y*ml"))
pytestmark = needs_modules("jsonschema", "check_jsonschema")


@cache
def workflow_validator():
    """SchemaStore's workflow schema as the installed check-jsonschema ships it, never a copy in this repository."""
    import jsonschema
    from check_jsonschema.builtin_schemas import vendor

    return jsonschema.Draft7Validator(json.loads(importlib.resources.files(vendor).joinpath("github-workflows.json")
                                                 .read_text()))


def load(path: Path) -> dict:
    doc = yaml.safe_load(path.read_text())
    if True in doc:  # YAML 1.1 reads the key `on` as true; GitHub reads it as "on"
        doc["on"] = doc.pop(True)
    return doc


def steps(job: dict) -> list[dict]:
    return job.get("steps", [])


def runs(job: dict) -> str:
    return "\n".join(s.get("run", "") for s in steps(job))


def uses(job: dict) -> list[str]:
    return [s["uses"].split("@")[0] for s in steps(job) if "uses" in s]


def test_there_are_workflows():
    assert [p.name for p in WORKFLOWS] == ["leaderboard.yml"]


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_each_workflow_is_valid_against_the_schema(path):
    errors = sorted(workflow_validator().iter_errors(load(path)), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors[:5])


@pytest.mark.parametrize("path,value", [(["jobs", "ranked", "runs-on"], 7),
                                        (["jobs", "ranked", "steps"], "checkout, then check"),
                                        (["jobs", "publish", "timeout-minuets"], 20),
                                        (["on", "schedule"], [{"crontab": "17 3 * * *"}])])
def test_the_schema_catches_a_broken_workflow(path, value):
    doc = load(WORKFLOWS[0])
    d = doc
    for k in path[:-1]:
        d = d[k]
    d[path[-1]] = value
    assert not workflow_validator().is_valid(doc)


def test_ranked_runs_use_a_configurable_self_hosted_runner_and_the_secret_seed(tmp_path, monkeypatch):
    doc = load(ROOT / ".github/workflows/leaderboard.yml")
    job = doc["jobs"]["ranked"]
    assert "runner_labels" in doc["on"]["workflow_dispatch"]["inputs"]
    assert job["runs-on"] == "${{ fromJSON(inputs.runner_labels || vars.GPU_RUNNER_LABELS || " \
                             "'[\"self-hosted\", \"gpu\"]') }}"
    assert job["env"][cli.RANKED_SEED_ENV] == "${{ secrets.GRADER_RANKED_SEED }}"
    assert "schedule" in doc["on"] and job["strategy"]["matrix"]["day"] == "${{ fromJSON(needs.plan.outputs.days) }}"
    text = runs(job)
    assert '--ranked --json "results/$PARTICIPANT/$DAY.json"' in text and "python3 -m grader check" in text
    up = next(s for s in steps(job) if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert up["with"]["path"] == "results/" and up["with"]["if-no-files-found"] == "error"
    # the grader's own options, as the workflow uses them, parse (after its mkdir)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results/x").mkdir(parents=True)
    cli.parser().parse_args(["check", "day01", "--solution", "--ranked", "--json", "results/x/day01.json"])


def test_the_leaderboard_is_built_from_the_artifacts_and_published_with_the_site():
    job = load(ROOT / ".github/workflows/leaderboard.yml")["jobs"]["publish"]
    assert set(job["needs"]) == {"plan", "ranked"} and "always()" in job["if"]
    assert uses(job)[-2:] == ["actions/upload-pages-artifact", "actions/deploy-pages"]
    assert "actions/download-artifact" in uses(job)
    text = runs(job)
    assert "python3 -m grader leaderboard build results --out .grader/leaderboard" in text
    assert "python3 -m grader site build --strict" in text  # it finds .grader/leaderboard by itself
    assert job["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    cli.parser().parse_args(["leaderboard", "build", "results", "--out", ".grader/leaderboard"])
    cli.parser().parse_args(["site", "build", "--strict"])


@pytest.mark.parametrize("days,expected", [("", None), ("day3 day01", ["day03", "day01"])])
def test_the_plan_step_lists_the_days_from_course_yaml(tmp_path, days, expected):
    from grader.course import load_course

    step = next(s for s in steps(load(ROOT / ".github/workflows/leaderboard.yml")["jobs"]["plan"]) if s.get("id") == "days")
    out = tmp_path / "github_output"
    env = {**os.environ, "DAYS": days, "GITHUB_OUTPUT": str(out), "PYTHONPATH": str(ROOT)}
    subprocess.run(["bash", "-e", "-c", step["run"]], cwd=ROOT, env=env, check=True, timeout=120)
    key, _, value = out.read_text().strip().partition("=")
    ready = [d.id for d in load_course(ROOT / "course.yaml").days if d.status == "ready"]
    assert key == "days" and json.loads(value) == (expected or ready) and ready
