"""Uploaded originals in an S3-compatible object store (``KNORA_BLOB_STORE=s3``): AWS S3, MinIO, Ceph RGW,
SeaweedFS, Garage, R2 … — whatever speaks the S3 protocol at ``KNORA_S3_ENDPOINT_URL``.

Through boto3 (the maintained AWS SDK; optional extra ``s3``). Its client is blocking and thread-safe, so each
call runs in a worker thread (``asyncio.to_thread``), never on the event loop. Objects are written with one
``PutObject`` (atomic: a reader sees the old object or the new one, never part of one) under
``KNORA_S3_PREFIX``; the bucket is created only when ``KNORA_S3_CREATE_BUCKET`` asks for it, and checked
once, on first use, otherwise (a wrong name or key then fails with S3's own message).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from knora.adapters.blobs.keys import canonical_key

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

    from knora.settings import Settings

T = TypeVar("T")
_MISSING = {"404", "NoSuchKey", "NotFound"}
_DELETE_BATCH = 1000  # DeleteObjects takes at most this many keys


class S3BlobStore:
    def __init__(self, *, bucket: str, endpoint_url: str | None = None, region: str | None = None,
                 access_key_id: str | None = None, secret_access_key: str | None = None, prefix: str = "",
                 create_bucket: bool = False, max_connections: int = 16) -> None:
        try:
            import boto3
            from botocore.config import Config
        except ImportError as exc:  # the optional extra
            raise RuntimeError("KNORA_BLOB_STORE=s3 needs boto3: pip install 'knora[s3]' "
                               "(or pip install boto3)") from exc

        if not bucket:
            raise ValueError("KNORA_BLOB_STORE=s3 needs KNORA_S3_BUCKET")
        self._bucket = bucket
        self._prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self._create = create_bucket
        self._client: Any = boto3.session.Session().client(
            "s3", endpoint_url=endpoint_url or None, region_name=region or None,
            aws_access_key_id=access_key_id or None, aws_secret_access_key=secret_access_key or None,
            config=Config(max_pool_connections=max_connections,
                          retries={"max_attempts": 5, "mode": "standard"},
                          s3={"addressing_style": "path"} if endpoint_url else None))
        self._ready = False
        self._ready_lock = threading.Lock()

    def _name(self, key: str) -> str:
        return self._prefix + canonical_key(key)

    def _ensure_bucket(self) -> None:
        """Once: the bucket exists (created first when asked to). In the worker thread, like every call."""
        if self._ready:
            return
        with self._ready_lock:
            if self._ready:
                return
            from botocore.exceptions import ClientError

            if self._create:
                try:
                    self._client.create_bucket(Bucket=self._bucket)
                except ClientError as exc:
                    if _code(exc) not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                        raise
            else:
                self._client.head_bucket(Bucket=self._bucket)
            self._ready = True

    async def _call(self, fn: Callable[[], T]) -> T:
        def _run() -> T:
            self._ensure_bucket()
            return fn()

        return await asyncio.to_thread(_run)

    async def put(self, key: str, data: bytes) -> str:
        name = self._name(key)
        await self._call(lambda: self._client.put_object(Bucket=self._bucket, Key=name, Body=data))
        return key

    async def get(self, key: str) -> bytes:
        from botocore.exceptions import ClientError

        name = self._name(key)

        def _get() -> bytes:
            try:
                body = self._client.get_object(Bucket=self._bucket, Key=name)["Body"]
            except ClientError as exc:
                if _code(exc) in _MISSING:
                    raise KeyError(key) from exc
                raise
            try:
                data: bytes = body.read()
            finally:
                body.close()
            return data

        return await self._call(_get)

    async def exists(self, key: str) -> bool:
        from botocore.exceptions import ClientError

        name = self._name(key)

        def _head() -> bool:
            try:
                self._client.head_object(Bucket=self._bucket, Key=name)
            except ClientError as exc:
                if _code(exc) in _MISSING:
                    return False
                raise
            return True

        return await self._call(_head)

    async def delete(self, key: str) -> None:
        name = self._name(key)
        await self._call(lambda: self._client.delete_object(Bucket=self._bucket, Key=name))

    async def delete_prefix(self, prefix: str) -> None:
        folder = self._name(prefix) + "/"

        def _delete_all() -> None:
            pages = self._client.get_paginator("list_objects_v2").paginate(Bucket=self._bucket, Prefix=folder)
            batch: list[dict[str, str]] = []
            for page in pages:
                for obj in page.get("Contents", []):
                    batch.append({"Key": obj["Key"]})
                    if len(batch) == _DELETE_BATCH:
                        self._delete_batch(batch)
                        batch = []
            if batch:
                self._delete_batch(batch)

        await self._call(_delete_all)

    async def keys(self, prefix: str) -> list[str]:
        folder = self._name(prefix) + "/"

        def _list() -> list[str]:
            pages = self._client.get_paginator("list_objects_v2").paginate(Bucket=self._bucket, Prefix=folder)
            return sorted(str(obj["Key"])[len(self._prefix):] for page in pages
                          for obj in page.get("Contents", []))

        return await self._call(_list)

    def _delete_batch(self, batch: list[dict[str, str]]) -> None:
        out = self._client.delete_objects(Bucket=self._bucket, Delete={"Objects": batch, "Quiet": True})
        errors = out.get("Errors") or []
        if errors:
            raise RuntimeError(f"S3 refused to delete {len(errors)} object(s): {errors[0]}")

    async def close(self) -> None:
        await asyncio.to_thread(self._client.close)


def _code(exc: Any) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def build(settings: Settings, engine: AsyncEngine) -> S3BlobStore:
    del engine  # the metadata store's: not this store's business
    s = settings
    secret = s.s3_secret_access_key.get_secret_value() if s.s3_secret_access_key else None
    return S3BlobStore(bucket=s.s3_bucket, endpoint_url=s.s3_endpoint_url, region=s.s3_region,
                       access_key_id=s.s3_access_key_id, secret_access_key=secret, prefix=s.s3_prefix,
                       create_bucket=s.s3_create_bucket)
