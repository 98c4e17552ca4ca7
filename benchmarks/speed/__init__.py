"""How fast memread reads and how much memory it holds: the recurring speed measurements."""
