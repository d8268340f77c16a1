"""Cairn through LiteLLM's real proxy ("Done when"), by hand: a mock route
(`mock_response`) and a route in front of a local server speaking today's API (the tests'
fake, which refuses a forced tool as today's models do). Not run by pytest, and LiteLLM is no
dependency of Cairn's: install it apart, then run from the repository root:

    uv venv /tmp/llvenv --python 3.11 && VIRTUAL_ENV=/tmp/llvenv uv pip install 'litellm[proxy]'
    LITELLM=/tmp/llvenv/bin/litellm .venv/bin/python tests/manual/litellm_proxy.py

It prints each `cairn` command and its output; on 2026-12-06 with LiteLLM 1.108.7 both routes
said "Knowledge: 1 change applied" on the first turn, and a wrong key "did not accept the API
key (it says “No connected db.”)". The proxy listens on 127.0.0.1:4000 only."""
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests.fake_anthropic import FakeAnthropic  # noqa: E402

LONG = "Our launch date is 2027-04-15 and the accent colour is orange #FF5500, as agreed today."
OPS = {"ops": [{"op": "add", "target": "project", "section": "Facts",
                "text": "Launch is 2027-04-15", "evidence": "launch date is 2027-04-15"}]}
work = pathlib.Path(tempfile.mkdtemp(prefix="cairn-litellm-"))
fake = FakeAnthropic().start()
fake.add_legacy_model("local-llama")  # last year's: refuses structured output, takes a forced tool
config = f"""
model_list:
  - model_name: mock-chat
    litellm_params:
      model: anthropic/claude-haiku-5-5
      api_key: unused
      mock_response: {json.dumps(LONG)}
  - model_name: mock-knowledge
    litellm_params:
      model: anthropic/claude-haiku-5-5
      api_key: unused
      mock_response: {json.dumps(json.dumps(OPS))}
  - model_name: claude-sonnet-5-5
    litellm_params:
      model: anthropic/claude-sonnet-5-5
      api_base: {fake.base_url}
      api_key: sk-ant-local
  - model_name: claude-haiku-5-5
    litellm_params:
      model: anthropic/claude-haiku-5-5
      api_base: {fake.base_url}
      api_key: sk-ant-local
  - model_name: local-llama
    litellm_params:
      model: anthropic/local-llama
      api_base: {fake.base_url}
      api_key: sk-ant-local
general_settings:
  master_key: sk-master
litellm_settings:
  num_retries: 0
"""
(work / "config.yaml").write_text(config)
proxy = subprocess.Popen([os.environ.get("LITELLM", "litellm"), "--config", str(work / "config.yaml"),
                          "--host", "127.0.0.1", "--port", "4000"],
                         stdout=open(work / "proxy.log", "w"), stderr=subprocess.STDOUT)
try:
    for _ in range(120):  # bounded: up to 60 s for the proxy to start
        try:
            urllib.request.urlopen("http://127.0.0.1:4000/health/liveliness", timeout=1)
            break
        except Exception:
            time.sleep(0.5)
    else:
        sys.exit("the proxy did not start; see " + str(work / "proxy.log"))
    env = dict(os.environ, CAIRN_DATA_DIR=str(work / "data"), ANTHROPIC_BASE_URL="http://127.0.0.1:4000",
               ANTHROPIC_API_KEY="sk-master", PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring")
    folder = work / "Acme"
    folder.mkdir()

    def cairn(*args, key=None):
        done = subprocess.run([sys.executable, "-m", "ui.main", *args],
                              cwd=str(ROOT), capture_output=True, text=True, timeout=300,
                              env=dict(env, **({"ANTHROPIC_API_KEY": key} if key else {})))
        print(f"$ cairn {' '.join(args)}\n-> exit {done.returncode}\n--- stdout\n{done.stdout}--- stderr\n{done.stderr}")
        return done

    which = sys.argv[1] if len(sys.argv) > 1 else "all"
    raw = urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:4000/v1/models?limit=1000",
        headers={"x-api-key": "sk-master", "anthropic-version": "2023-06-01"}), timeout=10).read()
    print("raw /v1/models:", raw[:700].decode())
    bad = urllib.request.Request("http://127.0.0.1:4000/v1/messages", method="POST",
        data=json.dumps({"model": "claude-haiku-5-5", "max_tokens": 10, "messages": [{"role": "user", "content": "x"}]}).encode(),
        headers={"x-api-key": "sk-wrong", "anthropic-version": "2023-06-01", "content-type": "application/json"})
    try:
        urllib.request.urlopen(bad, timeout=10)
    except urllib.error.HTTPError as error:
        print("wrong key:", error.code, error.read()[:400].decode())
    forced = urllib.request.Request("http://127.0.0.1:4000/v1/messages", method="POST",
        data=json.dumps({"model": "claude-haiku-5-5", "max_tokens": 100, "messages": [{"role": "user", "content": "x"}],
                         "tools": [{"name": "t", "input_schema": {"type": "object", "properties": {}}}],
                         "tool_choice": {"type": "tool", "name": "t"}}).encode(),
        headers={"x-api-key": "sk-master", "anthropic-version": "2023-06-01", "content-type": "application/json"})
    try:
        urllib.request.urlopen(forced, timeout=30)
    except urllib.error.HTTPError as error:
        print("forced tool through the proxy:", error.code, error.read()[:900].decode())
    cairn("models")
    cairn("workspace", "add", str(folder))
    beta = work / "Beta"
    beta.mkdir()
    cairn("workspace", "add", str(beta))
    if which in ("all", "mock"):
        cairn("settings", "set", "model.chat", "mock-chat")
        cairn("settings", "set", "model.knowledge", "mock-knowledge")
        cairn("ask", "--folder", str(folder), "When do we launch?")
    if which in ("all", "fake"):
        cairn("settings", "set", "model.chat", "claude-sonnet-5-5")
        cairn("settings", "set", "model.knowledge", "claude-haiku-5-5")
        fake.reply_text(LONG.replace("2027-04-15", "2027-05-01"))
        fake.reply_json("update_knowledge", {"ops": [{"op": "add", "target": "project", "section": "Facts",
                        "text": "Launch is 2027-05-01", "evidence": "launch date is 2027-05-01"}]})
        cairn("ask", "--folder", str(beta), "And the new date?")
        for r in fake.message_requests:
            b = r.body or {}
            print("fake got:", b.get("model"), "output_config" in b, b.get("tool_choice"), "stream" in b and b["stream"])
    if which in ("all", "fallback"):
        gamma = work / "Gamma"
        gamma.mkdir()
        cairn("workspace", "add", str(gamma))
        cairn("settings", "set", "model.knowledge", "local-llama")
        fake.reply_text(LONG.replace("orange #FF5500", "teal #008080"))
        fake.reply_json("update_knowledge", {"ops": [{"op": "add", "target": "project", "section": "Facts",
                        "text": "Accent is teal #008080", "evidence": "accent colour is teal #008080"}]})
        cairn("ask", "--folder", str(gamma), "Which accent?")
        for r in fake.message_requests[-2:]:
            b = r.body or {}
            print("fake got:", b.get("model"), "output_config" in b, b.get("tool_choice"))
    cairn("ask", "--folder", str(folder), "hello", key="sk-wrong")
    print((work / "data" / "models.json").read_text()[-400:] if (work / "data" / "models.json").exists() else "")
finally:
    proxy.terminate()
    proxy.wait(timeout=30)
    fake.stop()
    print("work folder:", work)
