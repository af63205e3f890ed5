"""Values as the WIT carries them, shared by the SDK's modules (http, ws, grpc): bytes and
optional millisecond timeouts."""

U32_MAX = 2**32 - 1


def as_bytes(value) -> bytes:
    """A header value, body or metadata value as bytes (str is UTF-8 encoded)."""
    return value.encode() if isinstance(value, str) else bytes(value)


def timeout_ms(timeout):
    """Seconds (None: no limit) as the WIT's optional milliseconds."""
    return None if timeout is None else min(max(int(timeout * 1000), 0), U32_MAX)
