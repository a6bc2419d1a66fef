"""pytest: the Python API (`import ringlm`, python/ringlm_module.cpp) on the demo-size model:
generate, stream, chat (also with tools), guided (dict and text schemas, key order; a reply cut
by a limit raises naming it), extract (a result per row), __version__, errors as
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


def engine_model_dir():
    model = os.path.join(TMP, "model")
    if not os.path.exists(os.path.join(model, "config.json")):
        os.makedirs(TMP, exist_ok=True)
        subprocess.run([os.environ.get("RINGLM", os.path.join(BUILD, "ringlm")), "make-test-model", model, "--preset", "demo",
                        "--seed", "3", "--tokenizer", os.environ.get("RINGLM_TOKENIZER_DIR", "assets/gemma4-tokenizer")],
                       check=True, stderr=subprocess.DEVNULL)
    return model


@pytest.fixture(scope="module")
def engine():
    return ringlm.Engine(engine_model_dir(), threads=2, ctx=2048)


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


def test_extract_returns_a_result_per_row(engine):
    rows = ["Order AB-1234 never arrived", {"text": "I was charged twice"}]
    out = engine.extract(rows, TICKET, max_tokens=120)
    assert [r["index"] for r in out] == [0, 1]
    for r in out:
        assert r["ok"] is True and r["error"] is None and r["finish"] == "stop"
        assert list(r["output"]) == ["zeta_reasoning", "category", "order_id"]
        assert json.loads(r["text"]) == r["output"]


def test_extract_failing_rows_do_not_raise(engine):
    # Row 1 misses the template's field, row 2 is cut by max_tokens: both come back as errors,
    # between rows that succeed (#30: extract() used to raise on the first failure).
    tmpl = "{text}"
    rows = [{"text": "Order AB-1234 never arrived"}, {"other": "no text field"}, {"text": "cut me"}, "fine"]

    out = engine.extract(rows[:2] + rows[3:], TICKET, template=tmpl, max_tokens=120)
    assert [r["ok"] for r in out] == [True, False, True]
    assert "text" in out[1]["error"] and out[1]["output"] is None
    cut = engine.extract([rows[2]], TICKET, template=tmpl, max_tokens=3)
    assert cut[0]["ok"] is False and cut[0]["finish"] == "length"
    assert "cut by max_tokens=3" in cut[0]["error"], cut[0]["error"]


def test_guided_reply_cut_by_a_limit_raises_naming_it(engine):
    with pytest.raises(ringlm.Error, match="cut by max_tokens=12") as info:
        engine.guided("x", TICKET, max_tokens=12)  # the quoted reply is cut at 200 bytes
    assert str(info.value).startswith("the reply was cut by max_tokens=12 before its JSON value was complete")
    with pytest.raises(ringlm.Error, match="cut by max_tokens=5"):
        engine.generate("x", json_schema=TICKET, max_tokens=5)
    with pytest.raises(ringlm.Error, match="cut by max_tokens=5"):
        engine.chat([{"role": "user", "content": "x"}], json_schema=TICKET, max_tokens=5)
    with pytest.raises(ringlm.Error, match="cut by max_tokens=5"):
        list(engine.stream("x", json_schema=TICKET, max_tokens=5))
    small = ringlm.Engine(engine_model_dir(), threads=2, ctx=64)
    with pytest.raises(ringlm.Error, match=r"cut by the context \(64 tokens\)"):
        small.guided("word " * 45, TICKET, max_tokens=500)  # ~50 prompt tokens: the reply cannot fit
    # An unguided reply cut by max_tokens is ordinary text (its stream says finish "length").
    assert engine.generate("x", max_tokens=5)


def test_version():
    assert ringlm.__version__ == "0.1.0"
    cmake = open(os.path.join(os.path.dirname(__file__), "..", "..", "CMakeLists.txt")).read()
    assert f"VERSION {ringlm.__version__}" in cmake


WEATHER = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}},
                   "required": ["city"], "additionalProperties": False}}}]


def test_chat_with_tools(engine):
    msgs = [{"role": "user", "content": "Weather in Paris?"}]
    reply = engine.chat(msgs, tools=WEATHER, tool_choice="required", max_tokens=60)
    assert reply["role"] == "assistant"
    assert reply["tool_calls"], reply  # one or more (the grammar allows parallel calls)
    for tc in reply["tool_calls"]:
        assert tc["type"] == "function" and tc["id"].startswith("call_")
        assert tc["function"]["name"] == "get_weather" and isinstance(tc["function"]["arguments"]["city"], str)
    # The message goes back into the conversation as is, with the tool's answer.
    msgs += [reply] + [{"role": "tool", "tool_call_id": tc["id"], "content": "sunny"} for tc in reply["tool_calls"]]
    follow = engine.chat(msgs, tools=WEATHER, max_tokens=6)
    assert isinstance(follow, dict) and isinstance(follow["content"], str)
    # tool_choice "none": the tools are left out of the prompt; the reply is still a message dict.
    assert isinstance(engine.chat(msgs[:1], tools=WEATHER, tool_choice="none", max_tokens=4), dict)
    with pytest.raises(ringlm.Error, match="tool_choice"):
        engine.chat(msgs[:1], tools=WEATHER, tool_choice="sometimes")
    with pytest.raises(ringlm.Error, match=r"tools\[0\]"):
        engine.chat(msgs[:1], tools=[{"type": "function"}])


def test_draft_keywords_keep_the_reply(engine):
    # Speculative decoding (draft="ngram"/"auto", draft_max) gives the plain reply, greedy,
    # seeded sampling and guided; a bad value is a ringlm.Error naming it.
    prompt = "order AB-77 for Ana Lee, order AB-77 for Ana Lee, order AB-77 for"
    plain = engine.generate(prompt, max_tokens=30)
    assert engine.generate(prompt, max_tokens=30, draft="ngram") == plain
    assert engine.generate(prompt, max_tokens=30, draft="auto", draft_max=7) == plain
    sampled = engine.generate(prompt, max_tokens=20, temperature=0.9, seed=5)
    assert engine.generate(prompt, max_tokens=20, temperature=0.9, seed=5, draft="ngram") == sampled
    assert engine.guided(prompt, TICKET, max_tokens=120, draft="ngram") == engine.guided(prompt, TICKET, max_tokens=120)
    with pytest.raises(ringlm.Error, match="bogus"):
        engine.generate("x", draft="bogus")
    with pytest.raises(ringlm.Error, match="draft-max"):
        engine.generate("x", draft="ngram", draft_max=0)
    # The Gemma 4 assistant drafter (a random demo-sized one): the same replies; a missing
    # checkpoint is a ringlm.Error naming where it looked.
    asst = os.path.join(TMP, "assistant-demo")
    if not os.path.exists(os.path.join(asst, "config.json")):
        subprocess.run([os.environ.get("RINGLM", os.path.join(BUILD, "ringlm")), "make-test-model", asst, "--assistant",
                        "--preset", "demo", "--seed", "4"], check=True, stderr=subprocess.DEVNULL)
    assert engine.generate(prompt, max_tokens=30, draft="assistant:" + asst) == plain
    # Sampled, the assistant draws its drafts from its softmax: the reply keeps its
    # distribution, not its bits (the C++ chi-square test checks the distribution); a seed
    # still gives one reply.
    drafted = engine.generate(prompt, max_tokens=20, temperature=0.9, seed=5, draft="assistant:" + asst)
    assert drafted == engine.generate(prompt, max_tokens=20, temperature=0.9, seed=5, draft="assistant:" + asst)
    with pytest.raises(ringlm.Error, match="no such file"):
        engine.generate("x", draft="assistant:" + os.path.join(TMP, "no-assistant"))


def test_errors_are_ringlm_errors_with_the_engine_message(engine):
    with pytest.raises(ringlm.Error, match="does-not-exist"):
        ringlm.Engine("/does-not-exist")
    with pytest.raises(ringlm.Error):
        engine.guided("x", {"type": "object", "properties": {"a": {"$ref": "#/nowhere"}}, "required": ["a"]})
    with pytest.raises(ringlm.Error):  # a schema the grammar refuses fails the call, not each row
        engine.extract(["x"], {"type": "object", "properties": {"a": {"$ref": "#/nowhere"}}, "required": ["a"]})
    with pytest.raises(TypeError, match="unexpected keyword argument 'temprature'"):
        engine.generate("x", temprature=1.0)
    assert issubclass(ringlm.Error, RuntimeError)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
