"""pisession.rpc used the plain way, as a user would: it must pass ``mypy --strict``
(tests/test_typing.py checks it; tests/test_rpc.py runs the same calls)."""

from __future__ import annotations

from pisession.compaction import SummaryRequest
from pisession.rpc import HandoffError, PiRpcClient, SyncPiRpcClient


async def summarize(request: SummaryRequest) -> str:
    return request.prompt[:10]


def summarize_sync(request: SummaryRequest) -> str:
    return "x"


async def main(path: str) -> None:
    async with PiRpcClient.start(path, command=["pi"]) as client:
        result = await client.prompt("hi")
        text: str | None = result.text
        state = await client.get_state()
        file: str | None = state.get("sessionFile")
        entries = await client.get_entries(since=result.leaf_id)
        for entry in entries["entries"]:
            print(entry["id"], text, file)
        nav = await client.navigate_tree("abc", summarize=summarize, label="x")
        print(nav.new_leaf_id)
        compaction = await client.compact_with(summarize_sync)
        print(compaction.summary)
        try:
            async with client.handoff() as manager:
                manager.append_label_change(manager.get_leaf_id() or "", "l")
        except HandoffError as error:
            print(error.foreign)
        async with client.events() as events:
            async for event in events:
                if event["type"] == "agent_settled":
                    break
        data = await client.request({"type": "get_state"})
        print(data)


def sync(path: str) -> None:
    with SyncPiRpcClient.start(path) as client:
        print(client.prompt("x").text)
        client.navigate_tree("a", summarize=summarize_sync)
