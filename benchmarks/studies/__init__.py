"""One-off studies behind a decision (a default, a prompt, a format): each result file says what it decided."""
