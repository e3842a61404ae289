"""placeholder until the engine lands"""
import click

@click.command("chat")
def command() -> None:
    """Chat (engine pending)."""
