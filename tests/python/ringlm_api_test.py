"""pytest: the Python API (`import ringlm`, python/ringlm_module.cpp) on the demo-size model:
generate, stream, chat, guided (dict and text schemas, key order), extract, errors as
ringlm.Error with the engine's message (whole, even when it quotes broken UTF-8). Run by
CTest (python3 this-file, with the module from RINGLM_BUILD_DIR/python) or by pytest."""
import json
import os
import subprocess
import sys

import pytest

BUILD = os.environ.get("RINGLM_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
sys.path.insert(0, os.path.join(BUILD, "python"))
import ringlm  # noqa: E402

TMP = os.environ.get("RINGLM_TMP", "/tmp/ringlm_api_test")


@pytest.fixture(scope="module")
def engine():
    model = os.path.join(TMP, "model")
    if not os.path.exists(os.path.join(model, "config.json")):
        os.makedirs(TMP, exist_ok=True)
        subprocess.run([os.environ.get("RINGLM", os.path.join(BUILD, "ringlm")), "make-test-model", model, "--preset", "demo",
                        "--seed", "3", "--tokenizer", os.environ.get("RINGLM_TOKENIZER_DIR", "assets/gemma4-tokenizer")],
                       check=True, stderr=subprocess.DEVNULL)
    return ringlm.Engine(model, threads=2, ctx=2048)


# Bounded strings: the random-weight model writes until a bound stops it, so every reply is
# complete within max_tokens and the test stays fast.
TICKET = {
    "type": "object",
    "properties": {
        "zeta_reasoning": {"type": "string", "maxLength": 24},
        "category": {"type": "string", "enum": ["billing", "shipping", "other"]},
        "order_id": {"type": ["string", "null"], "maxLength": 10},
    },
    "required": ["zeta_reasoning", "category", "order_id"],
    "additionalProperties": False,
}


def test_generate_is_greedy_and_bounded(engine):
    a = engine.generate("Hello there", max_tokens=12)
    b = engine.generate("Hello there", max_tokens=12)
    assert isinstance(a, str) and a
    assert a == b  # temperature 0 by default
    assert len(engine.tokenize(a)) <= 13


def test_sampling_with_seed_repeats(engine):
    a = engine.generate("Hi", max_tokens=6, temperature=1.0, seed=7)
    b = engine.generate("Hi", max_tokens=6, temperature=1.0, seed=7)
    c = engine.generate("Hi", max_tokens=6, temperature=1.0, seed=8)
    assert a == b
    assert a != c


def test_stream_pieces_join_to_generate(engine):
    pieces = list(engine.stream("Hello there", max_tokens=12))
    assert len(pieces) > 1
    assert "".join(pieces) == engine.generate("Hello there", max_tokens=12)


def test_stream_can_stop_early(engine):
    s = engine.stream("Tell me a story", max_tokens=120)
    first = next(s)
    s.close()
    assert isinstance(first, str)
    assert engine.generate("Hi", max_tokens=3)  # the engine is usable afterwards


def test_chat_takes_messages(engine):
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello"}]
    reply = engine.chat(msgs, max_tokens=8)
    assert reply == engine.generate("Hello", system="Be brief.", max_tokens=8)


def test_guided_dict_schema_keeps_key_order(engine):
    value = engine.guided("Order AB-1234 never arrived", TICKET, max_tokens=120)
    assert list(value) == ["zeta_reasoning", "category", "order_id"]
    assert value["category"] in ("billing", "shipping", "other")


def test_guided_text_schema(engine):
    value = engine.guided("Pick one", '{"type":"string","enum":["yes","no"]}', max_tokens=8)
    assert value in ("yes", "no")


def test_extract_rows_returns_dicts(engine):
    rows = ["Order AB-1234 never arrived", {"text": "I was charged twice"}]
    out = engine.extract(rows, TICKET, max_tokens=120)
    assert len(out) == 2
    for v in out:
        assert isinstance(v, dict)
        assert list(v) == ["zeta_reasoning", "category", "order_id"]


def test_errors_are_ringlm_errors_with_the_engine_message(engine):
    with pytest.raises(ringlm.Error, match="does-not-exist"):
        ringlm.Engine("/does-not-exist")
    with pytest.raises(ringlm.Error, match="reply is not complete JSON") as info:
        engine.extract(["x"], TICKET, max_tokens=2)
    assert "raise max_tokens" in str(info.value)
    with pytest.raises(ringlm.Error, match="not complete JSON") as info:
        engine.guided("x", TICKET, max_tokens=12)  # the quoted reply is cut at 200 bytes
    assert str(info.value).startswith("the reply is not complete JSON")
    with pytest.raises(ringlm.Error):
        engine.guided("x", {"type": "object", "properties": {"a": {"$ref": "#/nowhere"}}, "required": ["a"]})
    with pytest.raises(TypeError, match="unexpected keyword argument 'temprature'"):
        engine.generate("x", temprature=1.0)
    assert issubclass(ringlm.Error, RuntimeError)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
