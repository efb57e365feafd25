# Vendored from THUDM/slime at commit 624b824a898ab0ec1fcb4d373004c7f3852bf515, file slime/utils/misc.py.
# License: Apache-2.0 (python/tests/vendor/slime/LICENSE). Refreshed by
# scripts/vendor-trainer-sources.py;
# do not edit by hand.
# Copied unchanged: decode_int32_meta_array (lines 13-35), load_function (lines 38-47).
# The preamble before the copied code is ours.
import importlib
from collections.abc import Iterable
from functools import cache
from typing import Any

import torch


def decode_int32_meta_array(meta_info: dict[str, Any], keys: str | Iterable[str]) -> torch.Tensor | None:
    if isinstance(keys, str):
        keys = (keys,)
    for key in keys:
        if key in meta_info:
            value = meta_info[key]
            break
    else:
        return None

    if value is None:
        return None
    if isinstance(value, str):
        import pybase64

        value = pybase64.b64decode(value.encode("ascii"))
    if isinstance(value, bytes | bytearray | memoryview):
        return torch.frombuffer(bytearray(value), dtype=torch.int32)
    if torch.is_tensor(value):
        return value.detach().to(device="cpu", dtype=torch.int32).reshape(-1)
    if hasattr(value, "flags") and not value.flags.writeable:
        value = value.copy()
    return torch.as_tensor(value, dtype=torch.int32).reshape(-1)

@cache
def load_function(path):
    """
    Load a function from a module.
    :param path: The path to the function, e.g. "module.submodule.function".
    :return: The function object.
    """
    module_path, _, attr = path.rpartition(".")
    module = importlib.import_module(module_path)
    return getattr(module, attr)
