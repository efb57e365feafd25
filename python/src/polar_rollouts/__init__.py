"""Read Polar rollouts (shards and results, from a directory or S3) and feed them to trainers."""

from .client import ControlApiError, ControlClient, TaskFailed
from .images import BadImageError, ImageMissingError, image_key, load_images, read_images
from .groups import TraceFilter, filter_traces, group_by, grpo_advantages, staleness
from .results import SessionResult, parse_result, read_result, read_results
from .shards import iter_shards, parse_shard_jsonl, parse_shard_parquet, read_shard, read_shard_file
from .store import DirectoryStore, S3Store, Store, open_store
from .trace import ShardFormatError, StepReward, Trace, VersionSpan

__all__ = [
    "BadImageError",
    "ControlApiError",
    "ControlClient",
    "ImageMissingError",
    "DirectoryStore",
    "S3Store",
    "SessionResult",
    "ShardFormatError",
    "StepReward",
    "Store",
    "TaskFailed",
    "Trace",
    "TraceFilter",
    "VersionSpan",
    "filter_traces",
    "group_by",
    "image_key",
    "load_images",
    "grpo_advantages",
    "iter_shards",
    "open_store",
    "parse_result",
    "parse_shard_jsonl",
    "parse_shard_parquet",
    "read_images",
    "read_result",
    "read_results",
    "read_shard",
    "read_shard_file",
    "staleness",
]
