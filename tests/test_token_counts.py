"""Token estimates pinned to counts from an independent source: OpenAI's cookbook "How to count tokens with
tiktoken" (cl100k_base rows of its ``compare_encodings`` examples and the example conversation the API
itself counted as 129 prompt tokens). No skip: tiktoken and litellm (which ships the cl100k_base
vocabulary, so nothing is downloaded) are required dependencies."""

from __future__ import annotations

import subprocess
import sys

import pytest
from prerequisites import requires

from takeover.llm import estimate_prompt_tokens, estimate_tokens, estimator_name

# (text, cl100k_base tokens as the cookbook prints them)
COOKBOOK = [
    ("tiktoken is great!", 6),
    ("antidisestablishmentarianism", 6),
    ("2 + 2 = 4", 7),
    ("お誕生日おめでとう", 9),
]


@requires("tiktoken vocabulary")
def test_the_estimator_is_cl100k_base():
    assert estimator_name() == "tiktoken:cl100k_base"


@requires("tiktoken vocabulary")
@pytest.mark.parametrize(("text", "tokens"), COOKBOOK)
def test_estimates_equal_the_cookbook_counts(text, tokens):
    assert estimate_tokens(text) == tokens


@requires("tiktoken vocabulary")
def test_the_cookbook_conversation_is_129_prompt_tokens():
    example = [
        {"role": "system", "content": "You are a helpful, pattern-following assistant that translates corporate "
                                      "jargon into plain English."},
        {"role": "system", "name": "example_user", "content": "New synergies will help drive top-line growth."},
        {"role": "system", "name": "example_assistant",
         "content": "Things working well together will increase revenue."},
        {"role": "system", "name": "example_user",
         "content": "Let's circle back when we have more bandwidth to touch base on opportunities for increased "
                    "leverage."},
        {"role": "system", "name": "example_assistant",
         "content": "Let's talk later when we're less busy about how to do better."},
        {"role": "user", "content": "This late pivot means we don't have time to boil the ocean for the client "
                                    "deliverable."},
    ]
    assert estimate_prompt_tokens(example) == 129
    # one message: 3 tokens wrap it, its role and content are encoded, 3 tokens prime the reply
    bare = [{"role": "user", "content": "tiktoken is great!"}]
    assert estimate_prompt_tokens(bare) == 3 + 1 + 6 + 3  # message, "user", content, reply priming
    assert estimate_prompt_tokens([]) == 0 and estimate_tokens("") == 0


def test_without_tiktoken_the_documented_fallback_is_characters_over_4():
    """A process where tiktoken cannot be imported (a third-party package missing, not our code replaced)."""
    code = ("import sys; sys.modules['tiktoken'] = None\n"
            "from takeover.llm import estimate_tokens, estimator_name\n"
            "print(estimator_name(), estimate_tokens('tiktoken is great!'), estimate_tokens('abcde'), estimate_tokens(''))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["chars/4", "5", "2", "0"]  # ceil(18 / 4), ceil(5 / 4)
