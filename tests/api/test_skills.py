"""``GET /skills`` through the real app on SQLite: the skills folder's skills when skills are on, WeKnora's
"skills off" answer otherwise, and a ``session_id`` of another tenant is a 404."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from knora.root import Services
from knora.settings import Settings
from tests.conftest import client_for, started

pytestmark = pytest.mark.integration


def _skill(root: Path, folder: str, name: str, description: str) -> None:
    (root / folder).mkdir(parents=True)
    (root / folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\nDo it.\n",
                                            encoding="utf-8")


async def test_skills_on_lists_the_folder(make_settings: Callable[..., Settings], tmp_path: Path) -> None:
    root = tmp_path / "skills"
    _skill(root, "b", "summarise", "Sums up a text")
    _skill(root, "a", "translate", "Translates")
    (root / "not-a-skill").mkdir()  # no SKILL.md: left out
    async with started(make_settings(skills_enabled=True, skills_dir=root)) as c, client_for(c) as http:
        r = await http.get("/api/v1/skills", params={"sandbox_config_id": "any"})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["success"] is True
        assert body["skills_available"] is True
        assert body["data"] == [{"name": "translate", "description": "Translates"},
                                {"name": "summarise", "description": "Sums up a text"}]
        assert body["builtin_skills"] == {"known": False, "skills": [], "unavailable": 0}


async def test_skills_off_is_an_empty_list_not_available(make_settings: Callable[..., Settings],
                                                         tmp_path: Path) -> None:
    root = tmp_path / "skills"
    _skill(root, "a", "translate", "Translates")
    async with started(make_settings(skills_enabled=False, skills_dir=root)) as c, client_for(c) as http:
        body = (await http.get("/api/v1/skills")).json()
        assert (body["data"], body["skills_available"]) == ([], False)


async def test_session_id_must_be_the_tenants(sqlite_container: Services) -> None:
    mine = await sqlite_container.session_service.create(1, title="t")
    _, key = await sqlite_container.tenants.create("other")
    async with client_for(sqlite_container) as http, \
            client_for(sqlite_container, **{"X-API-Key": key}) as other:
        assert (await http.get("/api/v1/skills", params={"session_id": mine.id})).status_code == 200
        for sid in (mine.id, "not-a-uuid"):
            r = await other.get("/api/v1/skills", params={"session_id": sid})
            assert r.status_code == 404, r.text
            assert r.json()["success"] is False
        long = await http.get("/api/v1/skills", params={"session_id": "x" * 300})
        assert (long.status_code, long.json()["success"]) == (400, False)
