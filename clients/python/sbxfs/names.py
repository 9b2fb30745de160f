"""sbxfs's name rule for every id the client joins into a path of the mount (sessions,
processes, terminals, code contexts): 1 to 64 of A-Z a-z 0-9 . _ -, and not `.` or `..`
(session_id_valid in src/session.c). It is checked before the id touches any path, so that no
id can name a file outside its directory (`../../etc`, `a/b`) whatever the caller passes."""

import re

from .errors import ValidationError

_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")


def is_name(id):
    return isinstance(id, str) and bool(_NAME.fullmatch(id)) and id not in (".", "..")


def check_name(id, what):
    """The id itself, or a ValidationError naming what it was for (`session`, `process`...)."""
    if not is_name(id):
        raise ValidationError(
            f"invalid {what} id {id!r}: 1 to 64 of A-Z a-z 0-9 . _ -, not . or ..")
    return id
