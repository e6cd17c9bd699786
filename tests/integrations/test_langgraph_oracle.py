"""Random saver calls across threads and namespaces answer as ``InMemorySaver`` answers them:
puts (forks, ids put again), pending writes, ``delete_thread`` and ``list`` with its filters."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.memory import InMemorySaver

import statevcs
from statevcs.integrations.langgraph import StateVCSSaver

from .langgraph_support import checkpoint, config_of, tuple_shape

_THREADS = ("a", "b")
_NAMESPACES = ("", "sub:1")

_CALLS = st.lists(
    st.tuples(
        st.sampled_from(["put", "put", "put", "again", "writes", "delete", "list"]),
        st.sampled_from(_THREADS),
        st.sampled_from(_NAMESPACES),
        st.integers(min_value=0, max_value=30),
    ),
    min_size=3,
    max_size=35,
)


@settings(max_examples=80, deadline=None)
@given(calls=_CALLS)
def test_saver_calls_answer_as_in_memory_saver_answers(
    calls: list[tuple[str, str, str, int]],
) -> None:
    repo = statevcs.Repo.init("memory://")
    ours, memory = StateVCSSaver(repo), InMemorySaver()
    ids: dict[tuple[str, str], list[str]] = {}
    parents: dict[tuple[str, str, str], str | None] = {}
    counter = version = 0
    for op, thread, ns, arg in calls:
        known = ids.setdefault((thread, ns), [])
        if op == "delete":
            for saver in (ours, memory):
                saver.delete_thread(thread)
            for namespace in _NAMESPACES:
                ids[(thread, namespace)] = []
            continue
        if op == "list":
            step = arg % 5
            before = known[arg % len(known)] if known else None
            for kwargs in (
                {},
                {"filter": {"step": step}},
                {"limit": 1 + arg % 3},
                {"before": config_of(thread, ns, before)} if before else {},
            ):
                for config in (config_of(thread, ns), config_of(thread, "")):
                    got = [tuple_shape(t) for t in ours.list(config, **kwargs)]
                    want = [tuple_shape(t) for t in memory.list(config, **kwargs)]
                    assert got == want, kwargs
            continue
        if op in ("put", "again"):
            if op == "again" and known:
                cid = known[arg % len(known)]
                parent = parents[(thread, ns, cid)]
            else:
                counter += 1
                cid = f"1ef{counter:05d}-0000-6000-8000-000000000000"
                parent = known[arg % len(known)] if known and arg % 4 else None
            values = {"messages": [f"{thread}{i}" for i in range(arg % 6)], "n": arg}
            version += 1  # LangGraph's channel versions only grow (InMemorySaver keys by them)
            for saver in (ours, memory):
                saver.put(
                    config_of(thread, ns, parent),
                    checkpoint(cid, values, version),
                    {"source": "loop", "step": arg % 5},
                    {"messages": version, "n": version},
                )
            parents[(thread, ns, cid)] = parent
            if cid not in known:
                known.append(cid)
            continue
        if known:
            target = known[arg % len(known)]
            channel = ("messages", "__error__", "n")[arg % 3]
            for saver in (ours, memory):
                saver.put_writes(
                    config_of(thread, ns, target), [(channel, f"w{arg}")], f"task-{arg % 2}"
                )
    fresh = StateVCSSaver(repo)
    for (thread, ns), known in ids.items():
        for cid in [*known, None]:
            want = tuple_shape(memory.get_tuple(config_of(thread, ns, cid)))
            assert tuple_shape(ours.get_tuple(config_of(thread, ns, cid))) == want
            assert tuple_shape(fresh.get_tuple(config_of(thread, ns, cid))) == want
