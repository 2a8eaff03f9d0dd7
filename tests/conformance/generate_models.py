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
