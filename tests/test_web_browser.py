"""``statevcs serve`` in a real headless Chromium (Debian's ``chromium``, driven by Playwright).

The server is the real command (``python -m statevcs serve REPO --port 0``) over a SQLite
repository built here. Each test opens the page as a person would: the graph, a commit's
conversation, a diff of two ticked commits, a search, a comparison, hostile text, errors, a live
refresh after another process commits, and writes with the printed token. Screenshots go to
``$STATEVCS_TEST_ARTIFACTS`` (default ``build/test-artifacts``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import webrepo
from playwright.sync_api import BrowserContext, Page, Playwright, expect, sync_playwright

import statevcs

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(
    os.environ.get(
        "STATEVCS_TEST_ARTIFACTS", Path(__file__).resolve().parents[1] / "build" / "test-artifacts"
    )
)
# Recorded before any page script runs: a script that should never run sets window.__pwned, a
# blocked one fires securitypolicyviolation.
WATCH = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__violations.push(e.violatedDirective + " " + e.blockedURI);
});
"""


class Server:
    """A running ``statevcs serve``: its address, token (with --allow-write) and process."""

    def __init__(self, repo: Path, *extra: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "statevcs", "serve", str(repo), "--port", "0", *extra],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.process.stderr is not None
        line = self.process.stderr.readline()
        found = re.search(r"at (http://127\.0\.0\.1:\d+/)(#token=(\S+))?", line)
        if found is None:
            self.process.kill()
            raise AssertionError(f"statevcs serve printed {line!r}")
        self.url = found.group(1)
        self.token = found.group(3)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


@pytest.fixture(scope="module")
def repo_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("web-repo")
    webrepo.build(path)
    return path


@pytest.fixture(scope="module")
def server(repo_path: Path) -> Iterator[Server]:
    running = Server(repo_path)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    assert CHROMIUM.exists(), "install Debian's chromium: apt-get install -y chromium"
    with sync_playwright() as running:
        yield running


@pytest.fixture
def browser(playwright: Playwright, tmp_path: Path) -> Iterator[BrowserContext]:
    """Chromium with a fresh profile (user data dir) of its own for each test."""
    context = playwright.chromium.launch_persistent_context(
        tmp_path / "chromium-profile",
        executable_path=str(CHROMIUM),
        headless=True,
        args=CHROMIUM_ARGS,
        viewport={"width": 1280, "height": 900},
    )
    yield context
    context.close()


class Watched:
    """A page with everything a hostile string could make happen recorded."""

    def __init__(self, page: Page, base: str) -> None:
        self.page = page
        self.base = base
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.requests: list[str] = []
        page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("request", lambda r: self.requests.append(r.url))
        page.add_init_script(WATCH)

    def open(self, fragment: str = "#/") -> Page:
        self.page.goto(self.base + fragment)
        expect(self.page.locator("body")).to_have_attribute("data-ready", "true")
        return self.page

    def assert_inert(self) -> None:
        """No dialog, no script of the repository's, no blocked attempt, no foreign request."""
        page = self.page
        assert self.dialogs == []
        assert self.errors == []
        assert page.evaluate("window.__pwned") is None
        assert page.evaluate("window.__violations") == []
        assert page.url.startswith(self.base)
        assert all(url.startswith(self.base) for url in self.requests), self.requests
        # Only the page's own script; no element made of repository markup.
        assert page.locator("script").count() == 1
        assert page.locator("main img, main iframe, main script, main b").count() == 0
        hrefs = page.eval_on_selector_all("a", "links => links.map(a => a.getAttribute('href'))")
        assert all(h.startswith("#/") for h in hrefs), hrefs


@pytest.fixture
def watched(browser: BrowserContext, server: Server) -> Watched:
    return Watched(browser.new_page(), server.url)


def _shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"serve-{name}.png"), full_page=False)


def _row(page: Page, message: str) -> Any:
    """The graph row of the commit whose message starts with ``message``."""
    exact = page.locator(".message", has_text=re.compile("^" + re.escape(message)))
    return page.locator("tr.commit-row").filter(has=exact).first


def test_the_graph_shows_branches_forks_and_labels(watched: Watched) -> None:
    page = watched.open()
    rows = page.locator("#graph tr.commit-row")
    expect(rows).to_have_count(100)  # one page of commits, not all of them
    expect(page.locator(".summary")).to_contain_text(f"{webrepo.COMMITS} commits")
    expect(_row(page, "experiment turn 4").locator(".label-branch")).to_have_text("experiment")
    expect(_row(page, "a commit by a hostile author").locator(".label-head")).to_have_text("main")
    graph = "".join(page.locator("#graph td.graph").all_text_contents())
    assert "*" in graph and "|" in graph and "/" in graph  # forks drawn like log --graph
    _shot(page, "graph")
    watched.assert_inert()


def test_the_graph_loads_further_pages_with_lanes_continued(watched: Watched) -> None:
    page = watched.open()
    page.get_by_role("button", name="Load more commits").click()
    expect(page.locator("#graph tr.commit-row")).to_have_count(webrepo.COMMITS)
    expect(page.get_by_role("button", name="Load more commits")).to_have_count(0)
    expect(_row(page, "turn 1")).to_be_visible()
    watched.assert_inert()


def test_a_commit_shows_its_conversation_as_chat(watched: Watched) -> None:
    page = watched.open()
    _row(page, "experiment turn 4").locator("a.commit-link").click()
    expect(page.locator("h1")).to_contain_text("Commit")
    expect(page.locator("#commit-message")).to_have_text("experiment turn 4")
    chat = page.locator("#conversation")
    expect(chat.locator("article.msg")).to_have_count(16)
    expect(chat.locator("article.role-user").first).to_contain_text(
        "question 1: weather in Lisbon?"
    )
    expect(chat).to_contain_text("Umbrella weather (zebra) in Lisbon 4")
    # Tool calls and results are folded until opened.
    call = chat.locator("details.fold", has_text="tool call: weather").first
    expect(call).not_to_have_attribute("open", "")
    call.locator("summary").click()
    expect(call).to_contain_text('"Lisbon"')
    result = chat.locator("details.fold", has_text="tool result (success)").first
    result.locator("summary").click()
    expect(result).to_contain_text("sunny, 21 degrees")
    # State as a tree.
    expect(page.locator("#state")).to_contain_text('"other"')
    _shot(page, "commit")
    watched.assert_inert()


def test_images_are_placeholders(watched: Watched) -> None:
    page = watched.open(f"#/commit/{webrepo.HOSTILE_BRANCH.replace('/', '%2F')}")
    expect(page.locator("#conversation .placeholder")).to_have_text(
        "\u2039image png, 208 bytes\u203a"
    )
    watched.assert_inert()


def test_two_ticked_commits_show_their_diff(watched: Watched) -> None:
    page = watched.open()
    _row(page, "experiment turn 4").locator("input.pick").check()
    _row(page, "turn 3").locator("input.pick").check()
    page.locator("#diff-selected").click()
    expect(page.locator("h1")).to_have_text("Diff")
    table = page.locator("#diff-messages-table")
    expect(table).to_contain_text("changed")
    expect(table.locator(".side-a")).to_contain_text(["It is sunny in Lisbon 3"])
    expect(table.locator(".side-b")).to_contain_text(["Umbrella weather (zebra) in Lisbon 3"])
    expect(page.locator("#diff-state")).to_contain_text("model")
    _shot(page, "diff")
    watched.assert_inert()


def test_search_finds_a_word_across_branches(watched: Watched) -> None:
    page = watched.open()
    page.locator("#search-input").fill("zebra")
    page.locator("#search-input").press("Enter")
    results = page.locator(".search-result")
    expect(results).to_have_count(2)
    expect(results.first).to_contain_text("Umbrella weather (zebra)")
    results.first.locator("a.commit-link").first.click()
    expect(page.locator("#commit-message")).to_contain_text("experiment turn")
    page.go_back()
    expect(page.locator(".search-result")).to_have_count(2)
    _shot(page, "search")
    watched.assert_inert()


def test_two_branches_compare_turn_by_turn(watched: Watched) -> None:
    page = watched.open("#/compare")
    page.locator("#compare-a").select_option("main")
    page.locator("#compare-b").select_option("experiment")
    page.get_by_role("button", name="Compare").click()
    expect(page.locator("#compare-summary")).to_contain_text("first divergence at turn")
    expect(page.locator("#compare-table tr.turn")).to_have_count(4)
    last = page.locator("#compare-table tr.turn").nth(3)
    expect(last.locator("td").nth(1)).to_have_text("diverged")
    last.locator(".side-b details.fold summary").click()
    expect(last.locator(".side-b")).to_contain_text("Umbrella weather (zebra) in Lisbon 4")
    _shot(page, "compare")
    watched.assert_inert()


def test_hostile_text_shows_literally_and_runs_nothing(watched: Watched) -> None:
    page = watched.open()
    row = _row(page, "hostile")
    expect(row.locator(".label-branch")).to_have_text(webrepo.HOSTILE_BRANCH)
    expect(row.locator(".label-tag")).to_have_text("tag: " + webrepo.HOSTILE_TAG)
    expect(row.locator(".message")).to_have_text("hostile " + webrepo.HOSTILE_HTML)
    author = _row(page, "a commit by a hostile author").locator(".author")
    expect(author).to_have_text("Mallory <script>window.__pwned=7</script> \\u202eroot")
    watched.assert_inert()

    row.locator("a.commit-link").click()
    expect(page.locator("#commit-message")).to_contain_text(webrepo.HOSTILE_LINK)
    expect(page.locator("#commit-message")).to_contain_text(
        "red \\x1b[31m bell \\x07 rtl \\u202eevil\\u202c tag \\U000e0041 nul \\x00 end"
    )
    metadata = page.locator("#commit-metadata")
    expect(metadata).to_contain_text("<b>key</b>")
    expect(metadata).to_contain_text('"<iframe src=javascript:window.__pwned=8>"')
    expect(metadata).to_contain_text("\\x1b]8;;http://evil\\x07link")
    chat = page.locator("#conversation")
    expect(chat).to_contain_text(webrepo.HOSTILE_HTML)
    expect(chat).to_contain_text(webrepo.HOSTILE_LINK)
    expect(chat.locator("article.role-other .role")).to_have_text("<b>system</b>")
    expect(page.locator("#state")).to_contain_text(webrepo.HOSTILE_HTML)
    # Open every fold (tool calls, raw messages, trees), nested ones too: nothing runs either.
    for _ in range(4):
        page.eval_on_selector_all("main details", "all => all.forEach(d => { d.open = true; })")
    expect(chat).to_contain_text("content [1]")
    _shot(page, "hostile")
    watched.assert_inert()


def test_an_unknown_revision_is_a_clear_error_page(watched: Watched) -> None:
    page = watched.open("#/commit/no-such-branch")
    error = page.locator("section.error")
    expect(error.locator("h2")).to_have_text("Not found")
    expect(error.locator(".error-message")).to_contain_text("unknown revision 'no-such-branch'")
    expect(error.locator(".error-status")).to_have_text("HTTP 404 · UnknownRevision")
    page.goto(watched.base + "#/diff/main/%3Cscript%3E")
    expect(page.locator("section.error .error-message")).to_contain_text("'<script>'")
    page.goto(watched.base + "#/nowhere")
    expect(page.locator("section.error h2")).to_have_text("Not found")
    _shot(page, "error")
    watched.assert_inert()


def test_the_graph_refreshes_when_another_process_commits(
    browser: BrowserContext, tmp_path: Path
) -> None:
    path = tmp_path / "live"
    with statevcs.Repo.init(path) as repo:
        repo.commit({"messages": [{"role": "user", "content": "hello"}]}, "first commit")
    running = Server(path)
    try:
        watched = Watched(browser.new_page(), running.url)
        page = watched.open()
        expect(page.locator("#graph tr.commit-row")).to_have_count(1)
        subprocess.run(
            [sys.executable, "-m", "statevcs", "--repo", str(path), "branch", "side"],
            check=True,
            capture_output=True,
        )
        with statevcs.Repo.open(path) as other:
            other.commit({"messages": [{"role": "user", "content": "again"}]}, "second commit")
        expect(page.locator("#graph tr.commit-row")).to_have_count(2, timeout=10_000)
        expect(_row(page, "first commit").locator(".label-branch")).to_have_text("side")
        expect(page.locator("#live")).to_contain_text("History changed")
        watched.assert_inert()
    finally:
        running.stop()


def test_writes_need_the_printed_token(browser: BrowserContext, tmp_path: Path) -> None:
    path = tmp_path / "writable"
    with statevcs.Repo.init(path) as repo:
        repo.commit({"messages": [{"role": "user", "content": "one"}]}, "one")
        repo.commit({"messages": [{"role": "user", "content": "two"}]}, "two")
    running = Server(path, "--allow-write")
    try:
        assert running.token
        watched = Watched(browser.new_page(), running.url)
        page = watched.open(f"#token={running.token}")
        assert page.url == running.url + "#/"  # the token left the address bar
        _row(page, "one").locator("a.commit-link").click()
        page.locator("#new-branch").fill("from-one")
        page.get_by_role("button", name="Create branch here").click()
        expect(page.locator("h1 .label-branch")).to_have_text("from-one")
        with statevcs.Repo.open(path) as repo:
            assert repo.branches()["from-one"] == repo.resolve("main~1")

        # Without the token (a new tab): refused, nothing written.
        other = Watched(browser.new_page(), running.url)
        page = other.open("#/commit/main")
        page.locator("#new-tag").fill("v1")
        page.get_by_role("button", name="Create tag here").click()
        expect(page.locator(".write-status")).to_contain_text("needs the token")
        with statevcs.Repo.open(path) as repo:
            assert repo.tags() == {}
        watched.assert_inert()
    finally:
        running.stop()


def test_the_quickstart_repository_opens_as_a_new_user_would(
    browser: BrowserContext, tmp_path: Path
) -> None:
    root = Path(__file__).resolve().parents[1]
    printed = subprocess.run(
        [sys.executable, str(root / "examples" / "quickstart.py"), str(tmp_path / "history")],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    command = printed.splitlines()[-1].split()
    assert command[:2] == ["statevcs", "serve"] and command[-1] == "--open"
    running = Server(Path(command[2]))
    try:
        watched = Watched(browser.new_page(), running.url)
        page = watched.open()
        expect(page.locator(".summary")).to_contain_text("commits")
        assert page.locator("#graph tr.commit-row").count() > 40
        page.locator("#graph tr.commit-row a.commit-link").first.click()
        expect(page.locator("#conversation article.msg").first).to_contain_text("Plan three days")
        watched.assert_inert()
    finally:
        running.stop()
