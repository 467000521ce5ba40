"""Response models of the Open Inference Protocol (KServe v2) routes, as the protocol names them."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class ServerMetadata(_Open):
    name: str
    version: str
    extensions: list[str]


class TensorMetadata(_Open):
    name: str
    datatype: str = Field(description="BOOL, UINT8..UINT64, INT8..INT64, FP16, FP32, FP64, BF16 or BYTES.")
    shape: list[int] = Field(description="-1 for a variable dimension.")


class ModelMetadata(_Open):
    name: str
    versions: list[str]
    platform: str
    inputs: list[TensorMetadata]
    outputs: list[TensorMetadata]
    parameters: dict[str, Any] = Field(default_factory=dict)


class RepositoryModel(_Open):
    name: str
    version: str
    state: str = Field(description="READY or UNAVAILABLE.")
    reason: str = ""


class OutputTensor(_Open):
    name: str
    datatype: str
    shape: list[int]
    data: list[Any] | None = Field(None, description="Row-major values; absent when sent as binary data.")
    parameters: dict[str, Any] | None = None


class InferenceResponse(_Open):
    model_name: str
    model_version: str | None = None
    id: str | None = None
    parameters: dict[str, Any] | None = None
    outputs: list[OutputTensor]
