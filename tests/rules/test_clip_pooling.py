"""HVA209: which token a CLIP text tower pools at, decided by running `CLIPTextModel` on CPU.

transformers pools `CLIPTextModel`'s text at `input_ids.argmax(-1)` when `eos_token_id` is the legacy 2, else
at the first position of `eos_token_id`. Each case below builds a tiny CLIPTextModel and a word-level tokenizer,
encodes a text the way CLIP's processor does (bos, words, eos, padding), finds the position whose hidden state
`pooler_output` is, and compares it with the position of the tokenizer's eos: the rule must fire exactly when
they differ. Nothing raises in any case.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import transformers
from family_builders import CLIP_WORDS as WORDS
from family_builders import clip_text, clip_tokenizer

from hf_vocab_audit import audit


def pooled_and_eos(folder: Path, text: str) -> tuple[int, int]:
    """(the position pooler_output is taken at, the position of the eos ending the text), running the model."""
    model = transformers.CLIPTextModel.from_pretrained(folder).eval()
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    batch = tok([text], padding="max_length", max_length=12, return_tensors="pt")
    with torch.no_grad():
        out = model(**batch)
    hidden, pooled = out.last_hidden_state[0], out.pooler_output[0]
    (pooled_at,) = [i for i in range(hidden.shape[0]) if torch.equal(hidden[i], pooled)][:1]
    ids = batch["input_ids"][0].tolist()
    eos_at = len(ids) - 1 - ids[::-1].index(tok.eos_token_id)  # the eos the template ends the text with
    return pooled_at, eos_at


def hva209(folder: Path) -> list:
    return [f for f in audit(folder).findings if f.code == "HVA209"]


# (name, builder arguments, a text to encode): healthy towers pool at the eos, the others do not.
HEALTHY = [
    ("legacy 2, eos the largest id (openai/clip-vit-*)", {"eos_token_id": 2}, "w5 w59 w7"),
    ("eos id set to the tokenizer's", {"eos_token_id": WORDS + 2}, "w5 w59 w7"),
]
BROKEN = [
    ("legacy 2, a token added after the eos (textual inversion)", {"eos_token_id": 2, "added": ["<cat-toy>"]},
     "w5 <cat-toy> w7", "ids above its eos 62 (63)"),
    ("legacy 2, eos 2 below the words (the family sweep's layout)", {"eos_token_id": 2, "layout": "front"},
     "w5 w59 w7", "ids above its eos 2"),
    ("eos id not the tokenizer's", {"eos_token_id": WORDS - 1}, "w5 w6 w7", "the tokenizer's eos is 62"),
    ("eos id that is also the bos", {"eos_token_id": WORDS + 2, "layout": "bos-is-eos"}, "w5 w6 w7",
     "also the tokenizer's bos"),
]


@pytest.mark.parametrize(("name", "kwargs", "text"), HEALTHY, ids=[h[0] for h in HEALTHY])
def test_a_tower_pooling_at_its_eos_is_quiet(tmp_path: Path, name: str, kwargs: dict, text: str) -> None:
    folder = clip_text(tmp_path, **kwargs)
    pooled_at, eos_at = pooled_and_eos(folder, text)
    assert pooled_at == eos_at
    report = audit(folder)
    assert "HVA209" not in {f.code for f in report.findings}
    assert report.exit_code() == 0, [(f.code, f.message) for f in report.findings]


@pytest.mark.parametrize(("name", "kwargs", "text", "says"), BROKEN, ids=[b[0] for b in BROKEN])
def test_a_tower_pooling_elsewhere_fires(tmp_path: Path, name: str, kwargs: dict, text: str, says: str) -> None:
    folder = clip_text(tmp_path, **kwargs)
    pooled_at, eos_at = pooled_and_eos(folder, text)
    assert pooled_at != eos_at  # runs without an error, at another token
    (hit,) = hva209(folder)
    assert hit.severity.value == "error" and hit.location.file == "config.json"
    assert hit.location.key == "eos_token_id" and says in hit.message, hit.message


def test_the_bos_is_eos_tower_gives_every_text_the_same_embedding(tmp_path: Path) -> None:
    """Pooled at position 0 behind causal attention: two different texts, one pooled embedding."""
    folder = clip_text(tmp_path, eos_token_id=WORDS + 2, layout="bos-is-eos")
    model = transformers.CLIPTextModel.from_pretrained(folder).eval()
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    with torch.no_grad():
        a, b = (model(**tok([t], return_tensors="pt")).pooler_output for t in ("w1 w2 w3", "w40 w41"))
    assert torch.equal(a, b)


def test_the_fix_it_names_makes_the_tower_pool_at_the_eos(tmp_path: Path) -> None:
    """Following the hint (config eos_token_id set to the tokenizer's eos) moves the pooled position to the eos
    and quiets the rule, even with the added token above the eos."""
    folder = clip_text(tmp_path, eos_token_id=2, added=["<cat-toy>"])
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "eos_token_id": WORDS + 2}))
    pooled_at, eos_at = pooled_and_eos(folder, "w5 <cat-toy> w7")
    assert pooled_at == eos_at
    assert hva209(folder) == []


def test_a_clip_model_reads_the_text_config(tmp_path: Path) -> None:
    """A CLIPModel keeps the text tower's eos in text_config: the finding names that key."""
    torch.manual_seed(0)
    clip_tokenizer(added=["<cat-toy>"]).save_pretrained(tmp_path)
    text = transformers.CLIPTextConfig(vocab_size=WORDS + 4, hidden_size=16, intermediate_size=32,
                                       num_hidden_layers=1, num_attention_heads=2, max_position_embeddings=16,
                                       eos_token_id=2, bos_token_id=WORDS + 1, pad_token_id=WORDS)
    vision = transformers.CLIPVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                           num_attention_heads=2, image_size=8, patch_size=4)
    cfg = transformers.CLIPConfig(text_config=text.to_dict(), vision_config=vision.to_dict(), projection_dim=8)
    model = transformers.CLIPModel(cfg).eval()
    model.save_pretrained(tmp_path)
    tok = transformers.AutoTokenizer.from_pretrained(tmp_path)
    batch = tok(["w5 <cat-toy> w7"], return_tensors="pt")
    with torch.no_grad():
        out = model.text_model(**batch)
    assert not torch.equal(out.pooler_output[0], out.last_hidden_state[0, -1])  # the eos is the last position
    (hit,) = hva209(tmp_path)
    assert hit.location.key == "text_config.eos_token_id"
