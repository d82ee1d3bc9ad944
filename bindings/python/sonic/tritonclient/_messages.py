"""KServe's protobuf messages as plain Python objects, for the answers tritonclient gives as
protobuf messages (ModelMetadataResponse, ModelStatisticsResponse, ModelInferResponse, ...).

A Message has the attributes of its protobuf type, read from the descriptors of sonic's proto/
(embedded in the extension): set fields hold what the server sent, unset ones read as protobuf's
defaults (0, "", False, an empty list or map, an empty message), 64-bit integers are ints and
enums their numbers, as with protobuf's own classes. So `len(statistics.model_stats)`,
`metadata.inputs[0].datatype` and `config.config.max_batch_size` work unchanged, and so do
HasField(), WhichOneof() and SerializeToString(); str() prints protobuf's text format.

The JSON of a message (as_json=True) is what protobuf's MessageToJson prints with
preserving_proto_field_name=True, made by sonic's C++ printer of the same descriptors: 64-bit
integers as strings, enums by name, bytes in base64, default values left out.
"""

import base64
import json
import math
import threading

from .. import _sonic

# FieldDescriptorProto.Type numbers (descriptor.proto).
_DOUBLE, _FLOAT, _INT64, _UINT64, _INT32, _FIXED64, _FIXED32, _BOOL, _STRING = range(1, 10)
_GROUP, _MESSAGE, _BYTES, _UINT32, _ENUM, _SFIXED32, _SFIXED64, _SINT32, _SINT64 = range(10, 19)
_INTEGERS = {_INT64, _UINT64, _INT32, _FIXED64, _FIXED32, _UINT32, _SFIXED32, _SFIXED64,
             _SINT32, _SINT64}
_REALS = {_DOUBLE, _FLOAT}
_LABEL_REPEATED = 3


# ---- The schema, from the FileDescriptorSet of proto/ --------------------------------------

def _varint(data, at):
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _fields_of(data):
    """(field number, value) of each field of a serialized message: an int for varints, bytes
    for the others."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(data, at)
        elif wire == 2:
            length, at = _varint(data, at)
            value, at = data[at:at + length], at + length
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            value, at = data[at:at + width], at + width
        else:
            raise ValueError("unexpected wire type %d in the descriptors" % wire)
        yield number, value


class _Field:
    """A field of a message, from its FieldDescriptorProto: name = 1, number = 3, label = 4,
    type = 5, type_name = 6, oneof_index = 9, proto3_optional = 17."""

    __slots__ = ("name", "number", "type", "repeated", "type_name", "oneof", "presence")

    def __init__(self, data, oneof_names):
        self.name = ""
        self.number = self.type = 0
        self.repeated = False
        self.type_name = None
        oneof_index = None
        proto3_optional = False
        for number, value in _fields_of(data):
            if number == 1:
                self.name = value.decode()
            elif number == 3:
                self.number = value
            elif number == 4:
                self.repeated = value == _LABEL_REPEATED
            elif number == 5:
                self.type = value
            elif number == 6:
                self.type_name = value.decode().lstrip(".")
            elif number == 9:
                oneof_index = value
            elif number == 17:
                proto3_optional = value != 0
        self.oneof = None if oneof_index is None else oneof_names[oneof_index]
        # Fields whose presence is known apart from their value (HasField()).
        self.presence = self.type == _MESSAGE or oneof_index is not None or proto3_optional


class _MessageType:
    __slots__ = ("full_name", "fields", "by_name", "oneofs", "map_entry")

    def __init__(self, full_name):
        self.full_name = full_name
        self.fields = []
        self.by_name = {}
        self.oneofs = {}
        self.map_entry = False


class _EnumType:
    __slots__ = ("names", "numbers")

    def __init__(self):
        self.names = {}
        self.numbers = {}


_messages = {}
_enums = {}
_loading = threading.Lock()


# descriptor.proto's numbers: FileDescriptorSet.file = 1; FileDescriptorProto: package = 2,
# message_type = 4, enum_type = 5; DescriptorProto: name = 1, field = 2, nested_type = 3,
# enum_type = 4, options = 7 (MessageOptions.map_entry = 7), oneof_decl = 8 (name = 1);
# EnumDescriptorProto: name = 1, value = 2 (name = 1, number = 2).

def _read_enum(scope, data, enums):
    enum = _EnumType()
    name = ""
    for number, value in _fields_of(data):
        if number == 1:
            name = value.decode()
        elif number == 2:
            entry = dict(_fields_of(value))
            value_number = entry.get(2, 0)
            if value_number >= 1 << 63:  # a negative int32, sign-extended on the wire
                value_number -= 1 << 64
            enum.names[value_number] = entry.get(1, b"").decode()
    enum.numbers = {text: number for number, text in enum.names.items()}
    enums[scope + name] = enum


def _read_message(scope, data, messages, enums):
    parts = list(_fields_of(data))
    name = next(value.decode() for number, value in parts if number == 1)
    message = _MessageType(scope + name)
    oneof_names = [dict(_fields_of(value)).get(1, b"").decode()
                   for number, value in parts if number == 8]
    for number, value in parts:
        if number == 2:
            field = _Field(value, oneof_names)
            message.fields.append(field)
            message.by_name[field.name] = field
            if field.oneof is not None:
                message.oneofs.setdefault(field.oneof, []).append(field)
        elif number == 3:
            _read_message(message.full_name + ".", value, messages, enums)
        elif number == 4:
            _read_enum(message.full_name + ".", value, enums)
        elif number == 7:
            message.map_entry = dict(_fields_of(value)).get(7, 0) != 0
    messages[message.full_name] = message


def _load():
    messages = {}
    enums = {}
    for number, file in _fields_of(_sonic._kserve_descriptors()):
        if number != 1:
            continue
        parts = list(_fields_of(file))
        package = next((value.decode() for n, value in parts if n == 2), "")
        scope = package + "." if package else ""
        for n, value in parts:
            if n == 4:
                _read_message(scope, value, messages, enums)
            elif n == 5:
                _read_enum(scope, value, enums)
    _enums.update(enums)
    _messages.update(messages)  # last: its being filled says that the schema is complete


def message_type(full_name):
    """The schema of a message ("inference.ModelConfig")."""
    if not _messages:
        with _loading:
            if not _messages:
                _load()
    return _messages[full_name]


# ---- Values --------------------------------------------------------------------------------

def _scalar_default(field):
    if field.type in _REALS:
        return 0.0
    if field.type == _BOOL:
        return False
    if field.type == _STRING:
        return ""
    if field.type == _BYTES:
        return b""
    return 0  # integers and enums


def _is_map(field):
    return field.type == _MESSAGE and field.repeated and message_type(field.type_name).map_entry


class MessageMap(dict):
    """A map field: a dict whose missing keys read as (and become) default values, as
    protobuf's map fields do."""

    __slots__ = ("_value_field",)

    def __init__(self, value_field, items=()):
        super().__init__(items)
        self._value_field = value_field

    def __missing__(self, key):
        field = self._value_field
        value = Message(field.type_name) if field.type == _MESSAGE else _scalar_default(field)
        self[key] = value
        return value


class Message:
    """A KServe protobuf message as a plain Python object (see the module's help)."""

    __slots__ = ("_type", "_values")

    def __init__(self, full_name, **values):
        object.__setattr__(self, "_type", message_type(full_name))
        object.__setattr__(self, "_values", {})
        for name, value in values.items():
            setattr(self, name, value)

    def __getattr__(self, name):
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        field = object.__getattribute__(self, "_type").by_name.get(name)
        if field is None:
            raise AttributeError("%s has no field '%s'" % (self._type.full_name, name))
        if _is_map(field):
            return values.setdefault(name, MessageMap(message_type(field.type_name).fields[1]))
        if field.repeated:
            return values.setdefault(name, [])
        if field.type == _MESSAGE:
            return Message(field.type_name)
        return _scalar_default(field)

    def __setattr__(self, name, value):
        field = self._type.by_name.get(name)
        if field is None:
            raise AttributeError("%s has no field '%s'" % (self._type.full_name, name))
        value = _from_python(field, value)
        if field.oneof is not None:
            for other in self._type.oneofs[field.oneof]:
                self._values.pop(other.name, None)
        self._values[name] = value

    def HasField(self, name):  # noqa: N802 (protobuf's name)
        """Whether a message field, or a member of a oneof, is set."""
        field = self._type.by_name.get(name)
        if field is None or field.repeated or not field.presence:
            if name in self._type.oneofs:
                return self.WhichOneof(name) is not None
            raise ValueError("%s has no presence field '%s'" % (self._type.full_name, name))
        return name in self._values

    def WhichOneof(self, oneof_group):  # noqa: N802 (protobuf's name)
        """The name of the member of `oneof_group` that is set, or None."""
        if oneof_group not in self._type.oneofs:
            raise ValueError("%s has no oneof '%s'" % (self._type.full_name, oneof_group))
        for field in self._type.oneofs[oneof_group]:
            if field.name in self._values:
                return field.name
        return None

    def SerializeToString(self):  # noqa: N802 (protobuf's name)
        """The message in protobuf's wire format."""
        return _sonic._message_from_json(self._type.full_name, json.dumps(_loose(self)))

    def __eq__(self, other):
        if not isinstance(other, Message):
            return NotImplemented
        return (self._type is other._type and
                self.SerializeToString() == other.SerializeToString())

    __hash__ = None

    def __str__(self):
        lines = []
        _text(self, "", lines)
        return "".join(lines)

    def __repr__(self):
        return "<%s %s>" % (self._type.full_name, json.dumps(to_json(self)))


def _from_python(field, value):
    """A value given in Python for `field`, as the message keeps it: nested dicts become
    Messages, lists and maps are copied."""
    if _is_map(field):
        entry = message_type(field.type_name)
        return MessageMap(entry.fields[1], ((key, _single(entry.fields[1], item))
                                            for key, item in dict(value).items()))
    if field.repeated:
        return [_single(field, item) for item in value]
    return _single(field, value)


def _single(field, value):
    if field.type == _MESSAGE and not isinstance(value, Message):
        return Message(field.type_name, **value)
    return value


# ---- JSON: to and from protobuf's JSON mapping ---------------------------------------------

def from_json(full_name, document):
    """The Message of type `full_name` that a dict in protobuf's JSON mapping (names as in the
    .proto) describes."""
    message = Message(full_name)
    kind = message._type
    for name, value in document.items():
        field = kind.by_name[name]
        if _is_map(field):
            entry = message_type(field.type_name)
            key_field, value_field = entry.fields
            message._values[name] = MessageMap(value_field, (
                (_json_key(key_field, key), _json_value(value_field, item))
                for key, item in value.items()))
        elif field.repeated:
            message._values[name] = [_json_value(field, item) for item in value]
        else:
            message._values[name] = _json_value(field, value)
    return message


def _json_key(field, key):
    if field.type == _BOOL:
        return key == "true"
    return int(key) if field.type in _INTEGERS else key


def _json_value(field, value):
    if field.type == _MESSAGE:
        return from_json(field.type_name, value)
    if field.type == _ENUM:
        return _enums[field.type_name].numbers.get(value, 0) if isinstance(value, str) else value
    if field.type in _INTEGERS:
        return int(value)
    if field.type in _REALS:
        return float(value.replace("Infinity", "inf")) if isinstance(value, str) else float(value)
    if field.type == _BYTES:
        return base64.b64decode(value)
    return value


def _set_fields(message):
    """(field, value) of each field the message holds, in the schema's order."""
    for field in message._type.fields:
        if field.name in message._values:
            yield field, message._values[field.name]


def _loose(message):
    """The message as a JSON-able dict that protobuf's JSON parser reads back exactly: numbers
    as numbers, enums by number, bytes in base64."""
    document = {}
    for field, value in _set_fields(message):
        if _is_map(field):
            entry = message_type(field.type_name)
            document[field.name] = {_loose_key(key): _loose_value(entry.fields[1], item)
                                    for key, item in value.items()}
        elif field.repeated:
            document[field.name] = [_loose_value(field, item) for item in value]
        else:
            document[field.name] = _loose_value(field, value)
    return document


def _loose_key(key):
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


def _loose_value(field, value):
    if field.type == _MESSAGE:
        return _loose(value)
    if field.type == _BYTES:
        return base64.b64encode(bytes(value)).decode("ascii")
    if field.type in _REALS and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def to_json(message):
    """The message as tritonclient's as_json=True gives it: json.loads of protobuf's
    MessageToJson(message, preserving_proto_field_name=True)."""
    return wire_to_json(message._type.full_name, message.SerializeToString())


def wire_to_json(full_name, data):
    """A serialized message as tritonclient's as_json=True gives it (see to_json())."""
    return json.loads(_sonic._message_to_json(full_name, data))


def from_wire(full_name, data):
    """A serialized message as a Message."""
    return from_json(full_name, wire_to_json(full_name, data))


def to_wire(full_name, document):
    """The message that a dict in protobuf's JSON mapping describes, serialized."""
    return _sonic._message_from_json(full_name, json.dumps(document))


# ---- Text format, for str() ----------------------------------------------------------------

def _text(message, indent, lines):
    for field, value in _set_fields(message):
        if _is_map(field):
            entry = message_type(field.type_name)
            for key, item in sorted(value.items()):  # protobuf prints maps sorted by key
                lines.append("%s%s {\n" % (indent, field.name))
                _text_field(entry.fields[0], key, indent + "  ", lines)
                _text_field(entry.fields[1], item, indent + "  ", lines)
                lines.append("%s}\n" % indent)
        elif field.repeated:
            for item in value:
                _text_field(field, item, indent, lines)
        elif field.presence or value != _scalar_default(field):
            _text_field(field, value, indent, lines)


def _text_field(field, value, indent, lines):
    if field.type == _MESSAGE:
        lines.append("%s%s {\n" % (indent, field.name))
        _text(value, indent + "  ", lines)
        lines.append("%s}\n" % indent)
        return
    if field.type == _ENUM:
        text = _enums[field.type_name].names.get(value, str(value))
    elif field.type == _BOOL:
        text = "true" if value else "false"
    elif field.type == _STRING:
        text = _quoted(value.encode("utf-8"))
    elif field.type == _BYTES:
        text = _quoted(bytes(value))
    else:
        text = repr(value) if field.type in _REALS else str(value)
    lines.append("%s%s: %s\n" % (indent, field.name, text))


def _quoted(data):
    escapes = {0x22: '\\"', 0x27: "\\'", 0x5C: "\\\\", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"}
    out = []
    for byte in data:
        if byte in escapes:
            out.append(escapes[byte])
        elif 0x20 <= byte < 0x7F:
            out.append(chr(byte))
        else:
            out.append("\\%03o" % byte)
    return '"' + "".join(out) + '"'
