"""Glob, Grep and list_directory (GLOB, GREP, LIST): the walk, gitignore rules, backends."""
