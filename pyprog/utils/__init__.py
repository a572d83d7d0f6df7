"""Helpers with no knowledge of RL or forecasting, used by every layer.

* :mod:`.validation` — checks at the public boundary, and how values are shown in messages;
* :mod:`.bounded_cache` — a least-recently-used cache of arrays bounded in bytes;
* :mod:`.cache` — where numba caches pyprog's compiled functions;
* :mod:`.figures` — matplotlib without a display; :mod:`.machine` — the CPU a number came from;
* :mod:`.moved` — the old import paths of moved modules, which warn.

May import :mod:`pyprog._ext` only.
"""
