"""Regenerate pisession/data/models.json: Pi 1.6.0's built-in chat models (provider by provider,
in Pi's order, each model as pi-ai's ``getModels()`` returns it) and the environment variables
each built-in provider reads its key from (pi-ai's ``findEnvKeys``).

    python tests/conformance/generate_models.py

Needs node and ``../shared/pi-oracle/setup.sh`` (the installed Pi package is the source).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGET = HERE.parents[1] / "pisession" / "data" / "models.json"


def main() -> None:
    out = subprocess.run(
        ["node", str(HERE / "models_data.mjs")], check=True, capture_output=True, text=True
    ).stdout
    data = json.loads(out)
    data["piVersion"] = "1.6.0"
    TARGET.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    count = sum(len(p["models"]) for p in data["providers"])
    print(f"{TARGET}: {len(data['providers'])} providers, {count} models")


if __name__ == "__main__":
    main()


LIST_GOLDEN = HERE / "golden" / "list_models.json"
LIST_ENV = {"FAKEOAI_KEY": "x", "OPENAI_API_KEY": "x", "OPENROUTER_API_KEY": "x", "GROQ_API_KEY": "x"}
LIST_SEARCHES = ["", "sonnet", "gpt 5", "opus/4", "kimi", "4o", "fake think", "zzzz-nothing"]


def list_models() -> None:
    """golden/list_models.json: ``pi --list-models [SEARCH]`` with an agent folder of custom
    providers (models.json from generate_llm.py), auth.json for Google, and a few key variables."""
    import os
    import sys
    import tempfile

    sys.path.insert(0, str(HERE))
    import generate_llm

    pi = HERE.parents[2] / "shared" / "pi-oracle" / "pi.sh"
    with tempfile.TemporaryDirectory() as tmp:
        agent = Path(tmp) / "agent"
        agent.mkdir()
        models = json.loads(json.dumps(generate_llm.MODELS).replace("{FAKE_URL}", "http://127.0.0.1:9"))
        (agent / "models.json").write_text(json.dumps(models))
        (agent / "auth.json").write_text(json.dumps({"google": generate_llm.AUTH["google"]}))
        keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL")}
        oracle_home = os.environ.get("PI_ORACLE_HOME", str(Path.home() / ".cache" / "pi-oracle"))
        env = {
            **keep,
            "HOME": tmp,
            "PI_ORACLE_HOME": oracle_home,
            "PI_CODING_AGENT_DIR": str(agent),
            **LIST_ENV,
        }
        outputs = {}
        for search in LIST_SEARCHES:
            argv = ["bash", str(pi), "--list-models", *([search] if search else [])]
            done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
            outputs[search] = done.stdout
    LIST_GOLDEN.write_text(
        json.dumps(
            {
                "models": models,
                "auth": {"google": generate_llm.AUTH["google"]},
                "env": LIST_ENV,
                "outputs": outputs,
            },
            indent=1,
            ensure_ascii=False,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"{LIST_GOLDEN}: {len(outputs)} searches")


if __name__ == "__main__":
    list_models()
