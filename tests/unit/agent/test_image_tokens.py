"""An image's prompt tokens by each provider's documented formula (G4), checked against the
examples those documents give."""

from __future__ import annotations

from agent.image_tokens import anthropic_image_tokens, image_tokens, openai_image_tokens


def test_g4_anthropic_counts_pixels_over_750_up_to_about_1600():
    """G4: Anthropic's table: 200x200 ~54, 1092x1092 ~1590; a 1568 px square is scaled
    down by the server to about 1,600 tokens, and so is anything larger."""
    assert anthropic_image_tokens(200, 200) == 54
    assert anthropic_image_tokens(1092, 1092) == 1590
    assert anthropic_image_tokens(1568, 1568) == 1600
    assert anthropic_image_tokens(6000, 4000) == 1600


def test_g4_openai_counts_85_and_170_per_512_tile_after_its_scaling():
    """G4: OpenAI's examples: 1024x1024 is 4 tiles, 765; 2048x4096 is fitted to 1024x2048,
    then 768x1536, 6 tiles, 1105; a small image is one tile, 255."""
    assert openai_image_tokens(1024, 1024) == 765
    assert openai_image_tokens(2048, 4096) == 1105
    assert openai_image_tokens(64, 48) == 255


def test_g4_an_unknown_wire_counts_as_anthropic():
    """G4: before the wire is known, the larger (Anthropic) count."""
    assert image_tokens(1568, 1045, None) == image_tokens(1568, 1045, "anthropic") > 0
    assert image_tokens(1568, 1045, "openai") == openai_image_tokens(1568, 1045)
