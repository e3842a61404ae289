"""A blocking terminal chat whose tool asks for approval on the terminal before it runs.

Run it against a real provider (the key comes from the provider's environment variable)::

    OPENAI_API_KEY=... python docs/examples/approval_chat.py --model openai:gpt-4o-mini

Ask e.g. "clean up /tmp/old.log". The model calls ``delete_file``; the chat prints the call and asks
``approve? [y/N]``; your answer goes to the engine's ``approve`` callback, and a denied call reaches
the model as a denial result. Type an empty line or ``quit`` to leave. The tool only pretends to
delete: this is an example.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from hookstream import Message, ToolCallPart, chat, get_model, tool
from hookstream.events import RunError, TextMessageContent, TextMessageEnd, TextMessageStart


@tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file from disk.

    Args:
        path: absolute path of the file to delete.
    """
    return f"deleted {path}"  # an example: nothing is touched


def list_files(directory: str) -> list[str]:
    """List the files of a directory (no approval needed).

    Args:
        directory: the directory to list.
    """
    return [f"{directory.rstrip('/')}/old.log", f"{directory.rstrip('/')}/notes.txt"]


def ask(call: ToolCallPart, read: Callable[[str], str], out: TextIO) -> bool:
    """The ``approve`` callback: show the call and read y/N from the terminal."""
    out.write(f"\n[tool] {call.name}({json.dumps(call.arguments)})\n")
    out.flush()
    try:
        answer = read("approve? [y/N] ")
    except EOFError:
        answer = ""
    return answer.strip().lower() in ("y", "yes")


def main(argv: Sequence[str] | None = None, read: Callable[[str], str] = input, out: TextIO = sys.stdout) -> int:
    parser = argparse.ArgumentParser(description="A terminal chat whose tool asks for approval.")
    parser.add_argument("--model", default="openai:gpt-4o-mini", help="PROVIDER:MODEL")
    parser.add_argument("--base-url", default=None, help="API root, e.g. http://localhost:8000/v1")
    args = parser.parse_args(argv)
    history: list[Message] = [Message.system("You manage files. Use the tools; deleting needs the user's OK.")]
    # One model for the whole chat: every turn reuses its connection pool; `with` closes it at the end.
    with get_model(args.model, base_url=args.base_url) as model:
        while True:
            try:
                line = read("you> ")
            except EOFError:
                break
            if not line.strip() or line.strip() in ("quit", "exit"):
                break
            stream = chat(model, [*history, Message.user(line)], tools=[delete_file, list_files],
                          approve=lambda call: ask(call, read, out))
            for event in stream:
                if isinstance(event, TextMessageStart):
                    out.write("assistant> ")
                elif isinstance(event, TextMessageContent):
                    out.write(event.delta)
                    out.flush()
                elif isinstance(event, TextMessageEnd):
                    out.write("\n")
                elif isinstance(event, RunError):
                    out.write(f"[error] {event.code}: {event.message}\n")
            history = stream.result().messages
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
