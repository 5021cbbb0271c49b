"""The types of the ids the kernel passes around (instead of `Any`)."""

from __future__ import annotations

import uuid
from typing import TypeAlias

#: a UUID key as callers hold it: the UUID, or its text (a URL segment, a task argument, a JSON value)
UUIDLike: TypeAlias = uuid.UUID | str
#: any model's primary key: most tables have UUID keys, a few keep integer ones
PrimaryKey: TypeAlias = uuid.UUID | int | str
