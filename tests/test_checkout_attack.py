"""Attacks on the checkout read path: ``load_many``/``decode_plain``, ``TrackedDecoder`` and the
``_fresh`` hand-off of ``new_tracked``.

Whatever the path (tracked dict, plain dict, tracked or plain ``Snapshot``), a checkout gives
back exactly what was committed, with the container types ``new_tracked`` would have made; any
in-place edit after it is committed exactly; an untouched conversation writes no message again.
"""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import plain, run_threads

import statevcs
from statevcs import CorruptObject, Repo, Snapshot, objectdb, tracked_messages
from statevcs.hashing import hash_bytes
from statevcs.objects import (
    DOC_PREFIX,
    CommitObject,
    Doc,
    ListNode,
    MapNode,
    SnapshotObject,
    encode_with_id,
)
from statevcs.tracking import TrackedDecoder, TrackedDict, TrackedList, TrackedMessages, new_tracked

values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False)
    | st.text()
    | st.binary(max_size=8)
    | st.builds(msgpack.ExtType, st.integers(0, 127), st.binary(max_size=4))
    | st.builds(msgpack.Timestamp, st.integers(0, 2**34), st.integers(0, 999_999_999)),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=10,
)
messages_st = st.lists(
    st.dictionaries(st.sampled_from(["role", "content", "x", "é", ""]), values, max_size=3)
    | values,
    max_size=8,
)

BIG = {"role": "tool", "content": [{"text": "y" * 300_000}]}  # stored out of line (chunked)


def exact(a: Any, b: Any) -> bool:
    """Equal with the same types everywhere and dict keys in the same order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(exact(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(exact(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) or (a != a and b != b)


def guards_of(message: Any) -> list[Any]:
    """The guard of every tracked container inside ``message``."""
    found, stack = [], [message]
    while stack:
        item = stack.pop()
        if isinstance(item, (TrackedDict, TrackedList)):
            found.append(item._guard)
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def containers(value: Any) -> list[tuple[Any, ...]]:
    """(path, container) of every dict and list inside ``value``, itself included."""
    found: list[tuple[Any, ...]] = []
    stack: list[tuple[tuple[Any, ...], Any]] = [((), value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, dict):
            found.append((path, item))
            stack.extend(((*path, k), v) for k, v in item.items())
        elif isinstance(item, list):
            found.append((path, item))
            stack.extend(((*path, i), v) for i, v in enumerate(item))
    return found


def new_ids(repo: Repo, before: set[bytes]) -> list[str]:
    """The kinds of objects written since ``before`` (ids) that hold messages."""
    kinds = []
    for object_id, _ in repo.store.iter_objects():
        if object_id not in before:
            obj = repo.objects.load(object_id)
            if isinstance(obj, Doc) or (isinstance(obj, ListNode) and obj.level == 0):
                kinds.append(type(obj).__name__)
    return kinds


def open_repo(store: str, storage_format: int, where: Path) -> Repo:
    url = "memory://" if store == "memory" else str(where / "repo")
    return Repo.init(url, storage_format=storage_format)


def check_tracked(messages: Any, owner: TrackedMessages) -> None:
    """Every message is what ``new_tracked`` would have made, guarded at its position."""
    assert type(messages) is TrackedMessages
    expected = new_tracked(plain(list(messages)))
    for index, (ours, theirs) in enumerate(zip(messages, expected, strict=True)):
        assert exact(plain(ours), plain(theirs))
        assert [type(c) for _, c in containers(ours)] == [type(c) for _, c in containers(theirs)]
        for guard in guards_of(ours):
            assert guard.index == index and guard.owner() is owner


def edit_at(messages: list[Any], choice: int, op: int) -> bool:
    """Edit in place one container of one message (``False``: nothing to edit)."""
    spots = [(i, c) for i, m in enumerate(messages) for _, c in containers(m)]
    if not spots:
        return False
    _, target = spots[choice % len(spots)]
    if isinstance(target, dict):
        [
            lambda: target.__setitem__("edited", op),
            lambda: target.pop(next(iter(target)), None) if target else target.update(e=1),
            lambda: target.clear() if target else target.setdefault("s", [op]),
            lambda: target.update({"u": [op, {"v": b"\x00"}]}),
        ][op % 4]()
    else:
        [
            lambda: target.append({"appended": op}),
            lambda: target.insert(0, op),
            lambda: target.pop() if target else target.extend([op, op]),
            lambda: target.__setitem__(slice(0, 1), [[], {}]),
        ][op % 4]()
    return True


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example],
)
@given(
    messages=messages_st,
    big=st.booleans(),
    dup=st.integers(0, 20),
    storage_format=st.sampled_from([1, 2]),
    store=st.sampled_from(["memory", "sqlite"]),
    choice=st.integers(0, 10_000),
    op=st.integers(0, 7),
)
def test_every_checkout_path_gives_back_what_was_committed_and_commits_every_edit(
    messages: list[Any],
    big: bool,
    dup: int,
    storage_format: int,
    store: str,
    choice: int,
    op: int,
) -> None:
    if big:
        messages = [*messages, copy.deepcopy(BIG)]
    if messages and dup:
        messages.append(copy.deepcopy(messages[dup % len(messages)]))  # identical messages
    with tempfile.TemporaryDirectory() as where:
        repo = open_repo(store, storage_format, Path(where))
        repo.commit({"messages": copy.deepcopy(messages), "n": 1}, "committed")
        repo.commit({"messages": copy.deepcopy(messages[:1]), "n": 2}, "other", branch="other")
        # Every path, with a handle that read nothing yet and with a warm one.
        for handle in (Repo.open(repo.url) if store == "sqlite" else repo, repo):
            tracked: dict[str, Any] = {"messages": tracked_messages()}
            handle.checkout(tracked, "main")
            assert exact(plain(tracked["messages"]), messages) and tracked["n"] == 1
            check_tracked(tracked["messages"], tracked["messages"])
            loose: dict[str, Any] = {"messages": []}
            handle.checkout(loose, "main")
            assert exact(loose["messages"], messages) and type(loose["messages"]) is list
            assert all(not guards_of(m) for m in loose["messages"])
            snap = Snapshot.model_construct(
                kind="dict", messages=tracked_messages(), state={}, extras={}
            )
            handle.checkout(snap, "main")
            check_tracked(snap.messages, snap.messages)
            assert exact(plain(snap.messages), messages)
            assert exact(handle.show("main").messages, messages)
            assert tracked["messages"] is not snap.messages
        # An untouched conversation writes no message again.
        before = {i for i, _ in repo.store.iter_objects()}
        repo.commit(tracked, "untouched")
        assert new_ids(repo, before) == []
        # An in-place edit at any depth is committed exactly.
        if edit_at(tracked["messages"], choice, op):
            expected = plain(tracked["messages"])
            repo.commit(tracked, "edited")
            assert exact(repo.show("main").messages, expected)
            # ... and so is a second one, through the list the first commit kept.
            edit_at(tracked["messages"], choice // 3, op + 1)
            expected = plain(tracked["messages"])
            repo.commit(tracked, "edited again")
            assert exact(repo.show("main").messages, expected)
        # The same through a Snapshot, checked out from another branch and back.
        repo.checkout(snap, "other")
        repo.checkout(snap, "main")
        if edit_at(snap.messages, choice + 1, op + 2):
            expected = plain(snap.messages)
            repo.commit(snap, "snapshot edited", branch="snap")
            assert exact(repo.show("snap").messages, expected)


def test_a_plain_list_put_into_a_tracked_message_is_tracked_at_the_next_commit() -> None:
    """Found by the test above (``messages=[{}]``, edit ``setdefault("s", [2])`` then an edit of
    that list): the message was left as it was at the commit because its top dict was already
    tracked at its position, so the plain list inside went unseen and the next commit vouched
    for the stale message -- silently storing ``[1]`` for a live ``[1, 2]``."""
    repo = Repo.init("memory://")
    state: dict[str, Any] = {"messages": tracked_messages([{"role": "user", "content": "hi"}])}
    repo.commit(state)
    parts: list[Any] = [1]
    state["messages"][0]["parts"] = parts
    state["messages"][0]["meta"] = {"k": []}
    repo.commit(state)
    state["messages"][0]["parts"].append(2)
    state["messages"][0]["meta"]["k"].append("x")
    repo.commit(state)
    assert repo.show().messages == [
        {"role": "user", "content": "hi", "parts": [1, 2], "meta": {"k": ["x"]}}
    ]
    # A container taken out, filled with a plain list, and put back.
    meta = state["messages"][0].pop("meta")
    meta["k"].append(["inner"])
    meta["z"] = {"w": []}
    state["messages"][0]["meta"] = meta
    repo.commit(state)
    state["messages"][0]["meta"]["k"][-1].append("more")
    state["messages"][0]["meta"]["z"]["w"].append(0)
    repo.commit(state)
    assert repo.show().messages == plain(state["messages"])
    # A container moved from another message reports to its new message once committed.
    state["messages"].append({"role": "assistant", "content": []})
    repo.commit(state)
    state["messages"][1]["moved"] = state["messages"][0]["meta"]
    repo.commit(state)
    state["messages"][1]["moved"]["k"].append("y")
    repo.commit(state)
    assert repo.show().messages == plain(state["messages"])


def test_a_plain_list_put_into_a_message_watched_by_two_repositories_is_seen_by_both() -> None:
    one, two = Repo.init("memory://"), Repo.init("memory://")
    state: dict[str, Any] = {"messages": tracked_messages([{"n": i} for i in range(4)])}
    one.commit(state)
    two.commit(state)
    state["messages"][1]["parts"] = []
    one.commit(state)  # walks message 1 and tracks its new list
    two.commit(state)  # message 1 is tracked throughout by now
    state["messages"][1]["parts"].append("x")
    state["messages"][2]["more"] = {"deep": []}
    two.commit(state)
    state["messages"][2]["more"]["deep"].append("y")
    one.commit(state)
    two.commit(state)
    assert one.show().messages == two.show().messages == plain(state["messages"])


@pytest.mark.parametrize("storage_format", [1, 2])
def test_an_ext_value_stays_an_ext_value_through_a_tracked_checkout(storage_format: int) -> None:
    """A format 1 tracked checkout turned ``ExtType`` into a tuple (format 2's decoder kept it),
    and the next commit of the edited message then refused the tuple."""
    repo = Repo.init("memory://", storage_format=storage_format)
    messages = [{"t": msgpack.ExtType(5, b"x"), "s": msgpack.Timestamp(1, 2)}, {"n": 0}]
    repo.commit({"messages": copy.deepcopy(messages)})
    state: dict[str, Any] = {"messages": tracked_messages()}
    repo.checkout(state, "main")
    assert exact(plain(state["messages"]), messages)
    assert type(state["messages"][0]["t"]) is msgpack.ExtType
    state["messages"][0]["n"] = 1
    repo.commit(state)
    assert exact(repo.show().messages, [{**messages[0], "n": 1}, {"n": 0}])
    fresh = Repo.init("memory://", storage_format=storage_format)
    fresh.commit({"messages": tracked_messages(messages)})
    assert exact(fresh.show().messages, messages)


@pytest.mark.parametrize("storage_format", [1, 2])
def test_tiny_caches_do_not_change_what_a_tracked_checkout_gives(
    monkeypatch: pytest.MonkeyPatch, storage_format: int
) -> None:
    monkeypatch.setattr(objectdb, "_BYTES_CACHE", 2000)
    monkeypatch.setattr(objectdb, "_NODE_CACHE", 3)
    monkeypatch.setattr(objectdb, "_KNOWN_LIMIT", 20)
    repo = Repo.init("memory://", storage_format=storage_format)
    messages = [{"role": "user", "content": [{"text": f"m{i % 7}"}, {"n": i}]} for i in range(300)]
    messages[150] = copy.deepcopy(BIG)
    repo.commit({"messages": copy.deepcopy(messages)})
    for round_ in range(3):
        state: dict[str, Any] = {"messages": tracked_messages()}
        repo.checkout(state, "main")
        assert exact(plain(state["messages"]), messages)
        check_tracked(state["messages"], state["messages"])
        state["messages"][299]["content"][1]["n"] = "last"
        state["messages"][0]["content"].append({"first": True})
        expected = plain(state["messages"])
        repo.commit(state, branch=f"edited-{round_}")
        assert exact(repo.show(f"edited-{round_}").messages, expected)


def test_a_checked_out_list_is_copied_when_handed_to_another_holder() -> None:
    """``_fresh`` is spent by the checkout: a second holder of the list gets its own copy, and
    edits through either holder are committed for that holder only."""
    repo = Repo.init("memory://")
    messages = [{"role": "user", "content": [{"text": f"m{i}"}]} for i in range(5)]
    repo.commit({"messages": copy.deepcopy(messages)})
    first: dict[str, Any] = {"messages": tracked_messages()}
    repo.checkout(first, "main")
    live = first["messages"]
    assert live._fresh is False
    assert new_tracked(live) is not live  # spent: copied like any tracked list
    second: dict[str, Any] = {"messages": tracked_messages(live)}
    assert second["messages"] is not live
    second["messages"][2]["content"][0]["text"] = "second's"
    repo.commit(second, branch="second")
    repo.commit(first, branch="first")
    assert repo.show("first").messages == messages
    assert repo.show("second").messages[2]["content"][0]["text"] == "second's"
    # One list shared by two dicts: an edit through it is an edit of both.
    shared: dict[str, Any] = {"messages": live}
    live[1]["content"][0]["text"] = "shared"
    repo.commit(first, branch="first")
    repo.commit(shared, branch="shared")
    assert repo.show("first").messages[1]["content"][0]["text"] == "shared"
    assert repo.show("shared").messages[1]["content"][0]["text"] == "shared"


def test_a_checked_out_list_committed_to_two_repositories_reports_edits_to_both() -> None:
    one, two = Repo.init("memory://"), Repo.init("memory://")
    messages = [{"role": "user", "content": [{"text": f"m{i}"}]} for i in range(6)]
    one.commit({"messages": copy.deepcopy(messages)})
    state: dict[str, Any] = {"messages": tracked_messages()}
    one.checkout(state, "main")
    two.commit(state)
    for step in range(3):
        state["messages"][step]["content"][0]["text"] = f"edit {step}"
        expected = plain(state["messages"])
        one.commit(state)
        two.commit(state)
        assert one.show().messages == expected == two.show().messages


def test_a_checkout_that_holds_no_messages_hands_out_no_fresh_list() -> None:
    repo = Repo.init("memory://")
    repo.commit({"n": 1}, branch="none")
    repo.commit({"messages": None, "n": 2}, branch="null")
    for branch, want in (("none", False), ("null", True)):
        state: dict[str, Any] = {"messages": tracked_messages()}
        repo.checkout(state, branch)
        assert ("messages" in state) is want and state.get("messages") is None


def test_threads_checking_out_on_one_handle_get_their_own_tracked_lists() -> None:
    repo = Repo.init("memory://")
    messages = [{"role": "user", "content": [{"text": f"m{i}", "k": [i]}]} for i in range(200)]
    repo.commit({"messages": copy.deepcopy(messages)})
    results: list[Any] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(5):
                state: dict[str, Any] = {"messages": tracked_messages()}
                repo.checkout(state, "main")
                check_tracked(state["messages"], state["messages"])
                results.append(state["messages"])
        except BaseException as exc:  # reported below
            errors.append(exc)

    run_threads(work, [()] * 4)
    assert not errors
    assert len({id(r) for r in results}) == 20
    assert all(exact(plain(r), messages) for r in results)


# --- hostile packed leaves ---------------------------------------------------------------------


HOSTILE = {
    "array key": b"\x81\x92\x01\x02\x03",
    "map key": b"\x81\x81\x01\x02\x03",
    "nested array key": b"\x91\x81\x91\x01\x02",
    "bad utf-8": b"\x81\xa1\xff\x01",
    "truncated": b"\x82\xa1a",
    "trailing bytes": b"\x01\x02",
    "deep": b"\x91" * 5000 + b"\x01",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_packed_message_is_corrupt_on_every_path(name: str) -> None:
    payload = HOSTILE[name]
    from statevcs.snapshot import read_messages

    repo = Repo.init("memory://", storage_format=2)
    item_id = hash_bytes(DOC_PREFIX + payload)
    leaf_id, data = encode_with_id(ListNode(0, (item_id,), (), (payload,)))
    repo.store.put_many({leaf_id: data})
    with pytest.raises(CorruptObject):
        read_messages(repo.objects, leaf_id)
    with pytest.raises(CorruptObject):
        read_messages(repo.objects, leaf_id, TrackedDecoder())


@pytest.mark.parametrize(
    "payload",
    [
        b"\x82\xa1a\x01\xa1a\x02",  # duplicate keys
        msgpack.packb({"t": msgpack.ExtType(5, b"xy")}),
        msgpack.packb([msgpack.Timestamp(1, 2)]),
        msgpack.packb({None: 1, 1.5: [2], b"k": {}}),
        b"\x91" * 150 + b"\xc0",
    ],
)
def test_odd_but_valid_packed_messages_decode_alike_on_both_paths(payload: bytes) -> None:
    from statevcs.snapshot import read_messages

    repo = Repo.init("memory://", storage_format=2)
    item_id = hash_bytes(DOC_PREFIX + payload)
    leaf_id, data = encode_with_id(ListNode(0, (item_id,), (), (payload,)))
    repo.store.put_many({leaf_id: data})
    loose, _ = read_messages(repo.objects, leaf_id)
    decoder = TrackedDecoder()
    tracked, _ = read_messages(repo.objects, leaf_id, decoder)
    assert plain(tracked) == loose == [msgpack.unpackb(payload, strict_map_key=False)]
    assert [type(c) for _, c in containers(tracked[0])] == [
        type(c) for _, c in containers(new_tracked(loose)[0])
    ]


def test_statevcs_exports_what_these_tests_use() -> None:
    assert statevcs.tracked_messages is tracked_messages


def _commit_hostile_leaf(repo: Repo, payloads: list[bytes], branch: str) -> None:
    """Commit on ``branch`` a snapshot whose messages are one packed leaf holding ``payloads``."""
    out: dict[bytes, bytes] = {}
    ids = tuple(hash_bytes(DOC_PREFIX + p) for p in payloads)
    root, data = encode_with_id(ListNode(0, ids, (), tuple(payloads)))
    out[root] = data
    empty = MapNode((), ())
    snapshot, data = encode_with_id(SnapshotObject("dict", root, (), empty, empty, "json"))
    out[snapshot] = data
    parent = bytes.fromhex(repo.resolve("main"))
    commit, data = encode_with_id(CommitObject(snapshot, (parent,), "crafted", 0, "leaf", {}))
    out[commit] = data
    repo.store.put_many(out)
    repo.store.set_ref(f"refs/heads/{branch}", commit)


def _holders() -> list[tuple[str, Any, Any]]:
    """(name, object to check out into, its messages) for every checkout path."""
    tracked: dict[str, Any] = {"messages": tracked_messages([{"keep": 1}]), "n": 0}
    loose: dict[str, Any] = {"messages": [{"keep": 1}], "n": 0}
    snap = Snapshot.model_construct(
        kind="dict", messages=tracked_messages([{"keep": 1}]), state={}, extras={}
    )
    agent = _agent()
    agent.messages = [{"keep": 1}]
    return [
        ("agent", agent, lambda: agent.messages),
        ("tracked", tracked, lambda: tracked["messages"]),
        ("plain", loose, lambda: loose["messages"]),
        ("snapshot", snap, lambda: snap.messages),
    ]


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_packed_message_fails_every_checkout_alike_and_changes_nothing(
    name: str,
) -> None:
    repo = Repo.init("memory://", storage_format=2)
    repo.commit({"messages": [{"role": "user"}]})
    good = msgpack.packb({"role": "user", "content": "fine"})
    _commit_hostile_leaf(repo, [good, HOSTILE[name], good], "hostile")
    errors = set()
    for handle in (repo, Repo.open(repo.url) if not repo.url.startswith("memory") else repo):
        for path, holder, messages in _holders():
            with pytest.raises(CorruptObject) as caught:
                handle.checkout(holder, "hostile")
            # The same object named on every path (msgpack's own words may name TrackedList).
            errors.add(str(caught.value).split(":")[0])
            assert plain(messages()) == [{"keep": 1}], path  # left as it was
    assert len(errors) == 1


@pytest.mark.parametrize(
    "payload",
    [
        b"\x82\xa1a\x01\xa1a\x02",  # duplicate keys: the last wins, on every path
        msgpack.packb({"t": msgpack.ExtType(5, b"xy"), "s": msgpack.Timestamp(3, 4)}),
        msgpack.packb({None: 1, 1.5: [2], b"k": {}}),
        b"\x91" * 150 + b"\xc0",
    ],
)
def test_odd_but_valid_packed_messages_check_out_alike_on_every_path(payload: bytes) -> None:
    repo = Repo.init("memory://", storage_format=2)
    repo.commit({"messages": [{"role": "user"}]})
    _commit_hostile_leaf(repo, [payload, payload], "odd")
    want = [msgpack.unpackb(payload, strict_map_key=False)] * 2
    for _path, holder, messages in _holders():
        repo.checkout(holder, "odd")
        assert exact(plain(messages()), want)
        if type(messages()) is TrackedMessages:
            check_tracked(messages(), messages())
            assert messages()[0] is not messages()[1]


# --- Strands Agent --------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)
strands_messages = st.lists(
    st.builds(
        lambda role, text, name, tool_input: {
            "role": role,
            "content": [
                {"text": text},
                {"toolUse": {"toolUseId": f"t-{name}", "name": name, "input": tool_input}},
            ],
        },
        st.sampled_from(["user", "assistant"]),
        st.text(max_size=8),
        st.sampled_from(["search", "remember"]),
        st.dictionaries(st.text(max_size=4), json_values, max_size=3),
    ),
    min_size=1,
    max_size=6,
)


def _agent() -> Any:
    from strands import Agent

    from statevcs.integrations.strands.testing import ScriptedModel

    return Agent(model=ScriptedModel([]), callback_handler=None, system_prompt="Plan trips.")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    messages=strands_messages,
    big=st.booleans(),
    storage_format=st.sampled_from([1, 2]),
    choice=st.integers(0, 10_000),
    op=st.integers(0, 7),
)
def test_a_strands_agent_checkout_gives_back_what_was_committed_and_commits_every_edit(
    messages: list[Any], big: bool, storage_format: int, choice: int, op: int
) -> None:
    if big:
        messages = [*messages, copy.deepcopy(BIG)]
    repo = Repo.init("memory://", storage_format=storage_format)
    source = _agent()
    source.messages = copy.deepcopy(messages)
    repo.commit(source, "committed")
    agent = _agent()
    repo.checkout(agent, "main")
    assert exact(plain(agent.messages), messages)
    check_tracked(agent.messages, agent.messages)
    loose: dict[str, Any] = {"messages": []}
    repo.checkout(loose, "main")  # the same commit into a plain dict: the same values
    assert exact(loose["messages"], plain(agent.messages))
    before = {i for i, _ in repo.store.iter_objects()}
    repo.commit(agent, "untouched")
    assert new_ids(repo, before) == []
    for step in range(2):
        if edit_at(agent.messages, choice // (step + 1), op + step):
            expected = plain(agent.messages)
            repo.commit(agent, f"edit {step}")
            assert exact(repo.show("main").messages, expected)


@pytest.mark.parametrize("storage_format", [1, 2])
def test_a_deeply_nested_message_checks_out_tracked_and_its_deepest_edit_is_committed(
    storage_format: int,
) -> None:
    depth = 450  # msgpack packs up to 511 levels
    deep: Any = {"leaf": 0}
    for level in range(depth):
        deep = [deep] if level % 2 else {"d": deep}
    messages = [{"role": "user", "content": "hi"}, {"deep": deep}]
    repo = Repo.init("memory://", storage_format=storage_format)
    repo.commit({"messages": messages})
    state: dict[str, Any] = {"messages": tracked_messages()}
    repo.checkout(state, "main")
    node = state["messages"][1]["deep"]
    kinds = set()
    while not (isinstance(node, dict) and "leaf" in node):
        kinds.add(type(node))
        node = node["d"] if isinstance(node, dict) else node[0]
    assert kinds == {TrackedDict, TrackedList} and type(node) is TrackedDict
    node["leaf"] = "edited"
    node["new"] = [1]  # a plain list, deep down
    repo.commit(state)
    again = state["messages"][1]["deep"]
    while not (isinstance(again, dict) and "leaf" in again):
        again = again["d"] if isinstance(again, dict) else again[0]
    assert again is node  # tracked containers stay: only the plain list was swapped
    assert type(node["new"]) is TrackedList
    node["new"].append(2)
    repo.commit(state)
    stored = repo.show().messages[1]["deep"]
    while not (isinstance(stored, dict) and "leaf" in stored):
        stored = stored["d"] if isinstance(stored, dict) else stored[0]
    assert stored == {"leaf": "edited", "new": [1, 2]}


def test_threads_checking_out_editing_and_committing_on_one_handle_store_their_own_edits() -> None:
    repo = Repo.init("memory://", storage_format=2)
    messages = [{"role": "user", "content": [{"text": f"m{i}"}]} for i in range(120)]
    repo.commit({"messages": copy.deepcopy(messages)})
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            state: dict[str, Any] = {"messages": tracked_messages()}
            repo.checkout(state, "main")
            for step in range(6):
                position = (worker * 17 + step * 31) % len(state["messages"])
                state["messages"][position]["content"].append({"by": [worker, step]})
                repo.commit(state, branch=f"w{worker}")
                assert repo.show(f"w{worker}").messages == plain(state["messages"])
        except BaseException as exc:  # reported below
            errors.append(exc)

    run_threads(work, [(n,) for n in range(4)])
    assert not errors
