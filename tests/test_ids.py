"""Entry ids: Pi's 8 hex characters, never repeated by threads or by a forked child."""

from __future__ import annotations

import itertools
import os
import re
import threading

import pytest

from pisession import RandomIds, _ids


def test_ids_are_eight_hex_characters_and_avoid_existing_ones() -> None:
    ids = RandomIds()
    taken: set[str] = set()
    for _ in range(5000):  # several refills of the pool
        new = ids.entry_id(taken)
        assert re.fullmatch(r"[0-9a-f]{8}", new)
        assert new not in taken
        taken.add(new)


def test_a_source_that_keeps_colliding_falls_back_to_a_uuid() -> None:
    class Everything:
        def __contains__(self, item: object) -> bool:
            return True

    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
                        RandomIds().entry_id(Everything()))


def test_threads_sharing_a_source_never_get_the_same_id(monkeypatch: pytest.MonkeyPatch) -> None:
    # Randomness that never repeats a 4-byte group: a repeated id can then only come from two
    # threads taking the same pool slot (24,000 truly random 32-bit ids would collide 7% of
    # the time by the birthday bound).
    counter = itertools.count()

    def distinct_bytes(n: int) -> bytes:
        return b"".join(next(counter).to_bytes(4, "big") for _ in range(n // 4))

    monkeypatch.setattr(_ids.os, "urandom", distinct_bytes)
    ids = RandomIds()
    got: list[list[str]] = [[] for _ in range(8)]

    def take(mine: list[str]) -> None:
        for _ in range(3000):
            mine.append(ids.entry_id(()))

    threads = [threading.Thread(target=take, args=(mine,)) for mine in got]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [i for mine in got for i in mine]
    assert len(every) == len(set(every)) == 24000


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_does_not_repeat_its_parents_ids() -> None:
    ids = RandomIds()
    ids.entry_id(())  # the pool is full of ids the parent has not handed out yet
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        os.close(read)
        os.write(write, " ".join(ids.entry_id(()) for _ in range(50)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = pipe.read().split()
    os.waitpid(pid, 0)
    parent = [ids.entry_id(()) for _ in range(50)]
    assert len(child) == 50
    assert not set(child) & set(parent)


def test_a_copied_or_pickled_source_does_not_repeat_the_originals_ids() -> None:
    import copy
    import pickle

    ids = RandomIds()
    ids.entry_id(())  # fill the pool
    copies = [pickle.loads(pickle.dumps(ids)), copy.copy(ids), copy.deepcopy(ids)]
    drawn = [ids.entry_id(()) for _ in range(20)]
    for other in copies:
        assert not set(drawn) & {other.entry_id(()) for _ in range(20)}
