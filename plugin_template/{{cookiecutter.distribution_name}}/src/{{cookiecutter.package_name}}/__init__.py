"""{{ cookiecutter.plugin_name }}: {{ cookiecutter.description.rstrip(".") }}."""

from {{ cookiecutter.package_name }}.plugin import {{ cookiecutter.plugin_name }}{% if cookiecutter.with_args %}, {{ cookiecutter.plugin_name }}Args{% endif %}

__all__ = ["{{ cookiecutter.plugin_name }}"{% if cookiecutter.with_args %}, "{{ cookiecutter.plugin_name }}Args"{% endif %}]
