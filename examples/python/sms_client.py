"""A small client of the SMS service in Python, on code generated from proto/ (generate.sh).

It sends a message and a batch, reads them back, lists messages and handles a field error.
gRPC over HTTP/2 on GRPC_PORT (docs/clients.md):

    SMS_GRPC_TARGET=127.0.0.1:8081 SMS_API_KEY=... SMS_API_SECRET=... python sms_client.py
"""

import base64
import os
import sys
import time

import grpc
from google.rpc import error_details_pb2, status_pb2

# The generated modules: generate.sh's output (SMS_PYTHON_GEN, default gen/ beside this file).
sys.path.insert(0, os.environ.get("SMS_PYTHON_GEN") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen"))

from sms.v1 import messaging_pb2, messaging_pb2_grpc  # noqa: E402


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


if __name__ == "__main__":
    main()
