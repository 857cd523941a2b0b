"""postmortem: incident postmortems and log analysis for machines that serve LLMs."""

__version__ = "0.1.0"
