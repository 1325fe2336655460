"""What one transformers reads from a checkpoint folder, as JSON on stdout: run by the transformers 4.x
interpreter in a child process (``HVA_TRANSFORMERS4_PYTHON``) and by transformers 5 here, so the two readings
compare key by key. Standalone on purpose: it imports nothing of the project (the 4.x venv does not have it).

    python tests/transformers4_probe.py FOLDER
"""

from __future__ import annotations

import json
import sys

PROBE_TEXT = "t1 <|im_start|> t2 <|im_end|> t3"
CHAT = [{"role": "user", "content": "t1"}, {"role": "assistant", "content": "t2"}]


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".strip()[:300]


def _scaling(params: object, config: object = None) -> object:
    """The scaling as the model code reads it: one type key, ``partial_rotary_factor`` apart (recorded on its
    own), and for 4.x (``config``) the ``original_max_position_embeddings`` its Phi-3 reads at the top."""
    if not isinstance(params, dict):
        return None
    scaling = {k: v for k, v in params.items() if k not in ("type", "rope_type", "rope_theta", "partial_rotary_factor")}
    scaling["rope_type"] = params.get("rope_type", params.get("type", "default"))
    if scaling["rope_type"] == "default":
        return None
    top = getattr(config, "original_max_position_embeddings", None) if config is not None else None
    if top is not None and "original_max_position_embeddings" not in scaling:
        scaling["original_max_position_embeddings"] = top
    return scaling


def _partial(config: object, params: object) -> object:
    """``partial_rotary_factor``: 5 reads it in ``rope_parameters``, 4 as a config attribute."""
    if isinstance(params, dict) and "partial_rotary_factor" in params:
        return params["partial_rotary_factor"]
    return getattr(config, "partial_rotary_factor", None)


def _rope(config: object, major: int) -> dict[str, object]:
    """rope_theta, the scaling and a sliding-window layer's theta as the model code reads them: 5 reads
    ``rope_parameters`` (flat, or one entry per layer type); 4 reads the top-level ``rope_theta`` /
    ``rope_scaling`` / ``rope_local_base_freq`` (a ``rope_parameters`` key is only an unused attribute there)."""
    params = getattr(config, "rope_parameters", None) if major >= 5 else None
    if isinstance(params, dict) and isinstance(params.get("full_attention"), dict):
        local = params.get("sliding_attention")
        return {"rope_theta": params["full_attention"].get("rope_theta"), "rope_scaling": _scaling(params["full_attention"]),
                "local_rope_theta": local.get("rope_theta") if isinstance(local, dict) else None,
                "partial_rotary_factor": _partial(config, params["full_attention"])}
    if isinstance(params, dict) and "rope_theta" in params:
        return {"rope_theta": params.get("rope_theta"), "rope_scaling": _scaling(params), "local_rope_theta": None,
                "partial_rotary_factor": _partial(config, params)}
    return {"rope_theta": getattr(config, "rope_theta", None),
            "rope_scaling": _scaling(getattr(config, "rope_scaling", None), config),
            "local_rope_theta": getattr(config, "rope_local_base_freq", None),
            "partial_rotary_factor": _partial(config, None)}


def probe(folder: str) -> dict[str, object]:
    import transformers
    from transformers import AutoConfig, AutoTokenizer

    transformers.logging.set_verbosity_error()
    out: dict[str, object] = {"transformers": transformers.__version__}
    try:
        import tokenizers

        out["tokenizers"] = tokenizers.__version__
    except ImportError:
        pass
    try:
        config = AutoConfig.from_pretrained(folder)
        out["config"] = {"class": type(config).__name__, **_rope(config, int(transformers.__version__.split(".")[0]))}
    except Exception as exc:  # noqa: BLE001 - the verdict is the exception
        out["config_error"] = _error(exc)
    try:
        tok = AutoTokenizer.from_pretrained(folder)
    except Exception as exc:  # noqa: BLE001
        out["tokenizer_error"] = _error(exc)
        return out
    reading: dict[str, object] = {
        "len": len(tok), "bos": tok.bos_token, "eos": tok.eos_token, "unk": tok.unk_token,
        "special": sorted(str(s) for s in tok.all_special_tokens),
        "ids": [int(i) for i in tok.encode(PROBE_TEXT, add_special_tokens=False)],
        "template": tok.chat_template,
    }
    try:
        reading["chat"] = tok.apply_chat_template(CHAT, tokenize=False)
    except Exception as exc:  # noqa: BLE001
        reading["chat_error"] = _error(exc)[:120]
    out["tokenizer"] = reading
    return out


if __name__ == "__main__":
    print(json.dumps(probe(sys.argv[1]), sort_keys=True, default=str))
