"""How well memread's strategies answer: the acceptance sweep and the check of its goal."""
