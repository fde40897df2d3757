"""The S3 server the S3 tests use: its settings from the environment, and its bucket.

PANGOLIN_TEST_S3_ENDPOINT names the server (scripts/test starts moto and sets it);
PANGOLIN_TEST_S3_BUCKET (default `pangolin-test`), PANGOLIN_TEST_S3_REGION (`us-east-1`),
PANGOLIN_TEST_S3_ACCESS_KEY_ID and PANGOLIN_TEST_S3_SECRET_ACCESS_KEY the rest (moto takes any
keys; the default secret is distinctive so that a test can look for it in logs).

Run as a script (scripts/test does), it waits up to 30 s for the server and creates the bucket
if it is missing; exit status 1 when the server cannot be reached.
"""

import os
import sys
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class S3:
    endpoint: str
    bucket: str
    region: str
    access_key_id: str
    secret_access_key: str

    def client(self):
        """A boto3 client on the test server (path-style addressing, no retries)."""
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=self.region,
            aws_access_key_id=self.access_key_id,
            aws_secret_access_key=self.secret_access_key,
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
        )

    def keys(self, prefix: str) -> list[str]:
        """Every object key under `prefix` in the bucket."""
        pages = self.client().get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=prefix
        )
        return [o["Key"] for page in pages for o in page.get("Contents", [])]


def settings() -> S3 | None:
    """The test server, or None when PANGOLIN_TEST_S3_ENDPOINT is not set."""
    endpoint = os.environ.get("PANGOLIN_TEST_S3_ENDPOINT")
    if not endpoint:
        return None
    env = lambda name, default: os.environ.get(name) or default  # noqa: E731
    return S3(
        endpoint=endpoint,
        bucket=env("PANGOLIN_TEST_S3_BUCKET", "pangolin-test"),
        region=env("PANGOLIN_TEST_S3_REGION", "us-east-1"),
        access_key_id=env("PANGOLIN_TEST_S3_ACCESS_KEY_ID", "pangolin-test-key"),
        secret_access_key=env("PANGOLIN_TEST_S3_SECRET_ACCESS_KEY", "pangolin-test-secret-5f3a9c"),
    )


def ensure_bucket(s3: S3, timeout: float = 30) -> None:
    """Waits for the server to answer, then creates the bucket unless it exists."""
    from botocore.exceptions import ClientError, EndpointConnectionError

    client = s3.client()
    deadline = time.monotonic() + timeout
    while True:
        try:
            client.head_bucket(Bucket=s3.bucket)
            return
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") not in ("404", "NoSuchBucket"):
                raise
            where = {} if s3.region == "us-east-1" else {"LocationConstraint": s3.region}
            client.create_bucket(Bucket=s3.bucket, **({"CreateBucketConfiguration": where} if where else {}))
            return
        except EndpointConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


if __name__ == "__main__":
    s3 = settings()
    if s3 is None:
        sys.exit("PANGOLIN_TEST_S3_ENDPOINT is not set")
    try:
        ensure_bucket(s3)
    except Exception as e:  # noqa: BLE001 - any failure means "no usable server"
        sys.exit(f"the S3 server at {s3.endpoint} is not usable: {e}")
    print(f"S3 server at {s3.endpoint}, bucket {s3.bucket}")
