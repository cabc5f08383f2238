"""Knowledge bases, their tags, and model configurations."""
