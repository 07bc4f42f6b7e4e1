"""Path resolution and confinement (PATH): the request, the root, links and aliases."""
