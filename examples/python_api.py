# %% [markdown]
# # ringlm from Python
# Build once (`./scripts/setup.sh`), then `PYTHONPATH=build/python` (or
# `pip install .`). Run this file as a script, or open it as a notebook:
# each `# %%` is a cell (Jupyter with jupytext, VS Code, PyCharm).

# %%
import ringlm

# Any checkpoint directory, `ringlm convert` output or .gguf file; the demo model is tiny and
# random, so its text is meaningless but guided JSON is always valid.
engine = ringlm.Engine("build/demo-model", threads=4, ctx=4096)

# %% One reply (greedy unless temperature > 0)
print(engine.generate("Write a haiku about caches.", max_tokens=40))

# %% Streaming: pieces arrive as they are decoded
for piece in engine.stream("Count to five.", max_tokens=30, temperature=0.7, seed=1):
    print(piece, end="", flush=True)
print()

# %% A conversation
messages = [
    {"role": "system", "content": "You answer in one sentence."},
    {"role": "user", "content": "What is a ring buffer?"},
]
print(engine.chat(messages, max_tokens=60))

# %% Guided generation: the reply follows the schema, keys in schema order
schema = {
    "type": "object",
    "properties": {
        "reasoning": {"type": "string", "maxLength": 120},
        "category": {"type": "string", "enum": ["billing", "shipping", "technical", "other"]},
        "order_id": {"type": ["string", "null"], "pattern": "^[A-Z]{2}-[0-9]{4,8}$"},
    },
    "required": ["reasoning", "category", "order_id"],
    "additionalProperties": False,
}
print(engine.guided("My order AB-1234 never arrived", schema, max_tokens=200))

# %% Batch extraction: one result per row (a failing row is reported, never raised)
rows = ["I was charged twice this month", {"text": "The app crashes on start"}]
for r in engine.extract(rows, schema, max_tokens=200):
    print(r["output"] if r["ok"] else f"row {r['index']}: {r['error']}")

# %% Errors carry the engine's message
try:
    ringlm.Engine("/no/such/model")
except ringlm.Error as e:
    print("ringlm.Error:", e)
