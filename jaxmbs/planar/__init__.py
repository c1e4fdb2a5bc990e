"""Planar bodies (x, y, theta), particles (x, y) and their joint and force families."""
