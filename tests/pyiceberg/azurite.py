"""The Azure Blob Storage emulator (Azurite, from npm) that the Azure warehouse tests use.

scripts/test installs and starts it and sets PANGOLIN_TEST_AZURITE_ENDPOINT (the account URL,
`http://127.0.0.1:<port>/devstoreaccount1`). Run as a script, it waits up to 30 s for the
emulator and creates the test container; exit status 1 when it cannot.
"""

import base64
import datetime
import hashlib
import hmac
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

ACCOUNT = "devstoreaccount1"
# Azurite's well-known development key (public, in Azure's documentation).
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
CONTAINER = "pangolin-test"


def account_sas(permissions: str, resource_types: str) -> str:
    """An account SAS for the blob service, valid for an hour (signed as Azure documents)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    start = (now - datetime.timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    expiry = (now + datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    version = "2022-11-02"
    to_sign = "\n".join([ACCOUNT, permissions, "b", resource_types, start, expiry, "", "", version, "", ""])
    signature = base64.b64encode(
        hmac.new(base64.b64decode(KEY), to_sign.encode(), hashlib.sha256).digest()
    ).decode()
    return urllib.parse.urlencode(
        {"sv": version, "ss": "b", "srt": resource_types, "sp": permissions, "st": start, "se": expiry, "sig": signature}
    )


def ensure_container(endpoint: str) -> bool:
    """Creates the test container when missing; False when the emulator does not answer."""
    deadline = time.monotonic() + 30
    url = f"{endpoint}/{CONTAINER}?restype=container&{account_sas('c', 'c')}"
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(urllib.request.Request(url, method="PUT", data=b""), timeout=2)
            return True
        except urllib.error.HTTPError as error:
            if error.code == 409:  # ContainerAlreadyExists
                return True
            time.sleep(0.2)
        except OSError:
            time.sleep(0.2)
    return False


if __name__ == "__main__":
    endpoint = os.environ.get("PANGOLIN_TEST_AZURITE_ENDPOINT")
    if not endpoint or not ensure_container(endpoint):
        print(f"no Azure emulator at {endpoint}", file=sys.stderr)
        sys.exit(1)
    print(f"Azure emulator at {endpoint}, container {CONTAINER}")
