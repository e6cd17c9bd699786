"""The history browser's JSON API and app (``statevcs.cli.web``) over real repositories: answers,
pages, errors, headers, write checks, hostile arguments, and the ``statevcs serve`` command."""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import webrepo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

import statevcs
from statevcs.cli.web.api import HistoryBrowser
from statevcs.cli.web.app import (
    CONTENT_SECURITY_POLICY,
    MAX_BODY,
    build_app,
    host_name,
    json_response,
)
from statevcs.serializers import MsgpackSerializer

BASE = "http://127.0.0.1:8000"
TOKEN = "secret-token"


@pytest.fixture(scope="module")
def repo_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("web-api-repo")
    webrepo.build(path)
    return path


@pytest.fixture(scope="module")
def client(repo_path: Path) -> Iterator[TestClient]:
    with statevcs.Repo.open(repo_path, serializer=MsgpackSerializer()) as repo:
        yield TestClient(build_app(HistoryBrowser(repo)), base_url=BASE)


@pytest.fixture
def writable(tmp_path: Path) -> Iterator[tuple[TestClient, statevcs.Repo]]:
    with statevcs.Repo.init(tmp_path / "w") as repo:
        repo.commit({"messages": [{"role": "user", "content": "one"}]}, "one")
        repo.commit({"messages": [{"role": "user", "content": "two"}]}, "two")
        app = build_app(HistoryBrowser(repo, writable=True), token=TOKEN)
        yield TestClient(app, base_url=BASE), repo


def _ok(client: TestClient, url: str) -> Any:
    response = client.get(url)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    return response.json()


def _error(client: TestClient, url: str, status: int) -> dict[str, Any]:
    response = client.get(url)
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert error["status"] == status
    return error


def test_graph_pages_stitch_into_the_whole_history(client: TestClient, repo_path: Path) -> None:
    rows: list[dict[str, Any]] = []
    offset: int | None = 0
    pages = 0
    while offset is not None:
        page = _ok(client, f"/api/graph?offset={offset}&limit=40")
        assert page["offset"] == offset
        rows += page["rows"]
        offset = page["next_offset"]
        pages += 1
    assert pages == -(-webrepo.COMMITS // 40)
    whole = _ok(client, "/api/graph?limit=200")["rows"]
    assert rows == whole  # lanes continue across pages
    commits = [r["commit"]["id"] for r in rows if r["commit"]]
    with statevcs.Repo.open(repo_path) as repo:
        assert sorted(commits) == sorted(c.id for c in repo.log_all())
        assert rows[0]["commit"]["id"] == repo.resolve("main")
    assert any(cell[0] == "/" for row in rows for cell in row["graph"])
    assert _ok(client, "/api/graph?offset=100000")["rows"] == []


def test_commit_pages_its_conversation(client: TestClient) -> None:
    first = _ok(client, "/api/commit?rev=long&limit=50")
    assert first["message_count"] == 4 + webrepo.LONG_BRANCH_COMMITS
    assert [m["position"] for m in first["messages"]] == list(range(50))
    assert first["next_offset"] == 50
    last = _ok(client, "/api/commit?rev=long&offset=100&limit=50")
    assert last["messages"][-1]["message"] == {
        "role": "user",
        "content": f"long step {webrepo.LONG_BRANCH_COMMITS - 1}",
    }
    assert last["next_offset"] is None
    assert first["state"] == {"step": webrepo.LONG_BRANCH_COMMITS - 1}
    assert first["commit"]["labels"] == [{"kind": "branch", "name": "long"}]


def test_diff_search_and_compare_answer(client: TestClient) -> None:
    diff = _ok(client, "/api/diff?a=main~1&b=experiment&limit=2")
    assert diff["messages"]["change_count"] == 5
    assert len(diff["messages"]["changes"]) == 2
    assert diff["messages"]["next_offset"] == 2
    assert {c["key"] for c in diff["state"]} == {"model", "turn"}
    found = _ok(client, "/api/search?q=ZEBRA")
    assert {m["snippet"] for m in found["messages"]} >= {"Umbrella weather (zebra) in Lisbon 3"}
    assert _ok(client, "/api/search?q=zebra&rev=main")["messages"] == []
    compared = _ok(client, "/api/compare?a=main~1&b=experiment")
    assert compared["first_divergence"] == 3
    assert compared["turns"][2]["status"] == "diverged"


def test_an_empty_repository_answers_empty_pages_and_clear_errors(tmp_path: Path) -> None:
    with statevcs.Repo.init(tmp_path / "empty") as repo:
        client = TestClient(build_app(HistoryBrowser(repo)), base_url=BASE)
        graph = _ok(client, "/api/graph")
        assert (graph["commit_count"], graph["rows"], graph["next_offset"]) == (0, [], None)
        assert _ok(client, "/api/refs")["head"] is None
        assert "has no commits yet" in _error(client, "/api/commit", 404)["message"]
        assert _ok(client, "/api/search?q=x")["messages"] == []


def test_the_graph_draws_forks_and_merges_as_log_graph_does(tmp_path: Path) -> None:
    path = tmp_path / "merged"
    with statevcs.Repo.init(path) as repo:
        for n in range(3):
            repo.commit({"messages": [], "n": n}, f"main {n}")
        repo.branch("topic", "main~1")
        repo.branch("other", "main~2")
        for n in range(2):
            repo.commit({"messages": [], "n": 1, "t": n}, f"topic {n}", branch="topic")
            repo.commit({"messages": [], "n": 0, "o": n}, f"other {n}", branch="other")
        repo.merge("main", "topic", message="merge topic")
        repo.commit({"messages": [], "n": 9}, "after the merge")
        client = TestClient(build_app(HistoryBrowser(repo)), base_url=BASE)
        rows = [
            r
            for offset in (0, 3, 6)
            for r in _ok(client, f"/api/graph?offset={offset}&limit=3")["rows"]
        ]
    printed = subprocess.run(
        [sys.executable, "-m", "statevcs", "-C", str(path), "log", "--graph", "--oneline"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.splitlines()
    assert len(printed) == len(rows)
    for line, row in zip(printed, rows, strict=True):
        drawn = "".join(char for char, _ in row["graph"])
        if row["commit"] is None:
            assert line == drawn
        else:
            assert line.startswith(drawn + row["commit"]["short_id"]), (line, drawn)
    assert any(len(r["commit"]["parents"]) == 2 for r in rows if r["commit"])
    assert {"\\", "/"} <= {char for r in rows for char, _ in r["graph"]}


def test_a_damaged_repository_answers_a_json_error_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "damaged"
    with statevcs.Repo.init(path) as repo:
        repo.commit({"messages": [{"role": "user", "content": "hi"}]}, "one")
        snapshot = repo.get_commit("main").snapshot_id
    with sqlite3.connect(path / "statevcs.sqlite3") as db:
        db.execute("DELETE FROM objects WHERE id = ?", (bytes.fromhex(snapshot),))
    with statevcs.Repo.open(path) as repo:
        client = TestClient(build_app(HistoryBrowser(repo)), base_url=BASE)
        error = _error(client, "/api/commit?rev=main", 500)
        assert error["type"] == "MissingObject"
        assert snapshot[:12] in error["message"]
        assert _ok(client, "/api/graph")["commit_count"] == 1  # the graph needs no snapshot


def test_refs_version_changes_when_a_ref_moves(tmp_path: Path) -> None:
    with statevcs.Repo.init(tmp_path / "r") as repo:
        repo.commit({"messages": []}, "one")
        client = TestClient(build_app(HistoryBrowser(repo)), base_url=BASE)
        before = _ok(client, "/api/refs")
        assert before["branches"] == {"main": repo.resolve("main")}
        assert _ok(client, "/api/refs")["version"] == before["version"]
        with statevcs.Repo.open(tmp_path / "r") as other:
            other.branch("side")
        after = _ok(client, "/api/refs")
        assert after["version"] != before["version"]
        assert _ok(client, "/api/graph")["version"] == after["version"]


def test_errors_are_json_that_say_what_to_do(client: TestClient) -> None:
    error = _error(client, "/api/commit?rev=nope", 404)
    assert error["type"] == "UnknownRevision"
    assert "statevcs log" in error["message"]
    assert _error(client, "/api/diff?b=main", 400)["message"] == (
        "the query parameter 'a' is required"
    )
    assert "whole number" in _error(client, "/api/graph?offset=-1", 400)["message"]
    assert "from 1 to 200" in _error(client, "/api/graph?limit=201", 400)["message"]
    assert _error(client, "/api/search?q=(a&regex=true", 400)["type"] == "InvalidPattern"
    assert _error(client, "/api/search?q=x&all=maybe", 400)["message"].startswith("all must")
    assert _error(client, "/api/nothing", 404)["type"] == "NotFound"
    page = client.get("/nothing")
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
    assert "/nothing" not in page.text  # the path is never reflected


def test_every_response_carries_the_security_headers(client: TestClient) -> None:
    for url in ("/", "/static/app.js", "/static/app.css", "/api/info", "/api/nope", "/x"):
        headers = client.get(url).headers
        assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY, url
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["x-frame-options"] == "DENY"
    assert "'unsafe-inline'" not in CONTENT_SECURITY_POLICY
    assert "require-trusted-types-for 'script'" in CONTENT_SECURITY_POLICY


def test_a_foreign_host_name_is_refused(repo_path: Path) -> None:
    with statevcs.Repo.open(repo_path) as repo:
        app = build_app(HistoryBrowser(repo))
        for base in ("http://evil.example", "http://127.0.0.1.evil.example:8000"):
            refused = TestClient(app, base_url=base).get("/api/info")
            assert refused.status_code == 400
            assert refused.json()["error"]["type"] == "WrongHost"
        for base in ("http://localhost:9", "http://[::1]:8000", "http://LOCALHOST"):
            assert TestClient(app, base_url=base).get("/api/info").status_code == 200


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ("127.0.0.1:8000", "127.0.0.1"),
        ("[::1]:8000", "::1"),
        ("[::1]", "::1"),
        ("LocalHost", "localhost"),
        ("[::1", ""),
        ("", ""),
    ],
)
def test_host_names_are_read_like_a_browser_writes_them(header: str, name: str) -> None:
    assert host_name(header) == name


def test_static_files_stay_inside_their_folder(client: TestClient) -> None:
    for url in ("/static/../api.py", "/static/%2e%2e/api.py", "/static/", "/static/nope.js"):
        assert client.get(url).status_code == 404, url


def test_hostile_text_is_json_data_with_controls_escaped(client: TestClient) -> None:
    response = client.get(f"/api/commit?rev={webrepo.HOSTILE_BRANCH}")
    assert response.status_code == 200
    raw = response.text
    for char in ("\x1b", "\x07", "\u202e", "\U000e0041", "\x00"):
        assert char not in raw
    assert "\\u202e" in raw
    data = response.json()
    assert data["commit"]["metadata"] == webrepo.HOSTILE_METADATA
    assert data["messages"][-1]["message"]["content"] == webrepo.HOSTILE_CONTROLS
    assert {"kind": "tag", "name": webrepo.HOSTILE_TAG} in data["commit"]["labels"]


def test_a_read_only_browser_refuses_writes(client: TestClient) -> None:
    response = client.post(
        "/api/branches", json={"name": "x"}, headers={"origin": BASE, "x-statevcs-token": "t"}
    )
    assert response.status_code == 403
    assert "--allow-write" in response.json()["error"]["message"]


def _post(client: TestClient, path: str, body: Any, **headers: str) -> Any:
    sent = {"origin": BASE, "x-statevcs-token": TOKEN, "content-type": "application/json"}
    sent.update({k.replace("_", "-"): v for k, v in headers.items()})
    return client.post(path, content=json.dumps(body), headers=sent)


def test_writes_check_the_token_origin_and_body(
    writable: tuple[TestClient, statevcs.Repo],
) -> None:
    client, repo = writable
    before = repo.refs.as_hex("refs/")
    refused = [
        _post(client, "/api/branches", {"name": "x"}, x_statevcs_token="wrong"),
        _post(client, "/api/branches", {"name": "x"}, origin="http://evil.example"),
        _post(client, "/api/branches", {"name": "x"}, origin="null"),
        _post(client, "/api/branches", {"name": "x"}, content_type="text/plain"),
        _post(client, "/api/branches", "x" * MAX_BODY),
        _post(client, "/api/branches", ["x"]),
        _post(client, "/api/branches", {"name": "bad..name"}),
        _post(client, "/api/branches", {"name": "main"}),
        _post(client, "/api/reset", {"branch": "nope", "rev": "main"}),
        client.post("/api/branches", json={"name": "x"}, headers={"x-statevcs-token": TOKEN}),
    ]
    assert [r.status_code for r in refused] == [403, 403, 403, 415, 413, 400, 400, 400, 400, 403]
    assert all(r.json()["error"]["message"] for r in refused)
    assert repo.refs.as_hex("refs/") == before
    assert client.get("/api/branches").status_code == 405

    assert _post(client, "/api/branches", {"name": "side", "rev": "main~1"}).status_code == 200
    assert _post(client, "/api/tags", {"name": "v1"}).status_code == 200
    moved = _post(client, "/api/reset", {"branch": "side", "rev": "main"})
    assert moved.status_code == 200
    assert repo.branches()["side"] == repo.resolve("main")
    assert repo.tags() == {"v1": repo.resolve("main")}


def test_the_browser_works_on_s3(s3_url: str) -> None:
    with statevcs.Repo.init(s3_url) as repo:
        repo.commit({"messages": [{"role": "user", "content": "on s3"}]}, "s3 one")
        repo.branch("side")
        repo.commit({"messages": [{"role": "user", "content": "more"}]}, "s3 two")
    with statevcs.Repo.open(s3_url) as repo:
        client = TestClient(build_app(HistoryBrowser(repo)), base_url=BASE)
        graph = _ok(client, "/api/graph")
        assert [r["commit"]["message"] for r in graph["rows"]] == ["s3 two", "s3 one"]
        shown = _ok(client, "/api/commit?rev=side")
        assert shown["messages"][0]["message"]["content"] == "on s3"
        assert _ok(client, "/api/search?q=s3")["messages"][0]["snippet"] == "on s3"


def test_wrong_argument_types_are_type_errors(repo_path: Path) -> None:
    with statevcs.Repo.open(repo_path) as repo:
        with pytest.raises(TypeError, match="repo must be"):
            HistoryBrowser("repo")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="writable must be"):
            HistoryBrowser(repo, writable="yes")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="browser must be"):
            build_app(repo)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="token"):
            build_app(HistoryBrowser(repo, writable=True))


HOSTILE_TEXT = st.text(min_size=0, max_size=60)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    endpoint=st.sampled_from(["graph", "commit", "diff", "search", "compare"]),
    params=st.dictionaries(
        st.sampled_from(["rev", "a", "b", "q", "offset", "limit", "all", "regex"]),
        HOSTILE_TEXT,
        max_size=4,
    ),
)
def test_hostile_query_arguments_answer_json_and_change_nothing(
    client: TestClient, repo_path: Path, endpoint: str, params: dict[str, str]
) -> None:
    with statevcs.Repo.open(repo_path) as repo:
        before = repo.refs.as_hex("refs/")
    response = client.get(f"/api/{endpoint}", params=params)
    assert response.status_code in (200, 400, 404), response.text
    data = response.json()
    if response.status_code != 200:
        assert data["error"]["message"]
    with statevcs.Repo.open(repo_path) as repo:
        assert repo.refs.as_hex("refs/") == before


def _free_port() -> tuple[socket.socket, int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    return sock, sock.getsockname()[1]


def test_serve_on_a_busy_port_says_what_to_do(repo_path: Path) -> None:
    busy, port = _free_port()
    with busy:
        result = subprocess.run(
            [sys.executable, "-m", "statevcs", "serve", str(repo_path), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode != 0
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "--port" in result.stderr


def test_serve_without_a_repository_says_so(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "statevcs", "serve", str(tmp_path / "none"), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "not a statevcs repository" in result.stderr


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    message=st.text(min_size=1, max_size=80),
    content=st.text(max_size=80),
    key=st.text(min_size=1, max_size=20),
)
def test_any_stored_text_answers_as_json_that_decodes_to_it(
    tmp_path_factory: pytest.TempPathFactory, message: str, content: str, key: str
) -> None:
    path = tmp_path_factory.mktemp("any-text")
    with statevcs.Repo.init(path, serializer=MsgpackSerializer()) as repo:
        try:
            repo.commit(
                {"messages": [{"role": "user", "content": content}], key: content},
                message,
                metadata={key: message},
            )
        except statevcs.StateVCSError:
            return  # refused at commit time (e.g. lone surrogates): nothing to show
        data = HistoryBrowser(repo).commit("HEAD")
    body = bytes(json_response(data).body).decode("utf-8")
    assert not any(c in body for c in "\x7f\x85\u2028\u202e\u2066\ufeff\U000e0041")
    assert json.loads(body) == data
    assert data["messages"][0]["message"]["content"] == content
    assert data["commit"]["message"] == message


# --- key order as JavaScript will list it ---------------------------------------------------


def _as_pairs(value: Any) -> Any:
    """What the page lists: objects as (key, value) pairs in order, ``__map__`` ones too."""
    if isinstance(value, dict) and list(value) == ["__map__"]:
        return [(k, _as_pairs(v)) for k, v in value["__map__"]]
    if isinstance(value, dict):
        # A JavaScript object lists array-index keys first, ascending.
        def js_key(key: str) -> tuple[int, int]:
            index = key.isascii() and key.isdigit() and (key == "0" or key[0] != "0")
            return (0, int(key)) if index and int(key) <= 2**32 - 2 else (1, 0)

        return [(k, _as_pairs(value[k])) for k in sorted(value, key=js_key)]
    if isinstance(value, list):
        return [_as_pairs(v) for v in value]
    return value


def _committed_pairs(value: Any) -> Any:
    if isinstance(value, dict):
        return [(k, _committed_pairs(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_committed_pairs(v) for v in value]
    return value


_json_keys = st.sampled_from(["0", "2", "10", "01", "-1", "a", "b", "4294967294", "4294967295"])
_nested = st.recursive(
    st.integers(0, 9) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_json_keys, inner, max_size=5),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(_nested)
def test_the_page_lists_every_object_in_its_committed_order(value: Any) -> None:
    from statevcs.cli.web.api import in_js_order

    sent = json.loads(json.dumps(in_js_order(value)))
    assert _as_pairs(sent) == _committed_pairs(value)


def test_objects_javascript_keeps_in_order_are_sent_as_they_are() -> None:
    from statevcs.cli.web.api import in_js_order

    value = {"b": {"2": 1, "10": 2}, "a": [{"x": 1}]}
    assert in_js_order(value) == value  # "2" before "10" is JavaScript's order already
    deep: Any = {"10": 1, "2": 2}
    for _ in range(5000):  # never recursion
        deep = [deep]
    out = in_js_order(deep)
    for _ in range(5000):
        out = out[0]
    assert out == {"__map__": [["10", 1], ["2", 2]]}
