"""The error helpers every module shares: install hints and missing extras."""

from __future__ import annotations

import subprocess
import sys

import pytest

from statevcs.errors import MissingExtra, install_hint, require_module


def test_install_hint_names_the_extra_and_the_editable_install() -> None:
    assert install_hint("s3") == (
        "install the `s3` extra: python -m pip install -e '.[s3]' in a statevcs clone"
    )


def test_require_module_passes_for_an_installed_module_and_names_the_extra_otherwise() -> None:
    require_module("the test", "json", "nothing")
    with pytest.raises(MissingExtra) as caught:
        require_module("the test", "no_such_module_for_statevcs", "thing")
    assert isinstance(caught.value, ModuleNotFoundError)
    assert caught.value.name == "no_such_module_for_statevcs"
    assert caught.value.extra == "thing"
    assert "install the `thing` extra" in str(caught.value)


@pytest.mark.parametrize("extra", ["langgraph", "strands"])
def test_an_integration_without_its_framework_names_the_extra(extra: str) -> None:
    # sys.modules[name] = None makes the framework unimportable in that interpreter only.
    code = (
        f"import sys; sys.modules[{extra!r}] = None\n"
        f"try:\n    import statevcs.integrations.{extra}\n"
        "except ModuleNotFoundError as e:\n    print(type(e).__name__, e)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.startswith("MissingExtra "), result.stdout + result.stderr
    assert f"install the `{extra}` extra" in result.stdout
