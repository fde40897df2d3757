"""The S3 server with STS that the tests of delegated access use: SeaweedFS (`weed mini`, from
the virtualenv), which enforces signatures, session policies and expiry, unlike moto.

scripts/test starts it with the identities of seaweedfs/s3.json (the catalog's static key) and
the role of seaweedfs/iam.json (which that key may assume), and sets PANGOLIN_TEST_STS_ENDPOINT.

Run as a script with the `weed` binary and a data directory, it prints the endpoint and the
`weed mini` command line on fresh ports; with `--wait`, it waits up to 30 s for the server to
answer a signed request (exit status 1 when it does not); with `--check-expired FILE`, it
waits for the vended credential the tests recorded there to expire and checks that the server
refuses it.
"""

import json
import os
import socket
import sys
import time
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))


@dataclass(frozen=True)
class Sts:
    endpoint: str
    bucket: str
    region: str
    access_key_id: str
    secret_access_key: str
    role_arn: str

    def client(self, access_key_id=None, secret_access_key=None, session_token=None):
        """A boto3 S3 client on the server: with the catalog's key, or with the given one."""
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=self.region,
            aws_access_key_id=access_key_id or self.access_key_id,
            aws_secret_access_key=secret_access_key or self.secret_access_key,
            aws_session_token=session_token,
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
        )


def settings() -> Sts | None:
    """The server, or None when PANGOLIN_TEST_STS_ENDPOINT is not set."""
    endpoint = os.environ.get("PANGOLIN_TEST_STS_ENDPOINT")
    if not endpoint:
        return None
    with open(os.path.join(HERE, "seaweedfs", "s3.json")) as f:
        key = json.load(f)["identities"][0]["credentials"][0]
    with open(os.path.join(HERE, "seaweedfs", "iam.json")) as f:
        role = json.load(f)["roles"][0]["roleArn"]
    return Sts(
        endpoint=endpoint,
        bucket="pangolin-vend",
        region="us-east-1",
        access_key_id=key["accessKey"],
        secret_access_key=key["secretKey"],
        role_arn=role,
    )


def free_ports(count: int) -> list[int]:
    """`count` loopback ports that are free, each with the port 10000 above it free too (where
    SeaweedFS puts a component's gRPC)."""

    def free(port):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return True
            except OSError:
                return False

    ports = []
    candidate = 20000 + os.getpid() % 5000
    while len(ports) < count:
        candidate += 7
        if candidate > 29999:
            candidate = 20000
        if candidate not in ports and free(candidate) and free(candidate + 10000):
            ports.append(candidate)
    return ports


def command(weed: str, data_dir: str) -> tuple[list[str], str]:
    """The `weed mini` command line on fresh ports, and the S3 endpoint it will serve."""
    s3, master, volume, filer, admin = free_ports(5)
    config = os.path.join(HERE, "seaweedfs")
    return [
        weed, "mini", f"-dir={data_dir}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
        f"-s3.port={s3}", f"-master.port={master}", f"-volume.port={volume}",
        f"-filer.port={filer}", f"-admin.port={admin}", f"-admin.port.grpc={admin + 10000}",
        "-s3.port.iceberg=0", "-s3.port.lance=0", "-webdav=false", "-admin.ui=false",
        "-master.telemetry=false",
        f"-s3.localSocket={data_dir}/s3.sock", f"-filer.localSocket={data_dir}/filer.sock",
        f"-s3.config={config}/s3.json", f"-s3.iam.config={config}/iam.json",
        "-bucket=pangolin-vend",
    ], f"http://127.0.0.1:{s3}"


def wait(sts: Sts) -> bool:
    """Whether the server answers a signed request for the bucket within 30 s. A health check
    is not enough: the bucket appears about a second after the server says it is healthy."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            sts.client().head_bucket(Bucket=sts.bucket)
            return True
        except Exception:  # noqa: BLE001 - not up yet, whatever the error
            time.sleep(0.2)
    return False


def check_expired(record_path: str) -> bool:
    """Waits until the credential recorded in `record_path` (by test_delegation.py) has
    expired, then says whether the server refuses it. Nothing to check without a record."""
    server = settings()
    if server is None or not os.path.exists(record_path):
        print("expiry: no vended credential was recorded; nothing to check")
        return True
    with open(record_path) as f:
        record = json.load(f)
    wait_s = record["expires-at-ms"] / 1000 + 30 - time.time()
    if wait_s > 0:
        print(f"expiry: waiting {wait_s:.0f} s for the vended credential to expire")
        time.sleep(wait_s)
    client = server.client(
        record["access-key-id"], record["secret-access-key"], record["session-token"]
    )
    try:
        client.get_object(Bucket=server.bucket, Key=record["key"])
    except Exception as refused:  # noqa: BLE001 - botocore's ClientError, whatever its code
        print(f"expiry: the expired credential is refused ({refused})")
        return True
    print("expiry: the vended credential still works after its expiry", file=sys.stderr)
    return False


if __name__ == "__main__":
    if sys.argv[1:2] == ["--check-expired"]:
        sys.exit(0 if check_expired(sys.argv[2]) else 1)
    if sys.argv[1:2] == ["--wait"]:
        server = settings()
        if server is None or not wait(server):
            print(f"no S3 server with STS at {server and server.endpoint}", file=sys.stderr)
            sys.exit(1)
        print(f"S3 server with STS at {server.endpoint}, bucket {server.bucket}")
    else:
        argv, endpoint = command(sys.argv[1], sys.argv[2])
        print(endpoint)
        print("\n".join(argv))
