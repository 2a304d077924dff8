"""Prefect flows, thin over ``pipeline`` and ``queries``."""
