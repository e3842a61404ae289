"""hookstream provider plugin for Ollama's native chat API (``ollama:MODEL``)."""

from .provider import OllamaProvider

__all__ = ["OllamaProvider"]
