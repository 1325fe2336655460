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


def _rope(config: object, major: int) -> dict[str, object]:
    """rope_theta and the scaling the model code reads: 5 reads ``rope_parameters``; 4 reads the top-level
    ``rope_theta`` / ``rope_scaling`` (a ``rope_parameters`` key is only kept as an unused attribute there)."""
    params = getattr(config, "rope_parameters", None) if major >= 5 else None
    if isinstance(params, dict) and "rope_theta" in params:
        scaling = {k: v for k, v in params.items() if k != "rope_theta"}
        return {"rope_theta": params.get("rope_theta"),
                "rope_scaling": scaling if scaling.get("rope_type", "default") != "default" else None}
    scaling = getattr(config, "rope_scaling", None)
    if isinstance(scaling, dict):
        scaling = {k: v for k, v in scaling.items() if k not in ("type", "rope_theta")} or None
        if scaling is not None and scaling.get("rope_type", "default") == "default":
            scaling = None
    return {"rope_theta": getattr(config, "rope_theta", None), "rope_scaling": scaling}


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
