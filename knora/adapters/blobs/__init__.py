"""Blob stores behind knora.ports.blobs.BlobStore."""
