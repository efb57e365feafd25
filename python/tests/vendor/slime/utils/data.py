# Vendored from THUDM/slime at commit 624b824a898ab0ec1fcb4d373004c7f3852bf515, file slime/utils/data.py.
# License: Apache-2.0 (python/tests/vendor/slime/LICENSE). Refreshed by
# scripts/vendor-trainer-sources.py;
# do not edit by hand.
# Copied unchanged: get_source (lines 332-338).
# The preamble before the copied code is ours.
from slime.utils.types import Sample


def get_source(sample: Sample) -> str:
    metadata = getattr(sample, "metadata", None) or {}
    if getattr(sample, "source", None):
        return sample.source
    if metadata.get("source_name"):
        return metadata["source_name"]
    return "unknown"
