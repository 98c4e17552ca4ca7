"""Old import path, kept for plugins and older code: the code lives in :mod:`memread.traces.records`."""

from memread.traces.records import (
    CLASSES,
    DURABLE,
    FORMAT_VERSION,
    KINDS,
    chunk_from_record,
    chunk_record,
    event_to_record,
    jsonable,
    record_to_event,
    text_hash,
)

__all__ = ["CLASSES", "DURABLE", "FORMAT_VERSION", "KINDS", "chunk_from_record", "chunk_record", "event_to_record",
           "jsonable", "record_to_event", "text_hash"]
