"""One home for the numpy-name -> KServe v2 datatype table: `neural.signature.V2_DATATYPES` was
repeated as `api.kserve_codec._NAME_TO_V2` (with one entry more, "object"), because the API may not
import neural. The codec now reads the runtime's table through `workbench.datatypes`; the layering
contracts (lint-imports) stay kept (tests/test_layering.py)."""

from __future__ import annotations

import numpy as np

import api.kserve_codec as codec
import workbench.datatypes
from neural.signature import V2_DATATYPES, dtype_label


def test_the_codec_uses_the_runtime_table():
    assert not hasattr(codec, "_NAME_TO_V2")
    assert workbench.datatypes.V2_DATATYPES is V2_DATATYPES
    for name, v2 in V2_DATATYPES.items():
        assert codec.v2_datatype(name) == v2
        assert v2 in codec.V2_DTYPES  # every datatype named can be decoded
    assert codec.v2_datatype("object") == "BYTES" == V2_DATATYPES["object"]
    assert dtype_label(np.dtype(object)) == "BYTES (object)"
    assert dtype_label(np.dtype("float32")) == "FP32 (float32)"
