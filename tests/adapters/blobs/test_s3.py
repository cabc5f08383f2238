"""What only the S3 store has: its bucket (created only when asked), its key prefix, and that a second
deployment under another prefix in the same bucket is not touched by a delete. Against moto's S3 server."""

from __future__ import annotations

import asyncio
import uuid

import boto3
import pytest
from botocore.exceptions import ClientError

from knora.adapters.blobs.s3 import S3BlobStore

pytestmark = pytest.mark.integration


def _store(endpoint: str, bucket: str, **kw: object) -> S3BlobStore:
    return S3BlobStore(bucket=bucket, endpoint_url=endpoint, region="us-east-1", access_key_id="test",
                       secret_access_key="test", **kw)  # type: ignore[arg-type]


def _client(endpoint: str) -> object:
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="test",
                        aws_secret_access_key="test")


class TestS3Store:
    async def test_a_missing_bucket_is_not_created_unless_asked(self, s3_endpoint: str) -> None:
        bucket = f"knora-{uuid.uuid4().hex[:12]}"
        store = _store(s3_endpoint, bucket)
        with pytest.raises(ClientError):
            await store.put("1/kb/doc/a.md", b"x")
        client = _client(s3_endpoint)
        assert bucket not in [b["Name"] for b in client.list_buckets()["Buckets"]]  # type: ignore[attr-defined]
        created = _store(s3_endpoint, bucket, create_bucket=True)
        await created.put("1/kb/doc/a.md", b"x")
        assert await store.get("1/kb/doc/a.md") == b"x"  # an existing bucket is used as it is
        await store.close()
        await created.close()

    async def test_prefixes_keep_deployments_apart(self, s3_endpoint: str) -> None:
        bucket = f"knora-{uuid.uuid4().hex[:12]}"
        prod = _store(s3_endpoint, bucket, prefix="prod/", create_bucket=True)
        test = _store(s3_endpoint, bucket, prefix="/test", create_bucket=True)
        await prod.put("1/kb/doc/a.md", b"prod")
        await test.put("1/kb/doc/a.md", b"test")
        client = _client(s3_endpoint)
        listed = client.list_objects_v2(Bucket=bucket)  # type: ignore[attr-defined]
        names = sorted(o["Key"] for o in listed["Contents"])
        assert names == ["prod/1/kb/doc/a.md", "test/1/kb/doc/a.md"]
        assert await prod.keys("1/kb") == ["1/kb/doc/a.md"]  # without the deployment's prefix
        await test.delete_prefix("1/kb")
        assert not await test.exists("1/kb/doc/a.md")
        assert await prod.get("1/kb/doc/a.md") == b"prod"
        await prod.close()
        await test.close()

    async def test_delete_prefix_past_one_delete_batch(self, s3_endpoint: str) -> None:
        store = _store(s3_endpoint, f"knora-{uuid.uuid4().hex[:12]}", create_bucket=True)
        keys = [f"1/kb/doc/images/p{i}.png" for i in range(1005)]  # DeleteObjects takes 1000 at most
        for start in range(0, len(keys), 100):
            await asyncio.gather(*(store.put(k, b"i") for k in keys[start:start + 100]))
        await store.put("1/kb/other/a.md", b"kept")
        assert await store.keys("1/kb/doc") == sorted(keys)  # listed past one page of 1,000
        await store.delete_prefix("1/kb/doc")
        assert not await store.exists(keys[0])
        assert not await store.exists(keys[-1])
        assert await store.get("1/kb/other/a.md") == b"kept"
        await store.close()
