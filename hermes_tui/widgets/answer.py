"""The assistant's answer widget: Markdown, streamed then finalised (imported lazily)."""

from __future__ import annotations

from textual.widgets import Markdown


class AnswerBlock(Markdown):
    """The assistant's visible answer, streamed then finalised as Markdown."""

    async def finalize(self, content: str) -> None:
        """End a stream: make the mounted blocks those a fresh parse of `content` gives.

        Streamed appends update the last block from a re-parse of the tail, so a block can
        keep the type a prefix of its text gave it (a paragraph that became a table, a fence
        or a setext heading): a full `update()` is the safe end of a stream. But re-mounting
        a long answer is the most expensive step of a turn, so when the streamed source is
        the final text and a fresh parse yields exactly the blocks already mounted (type and
        source lines), those blocks are already what `update()` would mount.
        """
        if self.source == content and self._blocks_match(content):
            return
        await self.update(content)

    def _blocks_match(self, content: str) -> bool:
        from markdown_it import MarkdownIt
        from textual.widgets._markdown import MarkdownBlock

        # Textual's own parser choice (Markdown.update): keep the two in step.
        factory = getattr(self, "_parser_factory", None)
        parser = MarkdownIt("gfm-like") if factory is None else factory()
        fresh = [(type(b), b.source_range) for b in self._parse_markdown(parser.parse(content))]
        mounted = [(type(b), b.source_range) for b in self.children if isinstance(b, MarkdownBlock)]
        return fresh == mounted
