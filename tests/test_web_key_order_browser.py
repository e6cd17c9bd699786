"""The history browser (``statevcs serve``) and the committed key order, in Chromium: the
diff view names a reorder; the commit view's state tree lists keys as committed, also keys like
``"10"`` and ``"2"``, which a JavaScript object would list first (the API sends such an object
as ordered pairs)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import BrowserContext, expect

import statevcs
from tests.test_web_browser import Server, Watched, browser, playwright  # noqa: F401


@pytest.fixture(scope="module")
def ordered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, list[str]]]:
    path = tmp_path_factory.mktemp("ordered-web")
    with statevcs.Repo.init(path) as repo:
        first = repo.commit({"b": 1, "10": 2, "2": 3, "messages": []}, message="ordered")
        second = repo.commit({"10": 2, "b": 1, "2": 3, "messages": []}, message="reordered")
    running = Server(path)
    yield running, [first.id, second.id]
    running.stop()


def test_the_diff_view_names_a_reorder(
    browser: BrowserContext,  # noqa: F811
    ordered: tuple[Server, list[str]],
) -> None:
    server, (first, second) = ordered
    watched = Watched(browser.new_page(), server.url)
    page = watched.open(f"#/diff/{first}/{second}")
    expect(page.locator("#diff-order-state")).to_have_text("state key order: b, 10, 2 → 10, b, 2")
    expect(page.locator("#diff-empty")).to_have_count(0)
    watched.assert_inert()


def test_the_commit_view_lists_state_keys_as_committed(
    browser: BrowserContext,  # noqa: F811
    ordered: tuple[Server, list[str]],
) -> None:
    server, (first, _second) = ordered
    watched = Watched(browser.new_page(), server.url)
    page = watched.open(f"#/commit/{first}")
    keys = page.locator("#state > details > ul > li > .leaf > .key")
    expect(keys).to_have_text(["b", "10", "2"])
