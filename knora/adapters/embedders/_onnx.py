"""What the ONNX Runtime embedder backends share: the export cache and the inference session.

A backend supplies a function that writes its graph to a path; :func:`cached_session` quantises that graph
(``quantize_dynamic``, MatMul weights only, per channel, int8 — quantising the whole model is too lossy;
``quantize=False`` for a graph that carries its own quantised weights) into ``<cache_dir>/<name>`` once and
opens it. The file is written to a temporary path in the same folder and
renamed into place, so a concurrent process sees either no file or a complete one; a cached file that ONNX
Runtime cannot open (truncated, corrupt) is rebuilt. The cache name carries a key (weights, versions, graph
version), so a changed model or exporter gets a fresh file.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

Exporter = Callable[[Path], None]  # writes the fp32 ONNX graph to the given path


def available() -> bool:
    """Whether onnxruntime and its quantiser can be imported."""
    try:
        import onnxruntime  # noqa: F401
        from onnxruntime.quantization import quantize_dynamic  # noqa: F401
    except ImportError:
        return False
    return True


def cache_name(stem: str, *key_parts: object) -> str:
    """``<stem>-<12 hex of the key>.onnx``; ONNX Runtime's version is always part of the key."""
    import onnxruntime

    key = ":".join(str(p) for p in (*key_parts, onnxruntime.__version__))
    return f"{stem}-{hashlib.sha256(key.encode()).hexdigest()[:12]}.onnx"


def quantize_matmuls(fp32: Path, int8: Path) -> None:
    """int8 weights for the MatMuls with a constant weight (per output channel); the rest stays fp32."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()
    root.addFilter(_quiet_quantiser)  # it advises "pre-processing" on the root logger at every call
    try:
        quantize_dynamic(str(fp32), str(int8), op_types_to_quantize=["MatMul"], per_channel=True,
                         weight_type=QuantType.QInt8)
    finally:
        root.removeFilter(_quiet_quantiser)


def _quiet_quantiser(record: logging.LogRecord) -> bool:
    return "onnxruntime" not in record.pathname or record.levelno > logging.WARNING


def build_model(target: Path, export: Exporter, *, quantize: bool = True) -> Path:
    """Export (then, with ``quantize``, quantise the MatMul weights to int8) and move the result to ``target``
    atomically. ``quantize=False``: the exporter writes the final graph (already quantised weights)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        exported = Path(tmp) / "model-export.onnx"
        export(exported)
        final = exported
        if quantize:
            final = Path(tmp) / "model-int8.onnx"
            quantize_matmuls(exported, final)
        os.replace(final, target)
    return target


def ensure_model(target: Path, export: Exporter, *, quantize: bool = True) -> Path:
    """``target`` if it exists, else built (no validation: :func:`cached_session` checks it opens)."""
    return target if target.is_file() else build_model(target, export, quantize=quantize)


def open_session(path: Path, threads: int | None) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    if threads:
        options.intra_op_num_threads = int(threads)
        options.inter_op_num_threads = 1
    options.log_severity_level = 3
    # Idle worker threads sleep instead of spinning: the cores are shared with the API and the database.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


def cached_session(target: Path, export: Exporter, threads: int | None, *, quantize: bool = True) -> Any:
    """An inference session on the cached model at ``target``, building it if missing or unreadable."""
    path = ensure_model(target, export, quantize=quantize)
    try:
        return open_session(path, threads)
    except Exception as exc:  # onnxruntime raises its own exception types for an unreadable model
        log.warning("cached ONNX model %s cannot be loaded (%s); rebuilding it", path, exc)
        build_model(target, export, quantize=quantize)
        return open_session(target, threads)
