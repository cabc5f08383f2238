"""The deployment files (deploy/: Dockerfile, compose, nginx, Helm chart) say only what Knora understands.

Docker and Helm do not run on the machines Knora is built on, so the images are not built here; what is
checked: every ``KNORA_*`` variable they set is a setting (a typo would be ignored silently by the server),
the probes' paths are the app's health routes, the image runs the installed ``knora serve`` as a non-root
user, and every ``.Values`` path a chart template reads is in values.yaml.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

from knora.settings import Settings

pytestmark = pytest.mark.unit

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
SETTINGS = {f"KNORA_{name.upper()}" for name in Settings.model_fields}


def _knora_names(text: str) -> set[str]:
    return set(re.findall(r"\bKNORA_[A-Z0-9_]+\b", text))


@pytest.mark.parametrize("path", sorted(p.relative_to(DEPLOY).as_posix() for p in DEPLOY.rglob("*")
                                        if p.is_file()))
def test_every_knora_variable_is_a_setting(path: str) -> None:
    unknown = _knora_names((DEPLOY / path).read_text(encoding="utf-8")) - SETTINGS
    assert not unknown, f"{path} sets {sorted(unknown)}, which Knora does not read"


def test_the_image_runs_the_installed_server_as_a_non_root_user() -> None:
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    project = tomllib.loads((DEPLOY.parent / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["scripts"]["knora"] == "knora.cli.main:main"
    assert 'CMD ["knora", "serve"]' in text
    users = re.findall(r"^USER\s+(\S+)", text, re.MULTILINE)
    assert users
    assert users[-1] not in ("root", "0")
    extras = re.findall(r'pip install [^\n]*"\.\[([a-z0-9,]+)\]"', text)
    assert extras, "the image installs the project with its extras"
    for extra in extras[0].split(","):
        assert extra in project["optional-dependencies"], extra
    assert "/health/ready" in text


def test_probes_use_the_apps_health_routes() -> None:
    from knora.api.app import create_app

    paths = {getattr(r, "path", "") for r in create_app(Settings(sample_kb=False)).routes}
    chart = (DEPLOY / "helm" / "knora" / "templates" / "deployment.yaml").read_text(encoding="utf-8")
    probed = set(re.findall(r"path: (/[a-z/]+)", chart))
    assert probed == {"/health", "/health/ready"}
    assert probed <= paths


def test_compose_runs_replicas_on_the_shared_services() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))
    services = compose["services"]
    assert {"postgres", "redis", "minio", "knora", "proxy"} <= set(services)
    env = services["knora"]["environment"]
    assert env["KNORA_BLOB_STORE"] == "s3"  # several replicas refuse a local blob store
    assert env["KNORA_STREAM_LOG"] == "redis"
    assert env["KNORA_DATABASE_URL"].startswith("postgresql+asyncpg://")
    assert services["knora"]["deploy"]["replicas"] > 1
    # the replicas' settings would start: interpolated as compose does, checked as knora serve does
    from knora.adapters.blobs.registry import replica_problem as blob_problem
    from knora.adapters.secrets.fernet import new_key
    from knora.adapters.secrets.fernet import replica_problem as secret_problem

    given = {"KNORA_API_KEY": "sk-deploy-test", "KNORA_SECRET_KEY": new_key()}
    values = {name[len("KNORA_"):].lower(): re.sub(r"\$\{(\w+):\?[^}]*\}", lambda m: given[m.group(1)],
                                                   str(value)) for name, value in env.items()}
    settings = Settings(**values)
    assert (blob_problem(settings), secret_problem(settings)) == (None, None)
    assert settings.several_replicas
    nginx = (DEPLOY / "nginx.conf").read_text(encoding="utf-8")
    assert "proxy_buffering off" in nginx  # SSE frames must not wait in the proxy


def test_chart_templates_read_only_values_that_exist() -> None:
    chart = DEPLOY / "helm" / "knora"
    assert yaml.safe_load((chart / "Chart.yaml").read_text(encoding="utf-8"))["name"] == "knora"
    values = yaml.safe_load((chart / "values.yaml").read_text(encoding="utf-8"))
    for template in (chart / "templates").glob("*.yaml"):
        for path in re.findall(r"\.Values\.([A-Za-z0-9_.]+)", template.read_text(encoding="utf-8")):
            node = values
            for key in path.split("."):
                assert isinstance(node, dict), f"{template.name}: .Values.{path} is not set"
                assert key in node, f"{template.name}: .Values.{path} is not set"
                node = node[key]
