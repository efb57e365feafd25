#!/usr/bin/env python3
"""Refreshes python/tests/vendor/: the functions of slime and NeMo RL the trainer tests run.

Neither trainer installs here (slime needs Megatron and SGLang, NeMo RL CUDA builds of its
backends), and their modules import those at the top. So each vendored module holds the named
functions, classes and methods copied line for line from one file at a pinned commit (found by
the Python parser, never edited), after a preamble of ours: the imports they use and stand-ins
for the single-process, text-only values of the heavy modules (e.g. a context-parallel size of 1).
The header of each file names the commit, the source file and what was copied.

Usage: python3 scripts/vendor-trainer-sources.py --slime DIR --nemo-rl DIR
  DIR: a git clone of THUDM/slime or NVIDIA-NeMo/RL holding the pinned commit below; after
  moving a pin, run the trainer tests (python/tests/test_adapter_slime.py, test_adapter_nemo_rl.py).
"""

from __future__ import annotations

import argparse
import ast
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENDOR = ROOT / "python" / "tests" / "vendor"
PINS = {
    "slime": ("THUDM/slime", "624b824a898ab0ec1fcb4d373004c7f3852bf515"),
    "nemo_rl": ("NVIDIA-NeMo/RL", "7ea279abfbeb698b092856d0dab61e7cf39bc909"),
}


@dataclass(frozen=True)
class Module:
    repo: str  # a key of PINS
    source: str  # path in the repository
    names: tuple[str, ...] = ()  # "func", "Class" or "Class.method"; empty: the whole file
    preamble: str = ""  # ours: imports and stand-ins the copied code needs
    wrap_class: str | None = None  # methods are copied under this class header (ours)


SLIME_RUNS = "slime.ray.rollout.RolloutManager"
MODULES = [
    Module("slime", "slime/utils/types.py"),
    Module(
        "slime",
        "slime/utils/misc.py",
        ("decode_int32_meta_array", "load_function"),
        "import importlib\nfrom collections.abc import Iterable\nfrom functools import cache\nfrom typing import Any\n\nimport torch\n",
    ),
    Module("slime", "slime/utils/data.py", ("get_source",), "from slime.utils.types import Sample\n"),
    Module("slime", "slime/utils/ppo_utils.py", ("get_grpo_returns",), "import torch\n"),
    Module(
        "slime",
        "slime/backends/megatron_utils/cp_utils.py",
        ("get_sum_of_sample_mean",),
        "from collections.abc import Callable\n\nimport torch\n\n"
        "# Stand-in: one GPU, no context parallelism (get_context_parallel_world_size() == 1).\n"
        "from megatron.core import mpu\n",
    ),
    Module(
        "slime",
        "slime/ray/rollout.py",
        ("RolloutManager._post_process_rewards", "RolloutManager._convert_samples_to_train_data"),
        "import torch\n\nfrom slime.utils.data import get_source\nfrom slime.utils.misc import load_function\n"
        "from slime.utils.types import Sample\n",
        wrap_class=(
            "class RolloutManager:\n"
            "    # Ours: the part of RolloutManager.__init__ that sets what these methods read.\n"
            "    def __init__(self, args):\n"
            "        self.args = args\n"
            "        self.custom_reward_post_process_func = None\n"
            "        if self.args.custom_reward_post_process_path is not None:\n"
            "            self.custom_reward_post_process_func = load_function(self.args.custom_reward_post_process_path)\n"
            "        self.custom_convert_samples_to_train_data_func = None\n"
        ),
    ),
    Module(
        "nemo_rl",
        "nemo_rl/data/llm_message_utils.py",
        (
            "_validated_packed_values",
            "message_log_to_flat_messages",
            "_pad_tensor",
            "_validate_tensor_consistency",
            "batched_message_log_to_flat_message",
        ),
        "from typing import Any, Optional, Union, cast\n\nimport torch\nfrom torch import Tensor\n\n"
        "# Stand-ins for text-only batches: no message carries a PackedTensor (multimodal data), and\n"
        "# BatchedDataDict is a dict of batched values.\n"
        "FlatMessagesType = dict\nLLMMessageLogType = list\n\n\n"
        "class PackedTensor:\n    pass\n\n\n"
        "class BatchedDataDict(dict):\n    def __class_getitem__(cls, item):\n        return cls\n",
    ),
    Module(
        "nemo_rl",
        "nemo_rl/algorithms/utils.py",
        ("calculate_baseline_and_std_per_prompt",),
        "import torch\n",
    ),
    Module(
        "nemo_rl",
        "nemo_rl/algorithms/advantage_estimator.py",
        ("AdvEstimatorConfig", "GRPOAdvantageEstimator"),
        "import torch\nfrom pydantic import BaseModel\n\n"
        "from nemo_rl.algorithms.utils import calculate_baseline_and_std_per_prompt\n\n"
        "ClippedPGLossConfig = dict\n",
    ),
    Module(
        "nemo_rl",
        "nemo_rl/algorithms/grpo.py",
        ("extract_initial_prompt_messages", "add_grpo_token_loss_masks_and_generation_logprobs"),
        "from typing import cast\n\nimport torch\n\nLLMMessageLogType = list\nVLMMessageLogType = list\n\n\n"
        "# Stand-in: text-only logs carry no MoE routed experts, so there is nothing to backfill.\n"
        "def backfill_missing_routed_experts(message_logs):\n    return None\n",
    ),
]


def extract(text: str, names: tuple[str, ...]) -> list[tuple[str, int, int, str]]:
    """(name, first line, last line, exact text) of each named definition, decorators included."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    found = []
    for name in names:
        cls, _, member = name.rpartition(".")
        scope: list[ast.stmt] = tree.body
        if cls:
            scope = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls).body
        node = next(
            n
            for n in scope
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == member
        )
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        assert node.end_lineno is not None
        found.append((name, first, node.end_lineno, "".join(lines[first - 1 : node.end_lineno])))
    return found


def render(module: Module, text: str) -> str:
    repo, commit = PINS[module.repo]
    head = [
        f"# Vendored from {repo} at commit {commit}, file {module.source}.",
        f"# License: Apache-2.0 (python/tests/vendor/{module.repo}/LICENSE). Refreshed by",
        "# scripts/vendor-trainer-sources.py;",
        "# do not edit by hand.",
    ]
    if not module.names:
        head.append("# The whole file, unchanged.")
        return "\n".join(head) + "\n" + text
    parts = extract(text, module.names)
    head.append("# Copied unchanged: " + ", ".join(f"{n} (lines {a}-{b})" for n, a, b, _ in parts) + ".")
    head.append("# The preamble before the copied code is ours.")
    body = "\n".join(head) + "\n" + module.preamble + "\n\n"
    if module.wrap_class:
        body += module.wrap_class + "\n"
    return body + "\n".join(code for *_, code in parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--slime", required=True, type=Path, help="a git clone of THUDM/slime")
    parser.add_argument("--nemo-rl", required=True, type=Path, help="a git clone of NVIDIA-NeMo/RL")
    args = parser.parse_args()
    clones = {"slime": args.slime, "nemo_rl": args.nemo_rl}

    def show(repo: str, path: str) -> str:
        commit = PINS[repo][1]
        return subprocess.run(
            ["git", "-C", str(clones[repo]), "show", f"{commit}:{path}"], check=True, capture_output=True, text=True
        ).stdout

    for module in MODULES:
        out = VENDOR / module.source
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(render(module, show(module.repo, module.source)))
    for repo in PINS:
        (VENDOR / repo / "LICENSE").write_text(show(repo, "LICENSE"))
        for package in {Path(m.source).parent for m in MODULES if m.repo == repo}:
            for level in [package, *package.parents][:-1]:
                (VENDOR / level / "__init__.py").touch()
    (VENDOR / "megatron" / "core").mkdir(parents=True, exist_ok=True)
    (VENDOR / "megatron" / "__init__.py").touch()
    (VENDOR / "megatron" / "core" / "__init__.py").touch()
    (VENDOR / "megatron" / "core" / "mpu.py").write_text(
        "# Ours, not Megatron's: the one value slime's get_sum_of_sample_mean reads, for one GPU\n"
        "# without context parallelism.\n\n\ndef get_context_parallel_world_size() -> int:\n    return 1\n"
    )


if __name__ == "__main__":
    main()
