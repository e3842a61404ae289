"""``hookstream tokens "PROMPT" --model M [--base-url URL] [--system TEXT] [--json]``: the input tokens a
prompt would take (:func:`hookstream.count_tokens`), and where the count came from.

Text output is ``N tokens (SOURCE)``; ``--json`` prints ``{"input_tokens": N, "source": SOURCE, "model":
"PROVIDER:MODEL"}``. ``-`` (or no PROMPT) reads the prompt from standard input. The command line imports
this module to list its commands: the counting loads when the command runs.
"""

from __future__ import annotations

import json
import sys

import click
from hookstream.errors import HookstreamError
from hookstream.plugin import chat_model


@click.command("tokens")
@click.argument("prompt", required=False, default="-")
@click.option("-m", "--model", default=None,
              help="PROVIDER:MODEL (or an alias, or test), e.g. anthropic:claude-sonnet-4-5; default: hookstream "
                   "models default.")
@click.option("--base-url", default=None, help="API root: http://host/v1 for OpenAI, http://host for Anthropic/Gemini.")
@click.option("--system", default=None, help="A system prompt counted before the prompt.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
def command(prompt: str, model: str | None, base_url: str | None, system: str | None, as_json: bool) -> None:
    """Count the input tokens of PROMPT ("-" or none: standard input) for --model.

    The provider's own count endpoint answers where it has one (source "provider": Anthropic, Gemini,
    Vertex AI Gemini, OpenAI Responses, Bedrock); otherwise tiktoken counts OpenAI models when
    hookstream[tokens] is installed (source "tokenizer"); otherwise 4 characters a token (source
    "estimate")."""
    from hookstream import count_tokens

    model = chat_model(model)
    text = sys.stdin.read() if prompt == "-" else prompt
    try:
        count = count_tokens(model, text, system=system, base_url=base_url)
    except HookstreamError:
        raise  # the group prints it as one line with its code
    except ValueError as exc:  # messages or options the provider cannot express
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps({"input_tokens": count.input_tokens, "source": count.source, "model": count.model}))
    else:
        click.echo(f"{count.input_tokens} tokens ({count.source})")
