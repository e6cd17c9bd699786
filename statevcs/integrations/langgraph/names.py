"""Ref names for LangGraph threads and namespaces: injective, always valid, never escaping.

A thread id or namespace can be any string. Each is percent-encoded over the byte values of
its UTF-8 form (lone surrogates kept, as ``surrogatepass`` does): ``A-Z a-z 0-9 _ -`` stay,
every other byte becomes ``%XX``. The result holds no ``/``, ``.``, ``@`` or ``%`` that the
encoding did not put there, so it cannot climb out of its folder (``..``), end in ``.lock`` or
name another thread; two different ids always encode differently; the empty string is ``%``,
which no other id produces.

Layout (``T`` the encoded thread id, ``N`` the encoded namespace):

* ``refs/heads/threads/T`` -- the thread's root namespace: its latest checkpoint;
* ``refs/heads/threads/T.ns-N`` -- a subgraph namespace of the thread;
* ``refs/langgraph/heads/T/root/<commit>`` (or ``.../ns-N/<commit>``) -- other leaves of the
  checkpoint tree (a fork's abandoned line, a second root), so every checkpoint stays reachable;
* ``refs/langgraph/writes/T/root/<checkpoint id>`` -- pending writes saved for a checkpoint
  that already has children (or has not been saved yet).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...refs import BRANCH_PREFIX, MAX_REF_NAME_LENGTH
from .errors import InvalidCheckpointConfig

_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_SAFE_BYTES = bytes(sorted(_SAFE))
_HEX = "0123456789ABCDEF"
EMPTY = "%"
"""The encoding of the empty string."""
THREADS = "threads/"
"""The folder of thread branches, below ``refs/heads/``."""
BRANCH_ROOT = BRANCH_PREFIX + THREADS
HEADS_ROOT = "refs/langgraph/heads/"
WRITES_ROOT = "refs/langgraph/writes/"
NS_SEPARATOR = ".ns-"
ROOT_TOKEN = "root"
_COMMIT_HEX = 64


def encode(text: str) -> str:
    """Return ``text`` percent-encoded for use as one ref-name component."""
    if not text:
        return EMPTY
    raw = text.encode("utf-8", "surrogatepass")
    if not raw.translate(None, _SAFE_BYTES):
        return text  # every byte is safe (checked in C: every write's side ref is named here)
    parts: list[str] = []
    for byte in raw:
        if byte in _SAFE:
            parts.append(chr(byte))
        else:
            parts.append("%" + _HEX[byte >> 4] + _HEX[byte & 15])
    return "".join(parts)


def decode(key: str) -> str:
    """Return the string :func:`encode` turned into ``key`` (``ValueError`` if none did)."""
    if key == EMPTY:
        return ""
    out = bytearray()
    index = 0
    while index < len(key):
        char = key[index]
        if char == "%":
            pair = key[index + 1 : index + 3]
            if len(pair) != 2 or any(c not in _HEX for c in pair):
                raise ValueError(f"{key!r} is not an encoded thread id or namespace")
            out.append(int(pair, 16))
            index += 3
            continue
        if ord(char) > 127 or ord(char) not in _SAFE:
            raise ValueError(f"{key!r} is not an encoded thread id or namespace")
        out.append(ord(char))
        index += 1
    text = bytes(out).decode("utf-8", "surrogatepass")
    if encode(text) != key:  # only the canonical spelling is ours
        raise ValueError(f"{key!r} is not an encoded thread id or namespace")
    return text


@dataclass(frozen=True, slots=True)
class ThreadKey:
    """Where one thread's namespace lives: its branch and the folders of its other refs."""

    thread_id: str
    checkpoint_ns: str
    thread: str
    """The encoded thread id."""
    ns: str
    """The encoded namespace (``""`` for the root namespace)."""

    @classmethod
    def of(cls, thread_id: str, checkpoint_ns: str) -> ThreadKey:
        """Return the key of ``thread_id`` / ``checkpoint_ns`` (refusing ids too long to name)."""
        key = cls(
            thread_id,
            checkpoint_ns,
            encode(thread_id),
            encode(checkpoint_ns) if checkpoint_ns else "",
        )
        longest = len(key.leaf_prefix) + _COMMIT_HEX
        if max(longest, len(key.branch)) > MAX_REF_NAME_LENGTH:
            raise InvalidCheckpointConfig(
                f"thread_id and checkpoint_ns are too long to name a branch ({longest} "
                f"characters once encoded; the limit is {MAX_REF_NAME_LENGTH}); use a shorter "
                "thread id, e.g. a uuid or a hash of this one"
            )
        return key

    @property
    def branch(self) -> str:
        """The full name of the branch holding the namespace's latest checkpoint."""
        if not self.ns:
            return BRANCH_ROOT + self.thread
        return BRANCH_ROOT + self.thread + NS_SEPARATOR + self.ns

    @property
    def ns_token(self) -> str:
        """The namespace's folder name below a thread's ``refs/langgraph`` folders."""
        return "ns-" + self.ns if self.ns else ROOT_TOKEN

    @property
    def leaf_prefix(self) -> str:
        """The folder of this namespace's other leaf refs."""
        return f"{HEADS_ROOT}{self.thread}/{self.ns_token}/"

    @property
    def writes_prefix(self) -> str:
        """The folder of this namespace's side refs for pending writes."""
        return f"{WRITES_ROOT}{self.thread}/{self.ns_token}/"

    def leaf_ref(self, commit_hex: str) -> str:
        """The ref keeping leaf commit ``commit_hex`` reachable."""
        return self.leaf_prefix + commit_hex

    def writes_ref(self, checkpoint_id: str) -> str:
        """The side ref of checkpoint ``checkpoint_id``'s pending writes."""
        name = self.writes_prefix + encode(checkpoint_id)
        if len(name) > MAX_REF_NAME_LENGTH:
            raise InvalidCheckpointConfig(
                f"checkpoint_id is too long ({len(checkpoint_id)} characters); LangGraph's "
                "checkpoint ids are uuids"
            )
        return name


def thread_folders(thread: str) -> tuple[str, str, str]:
    """Return the branch prefix, leaf folder and writes folder of encoded thread ``thread``."""
    return BRANCH_ROOT + thread, f"{HEADS_ROOT}{thread}/", f"{WRITES_ROOT}{thread}/"


def parse_branch(ref: str) -> tuple[str, str] | None:
    """Return ``(thread_id, checkpoint_ns)`` of a thread branch, or ``None`` for other refs."""
    if not ref.startswith(BRANCH_ROOT):
        return None
    rest = ref[len(BRANCH_ROOT) :]
    thread, separator, ns = rest.partition(NS_SEPARATOR)
    try:
        return decode(thread), (decode(ns) if separator else "")
    except ValueError:
        return None


def belongs_to(ref: str, thread: str) -> bool:
    """Whether branch ``ref`` is one of encoded thread ``thread``'s namespaces."""
    rest = ref[len(BRANCH_ROOT) :] if ref.startswith(BRANCH_ROOT) else None
    return rest is not None and (rest == thread or rest.startswith(thread + NS_SEPARATOR))


def ns_from_token(token: str) -> str | None:
    """Return the namespace a ``root`` / ``ns-N`` folder name stands for (``None``: not ours)."""
    if token == ROOT_TOKEN:
        return ""
    if token.startswith("ns-"):
        try:
            return decode(token[3:])
        except ValueError:
            return None
    return None


__all__ = [
    "BRANCH_ROOT",
    "HEADS_ROOT",
    "THREADS",
    "WRITES_ROOT",
    "ThreadKey",
    "belongs_to",
    "decode",
    "encode",
    "ns_from_token",
    "parse_branch",
    "thread_folders",
]
