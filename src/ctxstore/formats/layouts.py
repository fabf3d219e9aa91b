"""Messages as JSON for the Go struct that reads them (RedisStorage's ``layout``).

Go's encoding/json matches a key to a struct field ignoring case, skips keys it has no
field for, and fails the whole Unmarshal when a value does not fit its field's type.  A
:class:`GoLayout` names the struct: the key of each field it has, what its metadata map
holds, and its other fields.  What :meth:`GoLayout.document` writes, that struct reads
without error or loss; what the struct has no field for is written under ctxstore's own
names, which it skips, so ctxstore still reads back everything it wrote (formats/mapper.py
recognises every spelling).  See docs/legacy-formats.md.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from ctxstore.errors import ConfigurationError, InvalidMessageError
from ctxstore.formats.mapper import FORMAT_KEY, message_field
from ctxstore.models import MESSAGE_FORMAT, Message
from ctxstore.timestamps import go_timestamp

KeyStyle = Literal["untagged", "snake_case", "camelCase"]
_KEYS: dict[KeyStyle, dict[str, str]] = {
    "untagged": {
        "role": "Role",
        "content": "Content",
        "name": "Name",
        "turn_id": "TurnID",
        "timestamp": "Timestamp",
        "metadata": "Metadata",
    },
    "snake_case": {name: name for name in ("role", "content", "name", "turn_id", "timestamp")}
    | {"metadata": "metadata"},
    "camelCase": {
        "role": "role",
        "content": "content",
        "name": "name",
        "turn_id": "turnId",
        "timestamp": "timestamp",
        "metadata": "metadata",
    },
}


@dataclass(frozen=True)
class GoLayout:
    """The Go message struct a Redis value is written for.

    Each key is the JSON key of the struct's field (None: the struct has no such field;
    ctxstore then writes the value under its own name, which the struct skips).  The
    default is the original service's ``Message{Role, Content, Name string}``: Go matches
    ``role`` to ``Role`` ignoring case, so it reads ctxstore's own keys.
    """

    role: str = "role"
    content: str = "content"
    name: str | None = "name"
    turn_id: str | None = None
    timestamp: str | None = None
    metadata: str | None = None
    #: ``"string"`` for a ``map[string]string`` metadata field, else ``"any"``.
    metadata_values: Literal["any", "string"] = "any"
    #: The struct's other fields (``TokenCount``, ``ToolCallID``): a message read from Go
    #: keeps them in its metadata; they are written back as fields, not into the map.
    fields: tuple[str, ...] = ()
    #: How role values are written: ``user`` (lower), ``User`` (title) or ``USER`` (upper).
    role_case: Literal["lower", "title", "upper"] = "lower"
    _own_keys: bool = dataclasses.field(default=False, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._check_keys()
        object.__setattr__(self, "_own_keys", self._reads_own_document())

    def _check_keys(self) -> None:
        # Every key must read back as its field (formats/mapper.py: message_field), and no
        # other field's key may be one Go would match to it (case-insensitively).
        for field, key in self._keys().items():
            if key is not None and message_field(key) != field:
                raise ConfigurationError(f"Go layout: {key!r} does not name the {field} field")
        for field in self.fields:
            if message_field(field) is not None:
                raise ConfigurationError(
                    f"Go layout: {field!r} is a message field, not one of the struct's others"
                )
        keys = [key for key in self._keys().values() if key is not None]
        taken = [key.casefold() for key in (*keys, *self.fields)]
        if len(set(taken)) != len(taken):
            raise ConfigurationError(f"Go layout: two fields share a key: {taken}")

    def _reads_own_document(self) -> bool:
        # A struct of role, content and name only (the original service's) reads
        # ctxstore's own document as it is: Go matches `role` to `Role`.
        own = (self.role, self.content, self.turn_id, self.timestamp, self.metadata)
        plain = own == ("role", "content", None, None, None) and self.name in ("name", None)
        return plain and not self.fields and self.role_case == "lower"

    @classmethod
    def of(
        cls,
        style: KeyStyle,
        *,
        name: bool = True,
        turn_id: bool = True,
        timestamp: bool = True,
        metadata: Literal["any", "string"] | None = "any",
        fields: tuple[str, ...] = (),
        role_case: Literal["lower", "title", "upper"] = "lower",
    ) -> GoLayout:
        """A struct whose keys follow ``style``: untagged (Go's field names: ``TurnID``),
        ``json:"turn_id"`` tags or ``json:"turnId"`` tags."""
        keys = _KEYS[style]
        return cls(
            role=keys["role"],
            content=keys["content"],
            name=keys["name"] if name else None,
            turn_id=keys["turn_id"] if turn_id else None,
            timestamp=keys["timestamp"] if timestamp else None,
            metadata=keys["metadata"] if metadata else None,
            metadata_values=metadata or "any",
            fields=fields,
            role_case=role_case,
        )

    def _keys(self) -> dict[str, str | None]:
        return {
            "role": self.role,
            "content": self.content,
            "turn_id": self.turn_id,
            "timestamp": self.timestamp,
            "name": self.name,
            "metadata": self.metadata,
        }

    def document(self, message: Message, position: int) -> dict[str, Any]:
        """``message`` as JSON data for this struct (plus ``format_version``, which Go
        skips).  InvalidMessageError when the struct can't hold it exactly."""
        if self._own_keys:  # ctxstore's own document (pydantic's serializer: the fast path)
            document = message.model_dump(mode="json")
            document[FORMAT_KEY] = MESSAGE_FORMAT
            return document
        metadata = dict(message.metadata)
        own = {field: metadata.pop(field) for field in self.fields if field in metadata}
        if self.metadata is not None and self.metadata_values == "string":
            _refuse_non_strings(metadata, self.metadata, position)
        values = self._field_values(message, metadata, position)
        document = {key or field: values[field] for field, key in self._keys().items()}
        document.update(own)
        document[FORMAT_KEY] = MESSAGE_FORMAT
        return document

    def _field_values(
        self, message: Message, metadata: dict[str, Any], position: int
    ) -> dict[str, Any]:
        """Each message field's value as this struct holds it."""
        stamp = message.timestamp
        return {
            "role": _ROLE_CASE[self.role_case](message.role),
            "content": message.content,
            "turn_id": message.turn_id,
            "timestamp": None if stamp is None else _stamp(stamp, position),
            "name": message.name,
            # Go's nil map (what its struct holds without metadata) is null; ctxstore's
            # own key keeps {}
            "metadata": metadata if metadata or self.metadata is None else None,
        }


_ROLE_CASE = {"lower": str.lower, "title": str.title, "upper": str.upper}


def _refuse_non_strings(metadata: dict[str, Any], go_field: str, position: int) -> None:
    for key, value in metadata.items():
        if not isinstance(value, str):
            raise InvalidMessageError(
                f"metadata {key!r} is {type(value).__name__}, and this Go layout's "
                f"{go_field} is map[string]string: store it as a string or "
                "name the struct field it belongs to in the layout's fields",
                position=position,
            )


def _stamp(stamp: Any, position: int) -> str:
    try:
        return go_timestamp(stamp)
    except InvalidMessageError as error:
        raise InvalidMessageError(error.message, position=position) from error


#: The original Go service's struct (docs/legacy-formats.md, format 0): the default.
GO_SERVICE = GoLayout()
