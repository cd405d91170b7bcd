"""A small client of the SMS service in Python, on code generated from proto/ (generate.sh).

It sends a message and a batch, reads them back, lists messages, handles a field error and lists
the messages handsets sent to the account's numbers. With SMS_WEBHOOK_SECRET (the account's
`whsec_...` webhook secret) it also points the account's inbound URL at a receiver of its own,
waits for one inbound webhook, checks its signature and puts the URL back as it was.
gRPC over HTTP/2 on GRPC_PORT (docs/clients.md):

    SMS_GRPC_TARGET=127.0.0.1:8081 SMS_API_KEY=... SMS_API_SECRET=... python sms_client.py

The receiver listens on SMS_WEBHOOK_HOST (default 127.0.0.1), which the service must reach, for
at most SMS_WEBHOOK_WAIT_S seconds (default 60).
"""

import base64
import hashlib
import hmac
import json
import os
import queue
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

import grpc
from google.rpc import error_details_pb2, status_pb2

# The generated modules: generate.sh's output (SMS_PYTHON_GEN, default gen/ beside this file).
sys.path.insert(0, os.environ.get("SMS_PYTHON_GEN") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen"))

from sms.v1 import inbound_pb2, inbound_pb2_grpc, messaging_pb2, messaging_pb2_grpc, types_pb2  # noqa: E402


def error_details(error: grpc.RpcError):
    """The google.rpc details of a failed call, from the grpc-status-details-bin trailer."""
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            for detail in status.details:
                for kind in (error_details_pb2.ErrorInfo, error_details_pb2.BadRequest):
                    if detail.Is(kind.DESCRIPTOR):
                        message = kind()
                        detail.Unpack(message)
                        yield message


def verify_webhook(secret: str, headers, payload: bytes, tolerance_s: int = 300) -> bool:
    """Standard Webhooks: `webhook-signature` holds `v1,<base64 HMAC-SHA256>` (several, space
    separated, while a secret is rotated) over `<webhook-id>.<webhook-timestamp>.<payload>`, keyed
    with the base64 part of the account's `whsec_` secret. The payload is the raw body of an
    inbound webhook (a POST), the path and query of a status webhook (a GET). A timestamp more
    than `tolerance_s` away from now is refused, so a recorded request cannot be replayed later."""
    webhook_id = headers.get("webhook-id")
    timestamp = headers.get("webhook-timestamp")
    signatures = headers.get("webhook-signature")
    if not webhook_id or not signatures or not timestamp or not (timestamp.isascii() and timestamp.isdigit()):
        return False
    if abs(time.time() - int(timestamp)) > tolerance_s:
        return False
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{webhook_id}.{timestamp}.".encode() + payload
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest())
    return any(
        hmac.compare_digest(expected, signature[3:].encode())
        for signature in signatures.split(" ")
        if signature.startswith("v1,")
    )


def receive_inbound_webhook(inbound, auth, secret: str) -> None:
    """Points the account's inbound URL at a local receiver, waits for one inbound webhook whose
    signature holds (answering others 401), then puts the URL back."""
    received = queue.Queue()

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            if not verify_webhook(secret, self.headers, body):
                print("inbound webhook refused: signature invalid", flush=True)
                self.send_response(401)
                self.end_headers()
                return
            # Answer at once (any 2xx): a slow answer is retried as a failure.
            self.send_response(204)
            self.end_headers()
            received.put((self.headers["webhook-id"], json.loads(body)))

        def log_message(self, *args):
            pass

    server = HTTPServer((os.environ.get("SMS_WEBHOOK_HOST", "127.0.0.1"), 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    url = f"http://{host}:{port}/inbound"
    before = inbound.GetInboundSettings(inbound_pb2.GetInboundSettingsRequest(), metadata=[auth], timeout=10)
    inbound.UpdateInboundSettings(inbound_pb2.UpdateInboundSettingsRequest(inbound_url=url), metadata=[auth], timeout=10)
    try:
        print(f"waiting for an inbound webhook at {url}", flush=True)
        webhook_id, message = received.get(timeout=float(os.environ.get("SMS_WEBHOOK_WAIT_S", "60")))
        print(f"inbound webhook {webhook_id} verified: {message['from']} to {message['to']}: {message['text']}")
    finally:
        server.shutdown()
        inbound.UpdateInboundSettings(
            inbound_pb2.UpdateInboundSettingsRequest(inbound_url=before.settings.inbound_url),
            metadata=[auth],
            timeout=10,
        )


def main() -> None:
    credentials = f"{os.environ['SMS_API_KEY']}:{os.environ['SMS_API_SECRET']}"
    auth = ("authorization", "Basic " + base64.b64encode(credentials.encode()).decode())
    with grpc.insecure_channel(os.environ.get("SMS_GRPC_TARGET", "127.0.0.1:8081")) as channel:
        messaging = messaging_pb2_grpc.MessagingServiceStub(channel)

        # One message; the key makes a retry safe (the same answer, nothing charged twice).
        key = ("idempotency-key", f"python-example-{time.time_ns()}")
        sent = messaging.SendMessage(
            messaging_pb2.SendMessageRequest(to="+4915112345678", text="Hello from Python"),
            metadata=[auth, key],
            timeout=10,
        ).message
        print(f"sent {sent.id} from {sent.sender}, credit left {sent.credit_remaining_micros} micro-units")

        # A batch with one invalid message: accepted in part, the rejection says which field.
        batch = messaging.SendBatch(
            messaging_pb2.SendBatchRequest(
                name="python example",
                messages=[
                    messaging_pb2.BatchMessage(to="+4915112345678", text="first"),
                    messaging_pb2.BatchMessage(to="not a number", text="second"),
                ],
            ),
            metadata=[auth],
            timeout=10,
        )
        for rejected in batch.errors:
            for violation in rejected.field_violations:
                print(f"batch rejected {violation.field}: {violation.description}")
        print(f"batch {batch.batch.id} accepted {batch.batch.accepted_count}")

        read = messaging.GetMessage(messaging_pb2.GetMessageRequest(id=sent.id), metadata=[auth], timeout=10)
        print(f"read {read.message.id} status {read.message.status}")
        got = messaging.GetBatch(messaging_pb2.GetBatchRequest(id=batch.batch.id), metadata=[auth], timeout=10)
        print(f"batch {got.batch.id} active {str(got.batch.progress.is_active).lower()}")

        # Every message, newest first, two at a time.
        listed, token = 0, ""
        while True:
            page = messaging.ListMessages(
                messaging_pb2.ListMessagesRequest(page_size=2, page_token=token), metadata=[auth], timeout=10
            )
            listed += len(page.messages)
            token = page.next_page_token
            if not token:
                break
        print(f"listed {listed} messages")

        # A field error: INVALID_ARGUMENT with ErrorInfo and BadRequest details.
        try:
            messaging.SendMessage(messaging_pb2.SendMessageRequest(to="12", text="x"), metadata=[auth], timeout=10)
            raise SystemExit("expected INVALID_ARGUMENT")
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.INVALID_ARGUMENT:
                raise
            for detail in error_details(error):
                if isinstance(detail, error_details_pb2.ErrorInfo):
                    print(f"error reason {detail.reason} domain {detail.domain}")
                else:
                    for violation in detail.field_violations:
                        print(f"field error {violation.field}: {violation.description}")

        # What handsets sent to the account's numbers, newest first, two at a time.
        inbound = inbound_pb2_grpc.InboundServiceStub(channel)
        listed, token = 0, ""
        while True:
            page = inbound.ListInboundMessages(
                inbound_pb2.ListInboundMessagesRequest(page_size=2, page_token=token), metadata=[auth], timeout=10
            )
            for message in page.inbound_messages:
                word = types_pb2.OptOutType.Name(message.opt_out_type)
                print(f"inbound {message.id} from {message.sender} to {message.to} ({word}): {message.text}")
            listed += len(page.inbound_messages)
            token = page.next_page_token
            if not token:
                break
        print(f"listed {listed} inbound messages")

        if os.environ.get("SMS_WEBHOOK_SECRET"):
            receive_inbound_webhook(inbound, auth, os.environ["SMS_WEBHOOK_SECRET"])


if __name__ == "__main__":
    main()
