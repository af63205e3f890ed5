"""A gRPC echo workload against the built-in target's `loadhost.target.Echo` service.

MODE=unary (the default): each task calls `/loadhost.target.Echo/Unary` on TARGET_URL (default
`http://127.0.0.1:8080`) with `EchoRequest { string message = 1; }` where message is
`w{worker}-i{iteration}`, decodes the echo and checks it is what was sent (`echo matches`).
MODE=stream: each task opens the bidirectional `/loadhost.target.Echo/Stream`, sends MESSAGES
(default 100) messages `w{worker}-i{iteration}-m{k}`, k from 0, each followed by one receive and
the same check, then half-closes and waits for the end of the call.

GRPC_STATUS, when set, is sent as the metadata `x-loadhost-status`, which makes the target end the
call with that status. Status 14 (UNAVAILABLE, also what a failed connection counts as) is
retryable; any other status other than OK fails the task, and so does a denied host (the message
says "denied") or a wrong echo. The host records `grpc_reqs{status}`, `grpc_req_duration` and the
rest by itself.

The message is encoded and decoded by hand (one string field). The pure-Python `protobuf` runtime
works inside a component (`pip install --target` it into this folder: the build is offline and
takes packages from the plugin's folder only), but that is some sixty files in the repository and
10 MiB more component for one string field.
"""

import functools

from loadhost import Abort, Failed, Retryable, Task, check, declare_metrics, declare_options, env, grpc

declare_metrics("echo matches:check")
declare_options(
    'TARGET_URL:url=http://127.0.0.1:8080 "the gRPC server"',
    'MODE:string=unary "unary: one unary call per task; stream: one bidi stream of MESSAGES echoes"',
    'GRPC_STATUS:string "ask the target to end each call with this status"',
    'MESSAGES:int=100 "messages per stream (MODE=stream)"',
)

UNARY = "/loadhost.target.Echo/Unary"
STREAM = "/loadhost.target.Echo/Stream"
# Seconds: the call's deadline, short of the host's 60 s task timeout.
TIMEOUT = 10.0


@functools.cache
def settings():
    """TARGET_URL, MODE, GRPC_STATUS and MESSAGES, read once per instance."""
    mode = env("MODE").strip().lower()
    if mode not in ("unary", "stream"):
        raise Abort(f"MODE={mode}: expected unary or stream")
    status = env("GRPC_STATUS")
    metadata = [] if status is None or not status.strip() else [("x-loadhost-status", status.strip())]
    return env("TARGET_URL"), mode, metadata, env("MESSAGES")


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def encode_echo(message: str) -> bytes:
    """`EchoRequest { message }` in protobuf: field 1, wire type 2 (length-delimited)."""
    data = message.encode()
    return b"\x0a" + _varint(len(data)) + data


def decode_echo(data: bytes) -> str:
    """The `message` field of an `EchoRequest`/`EchoReply` ("" when absent); other fields skipped."""
    at, message = 0, ""

    def varint():
        nonlocal at
        value = shift = 0
        while True:
            if at >= len(data) or shift > 63:
                raise ValueError("truncated or overlong varint")
            byte = data[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    while at < len(data):
        key = varint()
        field, wire = key >> 3, key & 7
        if wire == 0:
            varint()
        elif wire == 1:
            at += 8
        elif wire == 5:
            at += 4
        elif wire == 2:
            length = varint()
            if at + length > len(data):
                raise ValueError("truncated field")
            if field == 1:
                message = data[at : at + length].decode()
            at += length
        else:
            raise ValueError(f"unsupported wire type {wire}")
    if at > len(data):
        raise ValueError("truncated field")
    return message


def _outcome(err: grpc.GrpcError) -> Exception:
    """The task error for a call that ended without OK: UNAVAILABLE may be retried."""
    if isinstance(err, grpc.Denied):
        return Failed(str(err))
    if err.code == grpc.UNAVAILABLE:
        return Retryable(str(err))
    return Failed(str(err))


def _judge(sent: str, reply: bytes) -> None:
    try:
        echoed = decode_echo(reply)
    except ValueError as err:
        echoed = f"<undecodable: {err}>"
    if not check("echo matches", echoed == sent):
        raise Failed(f"sent {sent!r}, received {echoed!r}")


def unary(task: Task, target: str, metadata: list) -> None:
    sent = f"w{task.worker_id}-i{task.iteration}"
    try:
        response = grpc.call(target, UNARY, encode_echo(sent), metadata=metadata, timeout=TIMEOUT)
    except grpc.GrpcError as err:
        raise _outcome(err) from None
    _judge(sent, response.message)


def stream(task: Task, target: str, metadata: list, messages: int) -> None:
    try:
        with grpc.stream(target, STREAM, metadata=metadata, timeout=TIMEOUT) as call:
            for k in range(messages):
                sent = f"w{task.worker_id}-i{task.iteration}-m{k}"
                call.send(encode_echo(sent))
                reply = call.receive()
                if reply is None:
                    raise Failed(f"the call ended after {k} of {messages} echoes")
                _judge(sent, reply)
            call.close_send()
            extra = call.receive()
            if extra is not None:
                raise Failed(f"an echo nobody sent: {extra!r}")
    except grpc.GrpcError as err:
        raise _outcome(err) from None


def do_task(task: Task) -> None:
    target, mode, metadata, messages = settings()
    if mode == "unary":
        unary(task, target, metadata)
    else:
        stream(task, target, metadata, messages)
