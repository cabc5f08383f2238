"""Web search providers (WebSearch port) and the page fetcher used by ``web_fetch``; shared with the agent."""
