"""Group commit: the writes of many threads in one transaction (docs/processor.md).

A worker process runs many threads, each carrying one recharge. Where each would commit a
small transaction of its own, they hand their item to a ``Batcher`` instead: the first to
arrive while nobody writes becomes the writer and writes every item waiting (up to
``limit``) with one call of ``write`` (one transaction), then wakes their threads and hands
the writer's role to the next thread waiting, if any. Nobody waits for a batch to fill: alone,
an item is written at once, as a batch of one; under load, the items that arrive while one
batch is written make the next. Waiting threads hold no pooled database connection.

If ``write`` raises for a batch of several items, each item is written again on its own, so
one bad item fails only its own thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from reseller.db import connection_release

logger = logging.getLogger(__name__)


class _Waiting[Item, Result]:
    __slots__ = ("done", "error", "item", "result", "turn")

    def __init__(self, item: Item) -> None:
        self.item = item
        self.result: Result | None = None
        self.error: BaseException | None = None
        self.done = False
        self.turn = threading.Event()  # set when written, or when it is this thread's turn


class Batcher[Item, Result]:
    """``submit(item)`` returns ``write([...])``'s result for ``item`` (or raises its error)."""

    def __init__(self, write: Callable[[list[Item]], Sequence[Result]], *, limit: int) -> None:
        self._write = write
        self._limit = max(1, limit)
        self._mutex = threading.Lock()
        self._waiting: list[_Waiting[Item, Result]] = []
        self._writing = False
        self.batches = 0  # how many writes (tests and the bench read it)

    def submit(self, item: Item) -> Result:
        mine: _Waiting[Item, Result] = _Waiting(item)
        with self._mutex:
            self._waiting.append(mine)
            lead = not self._writing
            self._writing = True
        if not lead:
            connection_release()  # the writer may need a connection to write this item
            mine.turn.wait()
        while not mine.done:  # the writer's role: this batch holds our item
            self._write_next()
        if mine.error is not None:
            raise mine.error
        return mine.result  # type: ignore[return-value]

    def _write_next(self) -> None:
        with self._mutex:
            batch = self._waiting[: self._limit]
            del self._waiting[: self._limit]
        try:
            self._write_batch(batch)
        finally:
            try:
                connection_release()
            except Exception:  # the threads must be answered whatever happens here
                logger.warning("could not give a connection back after a batch", exc_info=True)
            with self._mutex:
                self.batches += 1
                for waiting in batch:
                    waiting.done = True
                successor = self._waiting[0] if self._waiting else None
                self._writing = successor is not None
            for waiting in batch:
                waiting.turn.set()
            if successor is not None:
                successor.turn.set()  # its thread writes the next batch

    def _write_batch(self, batch: list[_Waiting[Item, Result]]) -> None:
        try:
            results = self._write([waiting.item for waiting in batch])
        except Exception as exc:
            if len(batch) == 1:
                batch[0].error = exc
                return
            logger.warning("a batch of %d failed; each is written alone", len(batch), exc_info=True)
            for waiting in batch:
                self._write_batch([waiting])
            return
        except BaseException as exc:  # an interpreter exit: every thread of the batch hears it
            for waiting in batch:
                waiting.error = exc
            raise
        for waiting, result in zip(batch, results, strict=True):
            waiting.result = result
