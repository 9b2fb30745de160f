"""Times in results: one form for all, ISO 8601 in UTC to the millisecond with a Z
("2026-12-06T17:20:00.123Z"), as the daemon's result files and JavaScript's toISOString write
them. Attributes of objects (a Process's start_time and end_time) are datetimes instead."""

from datetime import datetime, timezone


def iso(t=None):
    """t (a datetime, or seconds since the epoch; now if None) in the results' form."""
    if t is None:
        t = datetime.now(timezone.utc)
    elif not isinstance(t, datetime):
        t = datetime.fromtimestamp(t, tz=timezone.utc)
    return t.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
