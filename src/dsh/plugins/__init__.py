"""Plugins on the core seams, one package each."""
