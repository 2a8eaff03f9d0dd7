"""``settings``: what Pi's own settings resolve to here (session folder, compaction and
branch summaries), and where each value comes from."""

from __future__ import annotations

import argparse
import os
import sys

from pisession import default_session_dir
from pisession.settings import PiSettings, choose_session_dir, is_project_trusted

from .commands import Commands
from .output import emit, emit_json, write_out

_SESSION_DIR_SOURCES = {
    "explicit": "--session-dir",
    "variable": "$PI_CODING_AGENT_SESSION_DIR",
    "global": "sessionDir, global settings",
    "project": "sessionDir, project settings",
    "default": "Pi's default folder for this cwd",
}


def cmd_settings(args: argparse.Namespace) -> int:
    cwd = os.path.abspath(os.path.expanduser(args.cwd)) if args.cwd else os.getcwd()
    # Pi takes the session folder from the project file whether or not it trusts the project,
    # and everything else only from a project it trusts.
    trusted = is_project_trusted(cwd)
    settings = PiSettings.load(cwd, project_trusted=trusted)
    folder = choose_session_dir(cwd, args.session_dir)
    session_folder = folder.path if folder.path is not None else default_session_dir(cwd)
    # The folder's choice read the project file even when it is not trusted: its errors count.
    startup_errors = folder.settings.errors if folder.settings is not None else ()
    errors = list({str(e): e for e in (*settings.errors, *startup_errors)}.values())
    resolved = settings.resolved(args.model)
    invalid = [setting.error for setting in resolved if setting.error is not None]
    if args.json:
        emit_json(
            {
                "cwd": cwd,
                "model": args.model,
                "agentDir": settings.agent_dir,
                "projectTrusted": trusted,
                "files": [
                    {
                        "scope": "global",
                        "path": settings.global_path,
                        "exists": os.path.exists(settings.global_path),
                    },
                    {
                        "scope": "project",
                        "path": settings.project_path,
                        "exists": os.path.exists(settings.project_path),
                    },
                ],
                "errors": [{"scope": e.scope, "path": e.path, "message": e.message} for e in errors],
                "sessionDir": {"value": session_folder, "source": folder.source},
                "settings": {
                    setting.name: {
                        "value": setting.value,
                        "source": setting.source,
                        "modelOverride": setting.model_override,
                        "error": setting.error,
                    }
                    for setting in resolved
                },
            }
        )
        return 1 if invalid else 0
    emit(f"Pi's settings for {cwd}" + (f" (model {args.model})" if args.model else " (no model)"))
    for scope, path in (("global", settings.global_path), ("project", settings.project_path)):
        state = "read" if os.path.exists(path) else "none"
        if scope == "project" and state == "read" and not trusted:
            state = "project not trusted by Pi: only its sessionDir counts"
        for error in errors:
            if error.path == path:
                state = f"ignored, as Pi ignores it: {error.message}"
        emit(f"  {scope} settings: {path} ({state})")
    rows = [("session folder", session_folder, _SESSION_DIR_SOURCES[folder.source])]
    for setting in resolved:
        source = {"default": "Pi's default", "global": "global settings", "project": "project settings"}[
            setting.source
        ]
        if setting.model_override:
            source += f", modelOverrides[{args.model!r}]"
        if setting.error is not None:
            rows.append((setting.name, "invalid", setting.error))
        else:
            rows.append((setting.name, _text(setting.value), source))
    name_width = max(len(name) for name, _, _ in rows)
    value_width = max(len(value) for _, value, _ in rows)
    for name, value, source in rows:
        emit(f"  {name:<{name_width}}  {value:<{value_width}}  {source}")
    for message in invalid:
        write_out(f"pisession: error: {message}\n", sys.stderr)
    return 1 if invalid else 0


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def cmd_models(args: argparse.Namespace) -> int:
    from pisession.models import ModelRegistry, available_models, filter_models, format_model_table

    registry = ModelRegistry.load()
    if registry.error:
        write_out(f"Warning: errors loading models.json:\n{registry.error}\n", sys.stderr)
    available = available_models(registry)
    models = filter_models(available, args.search)
    if args.json:
        emit_json(
            [
                {
                    "provider": m.provider,
                    "id": m.id,
                    "api": m.api,
                    "contextWindow": m.context_window,
                    "maxTokens": m.max_tokens,
                    "reasoning": m.reasoning,
                    "images": m.images,
                }
                for m in models
            ]
        )
        return 0
    if not available:
        emit("No models available: give a provider a key (auth.json, models.json apiKey, or its variable).")
    elif not models:
        emit(f'No models matching "{args.search}"')
    else:
        write_out(format_model_table(models))
    return 0


def register(commands: Commands) -> None:
    sub = commands.add(
        "models",
        cmd_models,
        "list the models Pi can use, as pi --list-models",
        "The models whose provider has credentials (auth.json, an apiKey in models.json, or the "
        "provider's key variable), Pi 1.6.0's built-in list merged with AGENT_DIR/models.json as Pi "
        "merges it, fuzzy-filtered by SEARCH and printed as Pi's table. Nothing is written and no "
        "credential is printed. Python: filter_models(available_models(ModelRegistry.load()), SEARCH).",
        [commands.as_json],
        session=False,
    )
    sub.add_argument("search", metavar="SEARCH", nargs="?", help="fuzzy filter on 'provider id'")
    sub = commands.add(
        "settings",
        cmd_settings,
        "show what Pi's own settings resolve to here",
        "The session folder Pi's command line would use (--session-dir, else "
        "$PI_CODING_AGENT_SESSION_DIR, else the sessionDir setting, else Pi's default) and the "
        "compaction and branch-summary settings Pi would use for the folder (--cwd) and model "
        "(--model provider/id), each with where it comes from: Pi's default, the global "
        "settings file (AGENT_DIR/settings.json) or the project's (CWD/.pi/settings.json). "
        "Settings files Pi would ignore are named; a project's file counts only when Pi trusts the "
        'folder (AGENT_DIR/trust.json, or defaultProjectTrust "always"), except for sessionDir. '
        "Exit status 1 when a value is invalid. "
        "Nothing is written. Python: PiSettings.load(cwd).resolved(model) (Pi's trust rule by "
        "default), choose_session_dir(cwd).",
        [commands.where, commands.as_json],
        session=False,
    )
    sub.add_argument(
        "--cwd", metavar="DIR", help="the folder whose project settings count (default: this one)"
    )
    sub.add_argument(
        "--model",
        metavar="PROVIDER/ID",
        help="the model whose compaction.modelOverrides apply (default: none)",
    )
