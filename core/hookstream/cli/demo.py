"""placeholder until the engine lands"""
import click

@click.command("demo")
def command() -> None:
    """Demo (engine pending)."""
