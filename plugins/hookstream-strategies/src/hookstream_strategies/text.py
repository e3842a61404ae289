"""Strategies that look at the text of each delta: punctuation and word boundaries.

Both only read ``chunk`` (cost proportional to the delta) and keep no state, so ``reset`` does nothing.
Thread safety: stateless; one instance may serve several processors.
"""

from __future__ import annotations

import re

__all__ = ["PunctuationStrategy", "WordBoundaryStrategy"]

# ASCII . , ! ? ; : and their CJK forms: ideographic full stop and comma (U+3002, U+3001), the
# full-width forms (U+FF0E . U+FF0C , U+FF01 ! U+FF1F ? U+FF1B ; U+FF1A :) and the half-width
# ideographic full stop and comma (U+FF61, U+FF64).
PUNCTUATION = re.compile("[.,!?;:\u3002\u3001\uff0e\uff0c\uff01\uff1f\uff1b\uff1a\uff61\uff64]")

# Scripts written without spaces between words: Thai, Lao, Tibetan, Myanmar, Khmer, CJK symbols and
# punctuation, Hiragana, Katakana (and phonetic extensions, half-width forms), CJK ideographs
# (unified, extension A and B-F, compatibility).
NO_SPACE_SCRIPT = re.compile(
    "[\u0e00-\u0eff\u0f00-\u0fff\u1000-\u109f\u1780-\u17ff\u3000-\u30ff\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002fa1f]"
)


class PunctuationStrategy:
    """Publish when the delta contains sentence or clause punctuation: ``[.,!?;:]`` and the CJK
    full-width forms (U+3002 ideographic full stop, U+FF0C full-width comma and the rest of PUNCTUATION)."""

    __slots__ = ()

    def should_emit(self, chunk: str, accumulated: str) -> bool:
        return PUNCTUATION.search(chunk) is not None

    def reset(self) -> None:
        pass


class WordBoundaryStrategy:
    """Publish at word boundaries: when the delta ends with whitespace, or, for scripts that do not
    put spaces between words (Chinese, Japanese, Thai, Khmer...), after every such character."""

    __slots__ = ()

    def should_emit(self, chunk: str, accumulated: str) -> bool:
        if not chunk:
            return False
        last = chunk[-1]
        return last.isspace() or NO_SPACE_SCRIPT.match(last) is not None

    def reset(self) -> None:
        pass
