"""Tests for the prolly list: history independence, reads, positional diff, and its costs."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statevcs.errors import CorruptObject, MissingObject
from statevcs.hashing import ObjectId, hash_bytes, to_hex
from statevcs.objectdb import ObjectDB
from statevcs.objects import Blob, ListNode, StoredObject, decode, encode_with_id
from statevcs.stores.memory import MemoryStore
from statevcs.structures import prolly
from statevcs.structures.prolly import BOUNDARY_BITS, MAX_ENTRIES, ItemChange


class DictReader:
    """An in-memory object reader over ``id -> bytes``, counting what it decodes."""

    def __init__(self) -> None:
        self.data: dict[ObjectId, bytes] = {}
        self.loads = 0

    def add(self, out: dict[ObjectId, bytes]) -> None:
        self.data.update(out)

    def load(self, object_id: ObjectId) -> StoredObject:
        self.loads += 1
        data = self.data.get(object_id)
        if data is None:
            raise MissingObject(to_hex(object_id))
        return decode(object_id, data)

    def load_many(self, ids: Iterable[ObjectId]) -> dict[ObjectId, StoredObject]:
        return {i: self.load(i) for i in ids}

    def remember(self, object_id: ObjectId, obj: StoredObject) -> None:
        """Fresh nodes are already in ``out``; nothing to cache."""

    def build(self, ids: Sequence[ObjectId]) -> ObjectId:
        out: dict[ObjectId, bytes] = {}
        root = prolly.build(ids, out)
        self.add(out)
        return root

    def splice(self, root: ObjectId, keep: int, new_ids: Sequence[ObjectId]) -> ObjectId:
        out: dict[ObjectId, bytes] = {}
        result = prolly.splice(self, root, keep, new_ids, out)
        self.add(out)
        return result


def item_ids(seed: int, count: int) -> list[ObjectId]:
    return [hash_bytes(b"item-%d-%d" % (seed, i)) for i in range(count)]


def height(reader: DictReader, root: ObjectId) -> int:
    node = reader.load(root)
    assert isinstance(node, ListNode)
    return node.level + 1


def naive_diff(a: Sequence[ObjectId], b: Sequence[ObjectId]) -> list[ItemChange]:
    changes = []
    for i in range(max(len(a), len(b))):
        old = a[i] if i < len(a) else None
        new = b[i] if i < len(b) else None
        if old != new:
            changes.append(ItemChange(i, old, new))
    return changes


def naive_prefix(a: Sequence[ObjectId], b: Sequence[ObjectId]) -> int:
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return n


def check_tree_shape(reader: DictReader, root: ObjectId) -> None:
    """Every node respects the fan-out cap, counts add up, and only the last node per level
    may end without a boundary entry."""
    node = reader.load(root)
    assert isinstance(node, ListNode)
    level_nodes = [node]
    while True:
        for n in level_nodes:
            assert len(n.ids) <= MAX_ENTRIES
        for n in level_nodes[:-1]:
            boundary = not n.ids[-1][-1] & ((1 << BOUNDARY_BITS) - 1)
            assert boundary or len(n.ids) == MAX_ENTRIES
        if level_nodes[0].level == 0:
            return
        children = []
        for n in level_nodes:
            for child_id, count in zip(n.ids, n.counts):
                child = reader.load(child_id)
                assert isinstance(child, ListNode)
                assert child.level == n.level - 1
                assert child.total == count
                children.append(child)
        level_nodes = children


# --- building and history independence ------------------------------------------

lengths = st.integers(min_value=0, max_value=5000)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), count=lengths)
def test_reads_agree_with_the_python_list(seed: int, count: int) -> None:
    reader = DictReader()
    expected = item_ids(seed, count)
    root = reader.build(expected)
    assert prolly.items(reader, root) == expected
    assert prolly.length(reader, root) == count
    for index in random.Random(seed).sample(range(count), min(count, 20)):
        assert prolly.get(reader, root, index) == expected[index]
        assert prolly.get(reader, root, index - count) == expected[index]
    check_tree_shape(reader, root)


operations = st.lists(
    st.tuples(
        st.sampled_from(["append", "truncate", "splice"]),
        st.integers(0, 10**6),  # where (scaled to the current length) or seed
        st.integers(0, 700),  # how many new items
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6), start=lengths, ops=operations)
def test_incremental_splices_equal_a_fresh_build(
    seed: int, start: int, ops: list[tuple[str, int, int]]
) -> None:
    reader = DictReader()
    current = item_ids(seed, start)
    root = reader.build(current)
    for step, (op, where, count) in enumerate(ops):
        fresh = item_ids(seed * 31 + step + 1, count)
        if op == "append":
            keep, new = len(current), fresh
        elif op == "truncate":
            keep, new = where % (len(current) + 1), []
        else:
            keep, new = where % (len(current) + 1), fresh
        root = reader.splice(root, keep, new)
        current = current[:keep] + new
        assert root == DictReader().build(current)
    assert prolly.items(reader, root) == current
    assert prolly.length(reader, root) == len(current)


@pytest.mark.parametrize(
    "count", [0, 1, MAX_ENTRIES - 1, MAX_ENTRIES, MAX_ENTRIES + 1, MAX_ENTRIES**2 + 5]
)
def test_the_fan_out_cap_holds_without_boundaries(count: int) -> None:
    # Ids whose low bits are never zero never end a node: only MAX_ENTRIES cuts them.
    ids = [hash_bytes(b"%d" % i)[:31] + b"\x01" for i in range(count)]
    reader = DictReader()
    root = reader.build(ids)
    assert prolly.items(reader, root) == ids
    check_tree_shape(reader, root)
    if count > 1:
        assert reader.splice(reader.build(ids[: count // 2]), count // 2, ids[count // 2 :]) == root


def test_every_entry_a_boundary_gives_one_item_leaves() -> None:
    ids = [hash_bytes(b"%d" % i)[:31] + b"\x00" for i in range(300)]
    reader = DictReader()
    root = reader.build(ids)
    check_tree_shape(reader, root)
    assert prolly.items(reader, root) == ids
    assert reader.splice(reader.build(ids[:100]), 100, ids[100:]) == root


def test_single_item_and_empty_lists() -> None:
    reader = DictReader()
    empty = reader.build([])
    out: dict[ObjectId, bytes] = {}
    assert prolly.empty(out) == empty
    assert prolly.items(reader, empty) == []
    assert prolly.length(reader, empty) == 0
    one = item_ids(1, 1)
    root = reader.splice(empty, 0, one)
    assert root == reader.build(one)
    assert reader.splice(root, 0, []) == empty
    big = reader.build(item_ids(2, 3000))
    assert reader.splice(big, 0, []) == empty


def test_build_stores_exactly_the_reachable_nodes() -> None:
    reader = DictReader()
    out: dict[ObjectId, bytes] = {}
    root = prolly.build(item_ids(3, 5000), out)
    reader.add(out)
    assert prolly.node_ids(reader, root) == set(out)
    assert height(reader, root) >= 3


def test_out_of_range_arguments_raise_index_error() -> None:
    reader = DictReader()
    root = reader.build(item_ids(4, 10))
    with pytest.raises(IndexError):
        prolly.get(reader, root, 10)
    with pytest.raises(IndexError):
        prolly.get(reader, root, -11)
    with pytest.raises(IndexError):
        reader.splice(root, 11, [])
    with pytest.raises(IndexError):
        reader.splice(root, -1, [])


def test_a_non_list_root_is_reported_as_corrupt() -> None:
    reader = DictReader()
    blob_id, data = encode_with_id(Blob(b"not a node"))
    reader.add({blob_id: data})
    with pytest.raises(CorruptObject, match=to_hex(blob_id)):
        prolly.items(reader, blob_id)
    with pytest.raises(MissingObject):
        prolly.length(reader, hash_bytes(b"absent"))


# --- costs ---------------------------------------------------------------------------


def test_appending_writes_the_new_path_only() -> None:
    reader = DictReader()
    base = item_ids(5, 10_000)
    root = reader.build(base)
    tree_height = height(reader, root)
    for k in (1, 10, 100):
        out: dict[ObjectId, bytes] = {}
        new_root = prolly.splice(reader, root, len(base), item_ids(6, k), out)
        reader.add(out)
        # New leaves (at most one per item) plus about one node per level above them.
        assert len(out) <= k + 3 * tree_height + 2
        assert new_root == DictReader().build(base + item_ids(6, k))


def test_forks_share_every_node_of_their_common_prefix() -> None:
    reader = DictReader()
    base = item_ids(7, 10_000)
    root = reader.build(base)
    forks = [reader.splice(root, 9_000, item_ids(100 + f, 50)) for f in range(5)]
    base_nodes = prolly.node_ids(reader, root)
    for fork in forks:
        fork_nodes = prolly.node_ids(reader, fork)
        # Only nodes holding the 50 new items, or on the path to them, are new.
        assert len(fork_nodes - base_nodes) <= 50 + 4 * height(reader, fork)
        assert len(fork_nodes & base_nodes) >= 0.85 * len(base_nodes)


# --- diff ------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    count=st.integers(0, 1500),
    edits=st.lists(
        st.tuples(st.integers(0, 10**6), st.integers(0, 3), st.integers(0, 40)), max_size=4
    ),
)
def test_diff_reports_exactly_the_positional_differences(
    seed: int, count: int, edits: list[tuple[int, int, int]]
) -> None:
    a = item_ids(seed, count)
    b = list(a)
    for n, (where, kind, size) in enumerate(edits):
        fresh = item_ids(seed + 7919 * (n + 1), size)
        at = where % (len(b) + 1)
        if kind == 0:  # replace a run in place
            b[at : at + len(fresh)] = fresh
        elif kind == 1:  # insert (shifts everything after)
            b[at:at] = fresh
        elif kind == 2:  # delete a run
            del b[at : at + size]
        else:  # truncate and append
            b = b[:at] + fresh
    reader = DictReader()
    ra, rb = reader.build(a), reader.build(b)
    result = prolly.diff(reader, ra, rb)
    expected = naive_diff(a, b)
    assert list(result.changes) == expected
    assert (result.old_length, result.new_length) == (len(a), len(b))
    assert result.common_prefix == naive_prefix(a, b)
    reverse = prolly.diff(reader, rb, ra)
    assert [(c.index, c.old, c.new) for c in reverse.changes] == [
        (c.index, c.new, c.old) for c in expected
    ]


def test_diff_of_unrelated_lists_and_of_equal_lists() -> None:
    reader = DictReader()
    a, b = item_ids(8, 700), item_ids(9, 300)
    result = prolly.diff(reader, reader.build(a), reader.build(b))
    assert list(result.changes) == naive_diff(a, b)
    assert result.common_prefix == 0
    same = prolly.diff(reader, reader.build(a), reader.build(list(a)))
    assert same.changes == ()
    assert same.common_prefix == 700
    assert same.nodes_visited == 2  # equal roots: nothing below them is read


@pytest.mark.parametrize("position", [0, 1, 4_999, 5_000, 9_998, 9_999])
@pytest.mark.parametrize("boundary", [False, True])
def test_diff_of_a_single_replacement_reads_few_nodes(position: int, boundary: bool) -> None:
    n = 10_000
    reader = DictReader()
    a = item_ids(10, n)
    b = list(a)
    # The replacement is (or is not) a node boundary, so the leaves regroup (or do not).
    b[position] = hash_bytes(b"replacement")[:31] + (b"\x00" if boundary else b"\x01")
    ra, rb = reader.build(a), reader.build(b)
    tree_height = max(height(reader, ra), height(reader, rb))
    result = prolly.diff(reader, ra, rb)
    assert list(result.changes) == [ItemChange(position, a[position], b[position])]
    assert result.common_prefix == position
    assert result.nodes_visited <= 4 * tree_height + 8


def test_diff_of_an_append_reads_few_nodes() -> None:
    reader = DictReader()
    a = item_ids(11, 10_000)
    b = a + item_ids(12, 3)
    ra, rb = reader.build(a), reader.build(b)
    result = prolly.diff(reader, ra, rb)
    assert list(result.changes) == [ItemChange(10_000 + i, None, b[10_000 + i]) for i in range(3)]
    assert result.nodes_visited <= 4 * height(reader, rb) + 8


def test_diff_reads_through_an_object_db() -> None:
    store = MemoryStore()
    a = item_ids(13, 2000)
    b = a[:1500] + item_ids(14, 10)
    out: dict[ObjectId, bytes] = {}
    ra, rb = prolly.build(a, out), prolly.build(b, out)
    store.put_many(out)
    db = ObjectDB(store)
    assert list(prolly.diff(db, ra, rb).changes) == naive_diff(a, b)
    assert prolly.items(db, rb) == b


# --- prefix_length ---------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    a=st.lists(st.sampled_from([b"a", b"b", b"c"]), max_size=60),
    b=st.lists(st.sampled_from([b"a", b"b", b"c"]), max_size=60),
)
def test_prefix_length_matches_a_naive_loop(a: list[bytes], b: list[bytes]) -> None:
    assert prolly.prefix_length(a, b) == naive_prefix(a, b)
    assert prolly.prefix_length(a, a + b) == len(a)
    assert prolly.prefix_length(b, a) == naive_prefix(a, b)


# --- written objects, deep and inconsistent trees ------------------------------------


def reachable_nodes(reader: DictReader, root: ObjectId) -> set[ObjectId]:
    found: set[ObjectId] = set()
    stack = [root]
    while stack:
        object_id = stack.pop()
        found.add(object_id)
        node = reader.load(object_id)
        assert isinstance(node, ListNode)
        if node.level > 0:
            stack.extend(node.ids)
    return found


def test_replacing_20_messages_leaves_no_dangling_wrapper_node() -> None:
    # The reproducer: the old root (level 4) shrank to level 3, and the single-entry
    # level-4 node wrapping the new root was written although nothing refers to it.
    reader = DictReader()
    ids = item_ids(1000, 1000)
    root = reader.build(ids)
    new_ids = ids[:7] + item_ids(2007, 20) + ids[27:]
    out: dict[ObjectId, bytes] = {}
    new_root = prolly.splice(reader, root, 7, new_ids[7:], out)
    reader.add(out)
    assert set(out) <= reachable_nodes(reader, new_root)
    assert new_root == DictReader().build(new_ids)


@settings(max_examples=150)
@given(
    seed=st.integers(0, 10**6),
    count=st.integers(0, 3000),
    where=st.integers(0, 10**6),
    removed=st.integers(0, 60),
    added=st.integers(0, 60),
)
def test_splices_write_only_nodes_reachable_from_the_new_root(
    seed: int, count: int, where: int, removed: int, added: int
) -> None:
    reader = DictReader()
    ids = item_ids(seed, count)
    root = reader.build(ids)
    start = where % (count + 1)
    new_ids = ids[:start] + item_ids(seed + 1, added) + ids[start + removed :]
    out: dict[ObjectId, bytes] = {}
    new_root = prolly.splice(reader, root, start, new_ids[start:], out)
    reader.add(out)
    assert set(out) <= reachable_nodes(reader, new_root)
    fresh: dict[ObjectId, bytes] = {}
    assert new_root == prolly.build(new_ids, fresh)
    assert set(fresh) == reachable_nodes(reader, new_root)
    assert prolly.items(reader, new_root) == new_ids


def chain(reader: DictReader, levels: int, leaf_items: Sequence[ObjectId]) -> ObjectId:
    """A crafted, valid but absurdly tall tree: ``levels`` single-entry nodes over one leaf."""
    node = ListNode(0, tuple(leaf_items))
    object_id, data = encode_with_id(node)
    reader.add({object_id: data})
    for level in range(1, levels):
        node = ListNode(level, (object_id,), (len(leaf_items),))
        object_id, data = encode_with_id(node)
        reader.add({object_id: data})
    return object_id


def test_reads_of_a_3000_level_tree_are_iterative() -> None:
    reader = DictReader()
    leaf = item_ids(8, 5)
    tall = chain(reader, 3000, leaf)
    assert prolly.items(reader, tall) == leaf
    assert prolly.items_from(reader, tall, 2) == leaf[2:]
    assert prolly.get(reader, tall, 3) == leaf[3]
    assert prolly.length(reader, tall) == 5
    assert len(prolly.node_ids(reader, tall)) == 3000
    other = reader.build(leaf[:4] + item_ids(9, 1))
    diff = prolly.diff(reader, tall, other)
    assert [(c.index, c.old, c.new) for c in diff.changes] == [(4, leaf[4], item_ids(9, 1)[0])]
    assert reader.splice(tall, 5, item_ids(10, 3)) == DictReader().build(leaf + item_ids(10, 3))


def crafted(reader: DictReader, node: ListNode) -> ObjectId:
    object_id, data = encode_with_id(node)
    reader.add({object_id: data})
    return object_id


def test_a_child_at_the_wrong_level_is_corrupt() -> None:
    reader = DictReader()
    leaf = crafted(reader, ListNode(0, tuple(item_ids(11, 3))))
    level1 = crafted(reader, ListNode(1, (leaf,), (3,)))
    # Level 1 under level 1: a walk that trusted levels could go on (or loop) forever.
    bad = crafted(reader, ListNode(1, (level1, leaf), (3, 3)))
    too_high = crafted(reader, ListNode(2, (leaf, level1), (3, 3)))
    for root in (bad, too_high):
        for read in (
            lambda r: prolly.items(reader, r),
            lambda r: prolly.items_from(reader, r, 1),
            lambda r: prolly.get(reader, r, 1),
            lambda r: prolly.node_ids(reader, r),
            lambda r: prolly.diff(reader, r, reader.build(item_ids(12, 6))),
            lambda r: reader.splice(r, 1, []),
        ):
            with pytest.raises(CorruptObject, match="level"):
                read(root)


def test_counts_that_disagree_with_the_children_are_corrupt() -> None:
    reader = DictReader()
    leaf = crafted(reader, ListNode(0, tuple(item_ids(13, 2))))
    # The parent claims 5 items below a leaf of 2: get(3) used to loop forever.
    root = crafted(reader, ListNode(1, (leaf, leaf), (5, 2)))
    for read in (
        lambda: prolly.get(reader, root, 3),
        lambda: prolly.items(reader, root),
        lambda: prolly.items_from(reader, root, 1),
        lambda: prolly.diff(reader, root, reader.build(item_ids(14, 7))),
        lambda: reader.splice(root, 3, []),
    ):
        with pytest.raises(CorruptObject, match=r"items where its (parent|nodes) counts?"):
            read()
