"""Remote workspaces (REMOTE): files reached only through a file service such as ACP's."""
