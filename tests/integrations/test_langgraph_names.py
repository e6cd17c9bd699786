"""Thread ids and namespaces name refs injectively: hostile ids cannot escape or collide."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import statevcs
from statevcs.integrations.langgraph import StateVCSSaver
from statevcs.integrations.langgraph.names import ThreadKey, decode, encode, parse_branch
from statevcs.refs import check_ref_name

ANY_TEXT = st.text(alphabet=st.characters(codec=None), max_size=40) | st.sampled_from(
    ["", ".", "..", "a/../b", "@", "@{1}", "x.lock", "%", "%25", "main", "HEAD", "a.ns-b", "-x"]
)


@given(ANY_TEXT)
def test_encode_round_trips_and_is_a_valid_component(text: str) -> None:
    encoded = encode(text)
    assert decode(encoded) == text
    assert "/" not in encoded and "." not in encoded
    check_ref_name("refs/heads/threads/" + encoded)


@given(ANY_TEXT, ANY_TEXT)
def test_different_ids_never_share_a_ref(a: str, b: str) -> None:
    if a != b:
        assert encode(a) != encode(b)


@given(ANY_TEXT, ANY_TEXT)
def test_every_ref_of_a_key_is_valid_and_parses_back(thread: str, ns: str) -> None:
    key = ThreadKey.of(thread, ns)
    for name in (key.branch, key.leaf_ref("0" * 64), key.writes_ref("1f0-abc")):
        check_ref_name(name)
    assert parse_branch(key.branch) == (thread, ns)


@settings(max_examples=40, deadline=None)
@given(st.lists(ANY_TEXT, min_size=2, max_size=4, unique=True))
def test_hostile_thread_ids_stay_apart_in_one_repository(threads: list[str]) -> None:
    saver = StateVCSSaver(statevcs.Repo.init("memory://"))
    for index, thread in enumerate(threads):
        config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        checkpoint = {
            "v": 1,
            "id": f"1ef-{index:04d}",
            "ts": "2025-01-01T00:00:00+00:00",
            "channel_values": {"who": thread},
            "channel_versions": {"who": 1},
            "versions_seen": {},
            "updated_channels": None,
        }
        saver.put(config, checkpoint, {"source": "input", "step": -1}, {"who": 1})
    for thread in threads:
        found = saver.get_tuple({"configurable": {"thread_id": thread}})
        assert found is not None
        assert found.checkpoint["channel_values"] == {"who": thread}
    listed = {t.config["configurable"]["thread_id"] for t in saver.list(None)}
    assert listed == set(threads)
    saver.delete_thread(threads[0])
    assert saver.get_tuple({"configurable": {"thread_id": threads[0]}}) is None
    assert all(saver.get_tuple({"configurable": {"thread_id": t}}) is not None for t in threads[1:])
