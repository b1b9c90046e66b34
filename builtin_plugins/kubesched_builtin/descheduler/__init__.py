"""The descheduler's strategies and its DefaultEvictor, as descheduler plugins."""
