"""Secrets in a repository URL never reach a message, a repr, a log record or the CLI's output
(issue 17, section 5), and a URL missing its '//' is refused instead of becoming a folder.

A password may hold any character ('/', '@', '#', '?', ...), so no parse can find where it
ends: every URL shape below is tried with keys of every shape, and no four characters of the
key (raw or percent-encoded) may show, wherever they would have come from.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from reliability.harness import count
from test_cli import invoke

from statevcs import Repo
from statevcs.errors import RepositoryError, StateVCSError
from statevcs.stores.registry import holds_credentials, mask_credentials

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

# Each shape puts the key where someone might: the userinfo of any scheme (in any case, with
# one slash, with none), an endpoint_url's userinfo (plain or percent-encoded), or a query
# parameter that names a secret.
SHAPES = [
    "s3://AKIDEXAMPLE:{key}@bucket/prefix",
    "S3://AKIDEXAMPLE:{key}@bucket/prefix?region=us-east-1",
    "s3://{key}@bucket/prefix",
    "gcs://AKIDEXAMPLE:{key}@bucket/prefix",
    "HTTPS://user:{key}@example.com/repo",
    "s3:/AKIDEXAMPLE:{key}@bucket/prefix",
    "s3:AKIDEXAMPLE:{key}@bucket",
    "memory://user:{key}@",
    "s3://bucket/prefix?endpoint_url=http://AKIDEXAMPLE:{key}@127.0.0.1:9",
    "s3://bucket/prefix?region=us-east-1&endpoint_url={encoded_endpoint}",
    "s3://bucket/prefix?secret_access_key={key}",
    "s3://bucket/prefix?aws_session_token={key}&region=us-east-1",
    "s3://bucket/prefix?password={encoded}",
    "s3://bucket/prefix?token={key}",
    # An '@' a parser may fold from another character or decode from a second layer of
    # percent-encoding, and secret parameters under other providers' names.
    "s3://AKIDEXAMPLE:{key}\uff20bucket/prefix",
    "s3://bucket/prefix?endpoint_url=http://AKIDEXAMPLE:{key}\ufe6b127.0.0.1:9",
    "s3://bucket/prefix?endpoint_url={twice_encoded_endpoint}",
    "s3://AKIDEXAMPLE:{twice_encoded}%2540bucket/prefix",
    "az://container/prefix?sv=2022-11-02&sig={encoded}",
    "s3://bucket/prefix?aws_session={key}",
    # Pasted with a space or a BOM before it: it became a local folder named after the key.
    " s3://AKIDEXAMPLE:{key}@bucket/prefix",
    "\ufeffs3://AKIDEXAMPLE:{key}@bucket/prefix",
]
"""URL shapes; ``{key}`` is the secret, ``{encoded}`` it percent-encoded."""

_REFERENCE_KEY = "REFERENCEKEY"
_SPECIAL = st.sampled_from([*"/@:#?&%= +;~!*'()[]$,\\\"<>\t", "%40", "%2F", "://", "é", "€"])
KEYS = st.one_of(
    # A key is text a URL can carry: no lone surrogates (UTF-8 cannot encode them).
    st.lists(
        st.one_of(_SPECIAL, st.characters(blacklist_categories=("Cs",))), min_size=4, max_size=30
    ).map("".join),
    st.text(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", min_size=40, max_size=40
    ),
)


def url_of(shape: str, key: str) -> str:
    endpoint = f"http://AKIDEXAMPLE:{key}@127.0.0.1:9"
    return shape.format(
        key=key,
        encoded=urllib.parse.quote(key, safe=""),
        encoded_endpoint=urllib.parse.quote(endpoint, safe=""),
        twice_encoded=urllib.parse.quote(urllib.parse.quote(key, safe=""), safe=""),
        twice_encoded_endpoint=urllib.parse.quote(urllib.parse.quote(endpoint, safe=""), safe=""),
    )


def forms(key: str) -> set[str]:
    """The key as it may appear: raw, percent-encoded (once or twice), form-encoded."""
    once = urllib.parse.quote(key, safe="")
    return {key, once, urllib.parse.quote(once, safe=""), urllib.parse.quote_plus(key, safe="")}


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def everything_shown(url: str, folder: Path) -> str:
    """Every message, repr, log record and CLI output that opening ``url`` produces."""
    shown: list[str] = []
    records = _Records()
    root = logging.getLogger()
    level = root.level
    root.addHandler(records)
    root.setLevel(logging.DEBUG)
    previous = os.getcwd()
    os.chdir(folder)  # where a URL taken for a folder path would be created
    try:
        for call in (Repo.open, Repo.init):
            try:
                repo = call(url)
            except (StateVCSError, TypeError) as exc:
                shown += [str(exc), repr(exc)]
            else:  # accepted: then what it shows of itself counts too
                shown += [repr(repo), repr(repo.store), str(repo.url)]
                repo.close()
        if "\x00" not in url:  # no process gets a NUL in its arguments
            for args in (
                ("--repo", url, "log"),
                ("--debug", "--repo", url, "log"),
                ("-C", url, "log"),
                ("init", url),
            ):
                result = invoke(*args, cwd=folder, code=None)
                shown += [result.stdout, result.stderr]
    finally:
        os.chdir(previous)
        root.removeHandler(records)
        root.setLevel(level)
    return "\n".join(shown + records.lines)


@pytest.fixture(scope="module")
def reference() -> Iterator[str]:
    """What is shown for a known key in every shape: words a key may share with a message."""
    with tempfile.TemporaryDirectory() as folder:
        yield "\n".join(everything_shown(url_of(s, _REFERENCE_KEY), Path(folder)) for s in SHAPES)


def leaks(key: str, shown: str, reference: str) -> set[str]:
    """Every 4-character piece of ``key`` that ``shown`` holds and a message would not."""
    pieces = {f[i : i + 4] for f in forms(key) for i in range(len(f) - 3)}
    return {p for p in pieces if p in shown and p not in reference}


@settings(
    max_examples=count("URL_SECRETS", 25),
    suppress_health_check=[HealthCheck.too_slow],
)
@given(key=KEYS)
@example(key=AWS_SECRET)
@example(key="p@ss/w#rd?x&y=z%40 é")
def test_no_part_of_a_key_in_a_url_is_ever_shown(key: str, reference: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        for shape in SHAPES:
            url = url_of(shape, key)
            assert holds_credentials(url), url
            shown = everything_shown(url, Path(folder))
            assert not leaks(key, shown, reference), (url, leaks(key, shown, reference), shown)
            assert not leaks(key, mask_credentials(url), reference)
        # Nothing was created, least of all a folder named after the URL.
        assert os.listdir(folder) == []


def test_the_command_line_in_its_own_process_shows_no_key(tmp_path: Path) -> None:
    url = url_of("s3://AKIDEXAMPLE:{key}@bucket/prefix?region=us-east-1", AWS_SECRET)
    env = {k: v for k, v in os.environ.items() if k != "STATEVCS_REPO"}
    done = subprocess.run(
        [sys.executable, "-m", "statevcs", "--repo", url, "log"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1 and "holds credentials" in done.stderr
    assert not leaks(AWS_SECRET, done.stdout + done.stderr, ""), done.stderr
    assert list(tmp_path.iterdir()) == []


def test_masking_keeps_what_holds_no_secret() -> None:
    assert mask_credentials("s3://bucket/p?region=us-east-1") == "s3://bucket/p?region=us-east-1"
    assert mask_credentials("/home/me@corp/repo") == "/home/me@corp/repo"  # a folder path
    assert mask_credentials(f"s3://AKID:{AWS_SECRET}@bucket/p") == "s3://***@bucket/p"
    assert mask_credentials("gcs://u:a@b@bucket") == "gcs://***@bucket"
    assert (
        mask_credentials("s3://b/p?region=x&secret_access_key=a&b=c") == "s3://b/p?region=x&"
        "secret_access_key=***"
    )


@pytest.mark.parametrize(
    "endpoint",
    ["http://host\uff1a9000", "http://ho\uff0fst", "http://[::1", "http://[zz]:9"],
)
def test_an_endpoint_python_cannot_split_is_a_repository_error(endpoint: str) -> None:
    # urlsplit raises ValueError for these (quoting the netloc): a RepositoryError instead.
    for call in (Repo.open, Repo.init):
        with pytest.raises(RepositoryError, match="endpoint_url is not an http"):
            call(f"s3://bucket/prefix?endpoint_url={endpoint}")


def test_an_endpoint_from_the_environment_with_credentials_is_masked_in_errors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # obstore's message quotes the request URL, built from AWS_ENDPOINT_URL with its userinfo.
    secret = "wJalrXUtnFEMI/K7MDENG@bPxRfiCY"
    endpoint = f"http://AKIDEXAMPLE:{urllib.parse.quote(secret, safe='')}@127.0.0.1:9"
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    monkeypatch.setenv("AWS_ALLOW_HTTP", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    with pytest.raises(StateVCSError) as caught:
        Repo.open("s3://bucket/prefix")
    shown = str(caught.value)
    assert "127.0.0.1:9" in shown  # the message still says where it failed
    assert not leaks(secret, shown, ""), shown
    assert "AKIDEXAMPLE:" not in shown


# --- a URL missing its '//' -----------------------------------------------------------------


@pytest.mark.parametrize(
    "location",
    ["s3:/bucket/prefix", "s3:bucket", "S3:/x", "gcs:/x", "memory:", "s3:/AKID:x/y@bucket/p"],
)
def test_a_url_missing_its_slashes_is_refused_and_creates_nothing(
    location: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for call in (Repo.init, Repo.open):
        with pytest.raises(RepositoryError, match="missing its '//'") as caught:
            call(location)
        assert "://" in str(caught.value) and "./" in str(caught.value)
        assert "x/y" not in str(caught.value)
        with pytest.raises(RepositoryError, match="missing its '//'"):
            call(Path(location))
    for args in (("init", location), ("--repo", location, "log"), ("-C", location, "log")):
        result = invoke(*args, cwd=tmp_path, code=1)
        assert "missing its '//'" in result.stderr and "x/y" not in result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("junk", [" ", "\t", "\n", "\ufeff", "\u200b", "\x1b"])
def test_a_url_after_whitespace_is_refused_and_creates_nothing(
    junk: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for call in (Repo.init, Repo.open):
        with pytest.raises(RepositoryError, match="before what looks like a repository URL") as e:
            call(f"{junk}s3://AKIDEXAMPLE:{AWS_SECRET}@bucket/prefix")
        assert not leaks(AWS_SECRET, str(e.value), "")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("location", ["./s3:/x", "notes:v2", "runs/a:b", "C:/x", " notes", "\tx:1"])
def test_folder_paths_with_a_colon_still_work(
    location: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with Repo.init(location) as repo:
        repo.commit({"messages": []}, message="first")
    with Repo.open(location) as repo:
        assert [c.message for c in repo.log()] == ["first"]
    assert "first" in invoke("--repo", location, "log", cwd=tmp_path).stdout
