"""The experiments driver for a Strands ``Agent``: fork, replay and compare Strands runs.

>>> from strands import Agent
>>> from statevcs.experiments import fork, replay
>>> from statevcs.integrations.strands.experiments import StrandsDriver
>>> driver = StrandsDriver(lambda: Agent(system_prompt="Be brief.", callback_handler=None))

The factory builds the agent each run uses (without a session manager: the driver commits once
per turn). A fork restores everything the commit holds, system prompt included; a replay keeps
the factory's system prompt, model and tools, which is what the experiment varies.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from strands import Agent

from ...experiments import Turn, turns

if TYPE_CHECKING:
    from ...repo import Commit, Repo


class StrandsDriver:
    """A :class:`statevcs.experiments.Driver` for Strands agents built by ``make_agent``."""

    def __init__(self, make_agent: Callable[[], Agent]) -> None:
        """Use ``make_agent()`` to build each fresh agent (another factory: another experiment)."""
        if not callable(make_agent):
            raise TypeError(f"make_agent must be callable, got {type(make_agent).__name__}")
        self._make = make_agent

    def branch(self, name: str) -> str:
        """A Strands run lives on the branch of that name."""
        return name

    def restore(self, repo: Repo, branch: str, *, keep_settings: bool) -> Agent:
        """A fresh agent checked out at ``branch`` (nothing to load while it has no commits)."""
        agent = self._make()
        if not isinstance(agent, Agent):
            raise TypeError(f"make_agent must return a strands.Agent, got {type(agent).__name__}")
        if branch not in repo.branches():
            return agent
        prompt = agent.system_prompt
        repo.checkout(agent, branch)
        if keep_settings:
            agent.system_prompt = prompt
        return agent

    def user_turns(self, repo: Repo, revisions: str) -> list[Turn]:
        """The user turns of the range (prompts are Strands messages, content blocks kept)."""
        return turns(repo, revisions)

    def run_turn(self, agent: Agent, turn: Turn, metadata: Mapping[str, Any]) -> None:
        """Send the prompt's content blocks (text, images, documents) to the agent."""
        content = turn.prompt.get("content") if isinstance(turn.prompt, dict) else None
        agent(content if isinstance(content, list) else turn.text)

    def commit(
        self, repo: Repo, agent: Agent, branch: str, message: str, metadata: Mapping[str, Any]
    ) -> Commit:
        """One commit per turn on ``branch`` (only the turn's new messages are written)."""
        return repo.commit(agent, message, metadata=metadata, branch=branch)

    def settings(self, agent: Agent) -> dict[str, Any]:
        """System prompt, model id and tool names."""
        config = agent.model.get_config()
        model_id = config.get("model_id") if isinstance(config, Mapping) else None
        return {
            "system_prompt": _prompt_text(agent.system_prompt),
            "model": model_id if isinstance(model_id, str) else type(agent.model).__name__,
            "tools": sorted(agent.tool_names),
        }

    def stored_settings(self, repo: Repo, commit: str) -> dict[str, Any]:
        """A Strands commit records the system prompt."""
        extras = repo.show(commit).extras
        if "system_prompt" not in extras:
            return {}
        return {"system_prompt": _prompt_text(extras["system_prompt"])}


def _prompt_text(prompt: Any) -> Any:
    """A system prompt as text when it is text blocks (Strands stores it as content blocks)."""
    if isinstance(prompt, list) and all(
        isinstance(block, dict) and set(block) == {"text"} for block in prompt
    ):
        return "".join(block["text"] for block in prompt)
    return prompt


__all__ = ["StrandsDriver"]
