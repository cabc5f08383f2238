"""Registry[T]: names declared once, implementations imported lazily, unknown names refused with the list."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from knora.domain.registry import Registry, UnknownName

pytestmark = pytest.mark.unit


def _double(x: int) -> int:
    return 2 * x


def test_callables_and_import_strings_resolve() -> None:
    reg: Registry[Callable[[int], int]] = Registry("doubler", {"direct": _double})
    reg.register("imported", f"{__name__}:_double")
    assert reg.get("direct")(3) == 6
    assert reg.get("imported")(4) == 8
    assert reg.names() == ("direct", "imported")
    assert "direct" in reg
    assert "other" not in reg
    assert list(reg) == ["direct", "imported"]
    assert len(reg) == 2


def test_import_strings_are_imported_on_first_get_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "knora_registry_probe.py").write_text("def build() -> str:\n    return 'built'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = "knora_registry_probe"
    reg: Registry[Callable[[], str]] = Registry("engine", {"probe": f"{module}:build"})
    assert reg.check("probe") == "probe"
    assert reg.names() == ("probe",)
    assert module not in sys.modules  # naming and checking import nothing
    first = reg.get("probe")
    assert module in sys.modules
    assert first() == "built"
    assert reg.get("probe") is first  # resolved once, cached
    monkeypatch.delitem(sys.modules, module)


def test_dotted_attribute_paths_resolve() -> None:
    reg: Registry[object] = Registry("thing", {"join": "os:path.join"})
    import os

    assert reg.get("join") is os.path.join


def test_unknown_name_lists_the_known_ones() -> None:
    reg: Registry[int] = Registry("colour", {"red": 1, "blue": 2})
    with pytest.raises(UnknownName, match=r"unknown colour 'green'; known: blue, red") as err:
        reg.get("green")
    assert isinstance(err.value, ValueError)
    assert err.value.known == ("blue", "red")
    assert err.value.name == "green"
    with pytest.raises(ValueError, match="known: blue, red"):
        reg.check("green")


def test_register_replaces_and_forgets_the_resolved_value() -> None:
    reg: Registry[int] = Registry("number", {"n": 1})
    assert reg.get("n") == 1
    reg.register("n", 2)
    assert reg.get("n") == 2


def test_malformed_import_string_is_refused() -> None:
    reg: Registry[object] = Registry("thing", {"bad": "no_colon_here"})
    with pytest.raises(ValueError, match="module:attribute"):
        reg.get("bad")
