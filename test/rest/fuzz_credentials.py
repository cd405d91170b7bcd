# Schemathesis hooks for test/rest/openapi-fuzz.test.ts: a generated string credential is replaced
# by a real account's, so generated requests get past authentication and reach the API's rules.
# Credentials left out, or generated with a wrong type, stay as generated.
import os

import schemathesis

CREDENTIALS = {"apiKey": os.environ["FUZZ_API_KEY"], "apiSecret": os.environ["FUZZ_API_SECRET"]}


def _with_credentials(values):
    if isinstance(values, dict):
        for name, real in CREDENTIALS.items():
            if isinstance(values.get(name), str):
                values[name] = real
    return values


@schemathesis.hook
def map_body(ctx, body):
    return _with_credentials(body)


@schemathesis.hook
def map_query(ctx, query):
    return _with_credentials(query)
