"""Convert raw files (JSONL, Parquet, CSV, text) into samples, quarantining bad records."""

from operators.convert.operator import ConvertOperator, ConvertParams
from operators.convert.plan import CHUNK_SCHEMA, SourceSpec, plan_chunks

__all__ = ["CHUNK_SCHEMA", "ConvertOperator", "ConvertParams", "SourceSpec", "plan_chunks"]
