"""Leave the interpreter, at the end of the build's import, in the state that costs each worker the
least memory.

componentize-py snapshots the interpreter's memory after the build imports the entry module, and
every instance (one per worker) starts from that snapshot copy-on-write: a page the instance only
reads stays shared, a page it writes becomes its own. CPython writes where it allocates and where
its collector walks, so (measured, sdk/python/README.md "Memory"):

- the collector: a collection that walks the snapshot's objects writes to each one's header.
  `gc.freeze()` moves them out of its reach (CPython's copy-on-write-friendly GC, as used before
  forking).
- the allocator: CPython here allocates with the C library's malloc (no pymalloc), which fills
  the holes the imports left all over the snapshot's heap first, so each task's objects land on
  a different snapshot page. Plugging the holes with objects kept forever makes every allocation
  after the snapshot come from the top of the heap: a worker's own objects share a few fresh pages
  instead of claiming hundreds of the snapshot's.
"""

import gc
import sys

# The snapshot's own objects plugging its holes, kept for the life of the instance.
_plugs = []


# More than a snapshot's whole heap (about 12 MiB): past it, the allocator is not the one this
# expects (a host CPython's malloc maps large blocks high up), and plugging stops.
_MOST = 32 << 20
_plugged = 0


def _from_hole(make, limit: int) -> bool:
    """Allocate `make()`; keep it and say so if it landed in a hole (below `limit`), else free it."""
    global _plugged
    value = make()
    if id(value) < limit and _plugged < _MOST:
        _plugs.append(value)
        _plugged += sys.getsizeof(value)
        return True
    return False


def plug_holes() -> int:
    """Fill the free chunks below the top of the heap with objects kept forever; the bytes plugged.

    `id()` of an object is its address in the linear memory: an allocation below the start of the
    top chunk (found by allocating more than any hole can hold) came from a hole. Sizes go down from
    large to the allocator's smallest chunk; a hole larger than the size asked for is split and its
    rest is plugged by the smaller sizes after."""
    probe = bytes(1 << 20)
    limit = id(probe)
    del probe
    size = 1 << 19
    while size >= 64:
        while _from_hole(lambda: bytes(size), limit):
            pass
        size = size * 7 // 8 if size > 4096 else size - 8
    # The smallest chunks, down to the allocator's least (16 bytes: a bare object() asks for 8).
    # bytes(0) and bytes(1) are shared singletons, so the bytes stop at 2 (a 19-byte request).
    for size in range(63, 1, -1):
        while _from_hole(lambda: bytes(size), limit):
            pass
    while _from_hole(object, limit):
        pass
    return _plugged


def prepare() -> None:
    """Freeze the collector's view of the snapshot, then plug the heap's holes: call last.

    The collection first frees the garbage of the imports, whose room the plugs then take (measured:
    plugging before the collection left 0.1 MiB more per worker)."""
    gc.collect()
    gc.freeze()
    if sys.platform == "wasi":  # the allocator this knows; a host CPython (the unit tests) skips it
        plug_holes()
